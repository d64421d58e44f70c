package bin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
)

// unknownAnswer is the answer to a lookup (a symbol by name, a section by
// name, an address) whose deciding structure was unresolved: the symbol
// tables or the section table were not read completely, or the bytes lie
// past the end of the file. It is not the caller's mistake: the tool
// answers with no rows, status partial, the reason as a warning and the
// unresolved structures, never INVALID_ARGUMENT.
type unknownAnswer struct {
	// Field is the argument whose lookup is unknown ("/symbol").
	Field string
	// Reason says what was not read and why that leaves the answer unknown.
	Reason     string
	Unresolved []Unresolved
}

func (u *unknownAnswer) Error() string { return u.Reason }

// asUnknown returns err's unknownAnswer, or nil.
func asUnknown(err error) *unknownAnswer {
	var u *unknownAnswer
	if errors.As(err, &u) {
		return u
	}
	return nil
}

// answer makes c's result the partial answer of an unknown lookup on
// file f: no rows, the unresolved structures, coverage.upstream naming the
// lookup, and Reason as a limitation (status partial).
func (u *unknownAnswer) answer(c *invocation, f *File) {
	id := f.Identity()
	c.data = &paged{File: &id, Unresolved: u.Unresolved, Coverage: pageCoverage{Upstream: map[string]string{u.Field: "unknown: " + u.Reason}}}
	c.total = nil
	c.limitation(u.Reason + "; the answer is unknown, not absent")
	c.page("", 0, encodeRows(sliceRows([]struct{}{})))
}

// sectionsUnknown returns an unknownAnswer for field when the section table
// was not read completely (a name missing from it is then unknown), or nil.
func sectionsUnknown(in *Inspection, field, what string) *unknownAnswer {
	st := in.Facets["sections"]
	if st.State == FacetComplete || st.State == FacetNotApplicable || st.State == FacetPartial && in.Admitted {
		// Partial ELF/PE sections have every header and name; only some
		// contents are missing. A format without sections (a DOS
		// executable) has decided there are none.
		return nil
	}
	reason := fmt.Sprintf("the section table is %s", orUnknown(st.State))
	if st.Reason != "" {
		reason += " (" + st.Reason + ")"
	}
	return &unknownAnswer{Field: field, Reason: reason + ": whether " + what + " exists is unknown", Unresolved: in.Unresolved}
}

// contentsUnknown returns an unknownAnswer for a section whose file bytes
// lie (partly) past the end of the file.
func contentsUnknown(in *Inspection, s *Section, field string) *unknownAnswer {
	var un []Unresolved
	for _, u := range in.Unresolved {
		if u.Structure == "section "+s.Name+" contents" || u.Structure == "section "+s.Name+" raw data" {
			un = append(un, u)
		}
	}
	return &unknownAnswer{Field: field, Reason: fmt.Sprintf("section %s (file offset %s, %s bytes) extends past the end of the file: its bytes are not available", s.Name, s.Offset, s.FileSize), Unresolved: un}
}

func orUnknown(s string) string {
	if s == "" {
		return FacetUnresolved
	}
	return s
}

// withInputIdentity adds the identity of the input file f (named by the
// argument field) to a DECODE_FAILED error: the read completed, so the
// bytes are identified even though they did not decode. details.input is
// {field, size_bytes, sha256, digest_of: "file_bytes"}, and the error's
// field is field (the argument naming the file that did not decode) unless
// the decoder named a more precise one. Other errors are returned as they
// are.
func withInputIdentity(err error, f *File, field string) error {
	if err == nil || contract.CodeOf(err) != contract.CodeDecodeFailed {
		return err
	}
	e := contract.AsError(err)
	if e.Field == "" {
		e.Field = field
	}
	return e.WithDetail("input", map[string]any{"field": field, "size_bytes": decU(uint64(len(f.Data))), "sha256": f.SHA256(), "digest_of": "file_bytes"})
}

// UnknownCodeError is the error a person's disassembly request ends with
// when the code it names could not be located, as objdump exits 1 on a
// truncated file: DECODE_FAILED, with Field the argument whose lookup is
// unknown ("/section", "/symbol", "/start"), the message the reason and
// each unresolved structure ("section header table at offset 33680 (1984
// bytes): ... extends past the end of the file"). upstream maps the argument to
// its reason as coverage.upstream carries it ("unknown: ..."); nil when
// it is empty (the code was located).
func UnknownCodeError(upstream map[string]string, un []Unresolved) *contract.Error {
	if len(upstream) == 0 {
		return nil
	}
	field := ""
	for f := range upstream {
		if field == "" || f < field {
			field = f
		}
	}
	msg := "the code to disassemble was not located: " + strings.TrimPrefix(upstream[field], "unknown: ")
	for _, u := range un {
		msg += fmt.Sprintf("; %s at offset %s", u.Structure, u.Offset)
		if u.Size != "" {
			msg += " (" + u.Size + " bytes)"
		}
		msg += ": " + u.Reason
	}
	e := contract.Errorf(contract.CodeDecodeFailed, "%s", msg)
	e.Field = field
	return e
}
