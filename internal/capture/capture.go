// Package capture holds the proc investigation collectors
// (docs/captures.md): file users (host-wide fd scan), open files, modules,
// network endpoints, threads, scheduling and process metadata. Each
// collector is a pure function over /proc that returns the rows it found
// and collector-specific coverage; it keeps no state, starts nothing and
// changes nothing. Jobs, retention, paging and process_ref encoding live
// in internal/jobs and internal/host.
//
// On Linux, targeted collectors pin the process by opening /proc/PID as a
// directory and reading everything through that descriptor: once the
// process ends, reads through it fail (ESRCH/ENOENT) even when the PID is
// reused, so a capture never mixes in another process's rows. Other
// operating systems return UNSUPPORTED.
package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// Kinds are the start_capture kinds, plus
// process_info, the kind of get_process_info's metadata capture.
const (
	KindFileUsers   = "file_users"
	KindOpenFiles   = "open_files"
	KindModules     = "modules"
	KindNetwork     = "network"
	KindThreads     = "threads"
	KindScheduling  = "scheduling"
	KindProcessInfo = "process_info"
)

// Kinds lists the start_capture kinds in schema order.
var Kinds = []string{KindFileUsers, KindOpenFiles, KindModules, KindNetwork, KindThreads, KindScheduling}

// InfoFields are get_process_info's requestable fields; command_line and
// user are returned only when requested.
var InfoFields = []string{"exe", "cwd", "image", "parent", "start_time", "cgroup", "namespaces", "ns_pid", "container", "command_line", "user"}

// DefaultInfoFields are returned when no fields are requested.
var DefaultInfoFields = InfoFields[:9]

// Field is one named value of a row. Values are JSON-encodable: strings,
// integers, bools, nil, []string or map[string]any.
type Field struct {
	Key   string
	Value any
}

// Row is one capture row: ordered fields plus the selectors read_capture
// filters on before projection.
type Row struct {
	// Path is what the path and extension filters match ("" when the row
	// has no path; such rows never match a path filter).
	Path string
	// Owner is the owning executable name for the owner_name filter
	// (file_users: the base name of /proc/PID/exe when readable, else comm);
	// Comm, when set, is the kernel command name, which owner_name also
	// matches (comm is cut at 15 bytes).
	Owner string
	Comm  string
	// Proc is the owning process identity; Verified says it was confirmed
	// before and after collection, so the host may add a process_ref.
	Proc     sample.Identity
	Verified bool
	Fields   []Field
}

// Get returns the value of field key and whether the row has it.
func (r *Row) Get(key string) (any, bool) {
	for _, f := range r.Fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// AppendJSON appends the row as a JSON object to b, keeping field order.
// With keys non-nil only those fields are written, in the order of keys;
// a projected field the row lacks is written as null (unknown, not absent).
func (r *Row) AppendJSON(b []byte, keys []string) []byte {
	b = append(b, '{')
	first := true
	emit := func(k string, v any) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = appendValue(b, v)
	}
	if keys == nil {
		for _, f := range r.Fields {
			emit(f.Key, f.Value)
		}
	} else {
		for _, k := range keys {
			v, _ := r.Get(k)
			emit(k, v)
		}
	}
	return append(b, '}')
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		enc, _ := json.Marshal(x) // escapes like encoding/json (HTML-safe), valid UTF-8
		return append(b, enc...)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case bool:
		return strconv.AppendBool(b, x)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, enc...)
}

// Capture is one collector's frozen output.
type Capture struct {
	Kind string
	Rows []Row
	// Coverage is collector-specific (docs/captures.md, "Rows and coverage"): file users
	// report processes/fds examined and failed, network the table counts,
	// threads the unavailable-thread count.
	Coverage map[string]any
	// Warnings explain a partial capture; Partial is set with them.
	Warnings []string
	Partial  bool
	// FilteredOut counts rows a collection filter dropped inside the
	// collector (see FileUsersFiltered, OpenFilesFiltered).
	FilteredOut int
	// Started and Finished bound the non-atomic collection.
	Started, Finished time.Time
}

func (c *Capture) warn(msg string) {
	c.Partial = true
	c.Warnings = append(c.Warnings, msg)
}

// MatchPath reports whether path contains every whitespace-separated term
// of query, case-insensitively (the all-term path match; no traversal, no
// regular expressions). Both are exact bytes: case folding lower-cases
// valid UTF-8 and keeps other bytes as they are (sample.FoldBytes), so a
// byte 0xff matches only 0xff. An empty query matches.
func MatchPath(path, query string) bool {
	terms := strings.Fields(query)
	if len(terms) == 0 {
		return true
	}
	if path == "" {
		return false
	}
	lp := sample.FoldBytes(path)
	for _, t := range terms {
		if !strings.Contains(lp, sample.FoldBytes(t)) {
			return false
		}
	}
	return true
}

// HasExtension reports whether the final element of path ends in ext
// (leading dot included), case-insensitively.
func HasExtension(path, ext string) bool {
	if path == "" || ext == "" {
		return false
	}
	base := path
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	return len(base) > len(ext) && sample.EqualFold(base[len(base)-len(ext):], ext)
}

// rowBudgetKey carries a *RowBudget in a collector's context.
type rowBudgetKey struct{}

// RowBudget bounds what a collector keeps: the bytes its rows will encode
// to can never exceed the retained-capture budget, so a collector stops as
// soon as a lower bound of them (the exact bytes of each row's path or
// name and fd text: every encoded row holds them at least once) exceeds
// Limit, instead of building a capture that is refused whole afterwards.
// It is safe for concurrent use (file_users scans processes in parallel).
type RowBudget struct {
	// Limit is the byte budget (the session's whole retained budget).
	Limit int64
	used  atomic.Int64
	rows  atomic.Int64
}

// WithRowBudget returns ctx carrying b for the collector it is passed to.
func WithRowBudget(ctx context.Context, b *RowBudget) context.Context {
	return context.WithValue(ctx, rowBudgetKey{}, b)
}

func rowBudgetOf(ctx context.Context) *RowBudget {
	b, _ := ctx.Value(rowBudgetKey{}).(*RowBudget)
	return b
}

// take counts one kept row costing at least n encoded bytes and reports
// whether the budget still holds (a nil budget always does).
func (b *RowBudget) take(n int) bool {
	if b == nil {
		return true
	}
	b.rows.Add(1)
	return b.used.Add(int64(n)) <= b.Limit
}

// exceeded reports whether the rows counted so far are over the budget.
func (b *RowBudget) exceeded() bool { return b != nil && b.used.Load() > b.Limit }

// OverBudgetError is a collection stopped because its rows could never fit
// the retained budget: Counted is the lower bound of their encoded bytes
// when it stopped (more than Limit), Rows the rows kept until then, Read
// and Total the items (fds, processes) read of those listed (Total -1
// when not known). The capture is never truncated: no rows are kept.
type OverBudgetError struct {
	Kind           string
	Counted, Limit int64
	Rows           int64
	Read, Total    int
}

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("the %s capture needs more than %d bytes (collection stopped after %d of %d items), over the %d-byte retained budget", e.Kind, e.Counted, e.Read, e.Total, e.Limit)
}

func (b *RowBudget) overErr(kind string, read, total int) error {
	return &OverBudgetError{Kind: kind, Counted: b.used.Load(), Limit: b.Limit, Rows: b.rows.Load(), Read: read, Total: total}
}
