package capture

import (
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// Filter selects capture rows by the read_capture selectors
// (docs/captures.md, "Selectors per kind"): Path (all-term, case-insensitive substring match on the row
// path), Extension (file-name extension including the leading dot) and
// OwnerName (exact case-insensitive owner executable name, also matching
// the kernel command name). The zero Filter matches every row.
//
// The same Filter is the start_capture collection filter: rows that do not
// match are never kept (nor encoded or charged to the retained budget), so
// a process whose complete capture would exceed the budget can still be
// inspected for the paths that matter. This narrows the query; it is not a
// truncation, and the capture's coverage names the filter.
//
// PathBytes is the path selector for a query that is not valid UTF-8 (a
// JSON string cannot carry such bytes): standard base64 of the query
// bytes, with Path's all-term semantics; with both set, a row must match
// both. Matching compares exact bytes (sample.FoldBytes): a path holding
// byte 0xff is matched by a query holding 0xff, never by U+FFFD.
type Filter struct {
	Path      string `json:"path,omitempty"`
	PathBytes string `json:"path_bytes,omitempty"`
	Extension string `json:"extension,omitempty"`
	OwnerName string `json:"owner_name,omitempty"`
}

// IsZero reports a filter that matches every row.
func (f Filter) IsZero() bool {
	return f.Path == "" && f.PathBytes == "" && f.Extension == "" && f.OwnerName == ""
}

// pathBytes returns the decoded PathBytes query ("" when unset or not
// base64; Validate rejects the latter).
func (f Filter) pathBytes() string {
	if f.PathBytes == "" {
		return ""
	}
	q, err := sample.DecodeBytes(f.PathBytes)
	if err != nil {
		return ""
	}
	return q
}

// Match reports whether r passes every set selector. A row without a path
// never matches a path or extension selector; a row without an owner never
// matches an owner selector (no owner is inferred from a path).
func (f Filter) Match(r *Row) bool {
	if f.Path != "" && !MatchPath(r.Path, f.Path) {
		return false
	}
	if f.PathBytes != "" && !MatchPath(r.Path, f.pathBytes()) {
		return false
	}
	if f.Extension != "" && !HasExtension(r.Path, f.Extension) {
		return false
	}
	if f.OwnerName != "" && !f.MatchOwner(r.Owner, r.Comm) {
		return false
	}
	return true
}

// MatchOwner reports whether the owner selector matches owner (executable
// name) or comm (kernel command name); an unset selector matches.
func (f Filter) MatchOwner(owner, comm string) bool {
	if f.OwnerName == "" {
		return true
	}
	return (owner != "" && sample.EqualFold(owner, f.OwnerName)) || (comm != "" && sample.EqualFold(comm, f.OwnerName))
}

// pathKinds are the kinds whose rows carry a path (path and extension
// selectors apply); ownerKinds those whose rows carry an owner name.
var (
	pathKinds  = map[string]bool{KindFileUsers: true, KindOpenFiles: true, KindModules: true, KindNetwork: true}
	ownerKinds = map[string]bool{KindFileUsers: true, KindNetwork: true, KindThreads: true, KindScheduling: true, KindProcessInfo: true}
)

// Validate checks f against the rows of kind: a path selector must hold at
// least one non-space term (an all-space path would match every row), and
// path/extension apply only to kinds whose rows have a path (file_users,
// open_files, modules, network unix sockets), owner_name only to kinds
// whose rows have an owner (the start_capture kinds file_users, network,
// threads and scheduling; and process_info, the kind of a get_process_info
// result, which takes no filter itself but can be read with read_capture
// selectors). Errors are INVALID_ARGUMENT with field set to prefix plus
// the selector name (e.g. "/filter/path").
func (f Filter) Validate(kind, prefix string) error {
	bad := func(name, format string, args ...any) error {
		e := contract.Errorf(contract.CodeInvalidArgument, format, args...)
		e.Field = prefix + "/" + name
		return e
	}
	if f.Path != "" && strings.TrimSpace(f.Path) == "" {
		return bad("path", "path must contain at least one non-space term")
	}
	if f.PathBytes != "" {
		q, err := sample.DecodeBytes(f.PathBytes)
		if err != nil {
			return bad("path_bytes", "path_bytes must be standard padded base64 of the query bytes")
		}
		if len(strings.Fields(q)) == 0 {
			return bad("path_bytes", "path_bytes must decode to at least one non-space term")
		}
	}
	if (f.Path != "" || f.PathBytes != "" || f.Extension != "") && !pathKinds[kind] {
		name := "path"
		switch {
		case f.Path != "":
		case f.PathBytes != "":
			name = "path_bytes"
		default:
			name = "extension"
		}
		return bad(name, "%s rows have no path; path and extension apply to file_users, open_files, modules and network", kind)
	}
	if f.OwnerName != "" && strings.TrimSpace(f.OwnerName) == "" {
		return bad("owner_name", "owner_name must not be blank")
	}
	if f.OwnerName != "" && !ownerKinds[kind] {
		return bad("owner_name", "%s rows have no owner; owner_name applies to file_users, network, threads and scheduling captures, and to get_process_info results read with read_capture", kind)
	}
	return nil
}

// FilterTerms lists the selector names that can narrow a capture of kind.
func FilterTerms(kind string) []string {
	var out []string
	if pathKinds[kind] {
		out = append(out, "path", "extension")
	}
	if ownerKinds[kind] {
		out = append(out, "owner_name")
	}
	return out
}

// Missing is what a projection writes for field key when a row of kind
// lacks it: process_info fields that were not collected are
// {"unavailable": "not_requested"} (keeping their {value}|{unavailable}
// shape); anything else is null (unknown).
func Missing(kind, key string) any {
	if kind == KindProcessInfo {
		for _, f := range InfoFields {
			if f == key {
				return map[string]any{"unavailable": "not_requested"}
			}
		}
	}
	return nil
}
