package perf

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// maxJSONDepth bounds the nesting of arrays and objects in every JSON
// document, JSONL record and trace the perf decoders read: deeper input is
// LIMIT_EXCEEDED before it is decoded, so no result ever holds a value
// nested too deep to encode.
const maxJSONDepth = 512

// maxValueBytes bounds one decoded value held for a row: a JSON string
// (its encoded bytes), a CSV record, a text line (maxLine). Larger values
// are LIMIT_EXCEEDED naming the limit.
const maxValueBytes = maxLine

// hardPageBytes bounds the encoded JSON bytes of one page's rows whatever
// the call's result budget: the whole response (the result inline as text
// and again as structuredContent) stays within tool.HardResultBytes. A
// single row larger than it is RESULT_TOO_LARGE.
const hardPageBytes = 1800 << 10

// jsonGuard wraps the byte stream of a JSON decoder and fails it with a
// typed LIMIT_EXCEEDED as soon as the bytes read nest deeper than
// maxJSONDepth, hold a string longer than maxString bytes, or hold one
// value below elemDepth longer than maxElem bytes. Because decoders read
// ahead, a limit can be reported for bytes just beyond the current page.
type jsonGuard struct {
	r         io.Reader
	maxString int64
	maxElem   int64
	elemDepth int
	what      string // "the JSON document", "the Chrome trace", "JSONL line 3"

	off     int64
	depth   int
	inStr   bool
	esc     bool
	strLen  int64
	litLen  int64 // bytes of the current number/literal outside strings
	elemLen int64
	err     *contract.Error
}

func newJSONGuard(r io.Reader, what string, maxElem int64, elemDepth int) *jsonGuard {
	return &jsonGuard{r: r, what: what, maxString: maxValueBytes, maxElem: maxElem, elemDepth: elemDepth}
}

// Read implements io.Reader.
func (g *jsonGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	if k := g.scan(p[:n]); k < n {
		return k, g.err
	}
	return n, err
}

// scan checks b and returns how many bytes passed (len(b) unless a limit
// was hit, then g.err is set).
func (g *jsonGuard) scan(b []byte) int {
	for i, c := range b {
		g.off++
		if g.inStr {
			g.strLen++
			switch {
			case g.esc:
				g.esc = false
			case c == '\\':
				g.esc = true
			case c == '"':
				g.inStr = false
			}
			if g.strLen > g.maxString {
				g.err = contract.Errorf(contract.CodeLimitExceeded, "%s holds a string longer than the per-value limit of %d bytes (near byte %d)", g.what, g.maxString, g.off).WithDetail("limit_bytes", g.maxString).WithDetail("byte", g.off)
				return i
			}
		} else {
			switch c {
			case '"':
				g.inStr, g.strLen = true, 0
			case '[', '{':
				g.depth++
				if g.depth > maxJSONDepth {
					g.err = contract.Errorf(contract.CodeLimitExceeded, "%s nests arrays/objects deeper than the depth limit of %d levels (near byte %d)", g.what, maxJSONDepth, g.off).WithDetail("depth_limit", maxJSONDepth).WithDetail("byte", g.off)
					return i
				}
			case ']', '}':
				g.depth--
			}
			switch c {
			case '[', ']', '{', '}', ',', ':', '"', ' ', '\t', '\r', '\n':
				g.litLen = 0
			default:
				g.litLen++
				if g.litLen > g.maxString {
					g.err = contract.Errorf(contract.CodeLimitExceeded, "%s holds a number or literal longer than the per-value limit of %d bytes (near byte %d)", g.what, g.maxString, g.off).WithDetail("limit_bytes", g.maxString).WithDetail("byte", g.off)
					return i
				}
			}
		}
		if g.maxElem > 0 {
			if g.depth > g.elemDepth || (g.inStr && g.depth >= g.elemDepth) {
				g.elemLen++
				if g.elemLen > g.maxElem {
					g.err = contract.Errorf(contract.CodeLimitExceeded, "%s holds one value longer than %d bytes (limits.max_memory_bytes) near byte %d", g.what, g.maxElem, g.off).WithDetail("limit_bytes", g.maxElem).WithDetail("byte", g.off)
					return i
				}
			} else {
				g.elemLen = 0
			}
		}
	}
	return len(b)
}

// checkJSONBytes applies the guard's depth and string limits to one
// in-memory JSON text (a JSONL record).
func checkJSONBytes(b []byte, what string) error {
	g := newJSONGuard(nil, what, 0, 0)
	if g.scan(b); g.err != nil {
		return g.err
	}
	return nil
}

// guardErr returns the guard's typed error when err came from it.
func guardErr(g *jsonGuard, err error) error {
	if g != nil && g.err != nil {
		return g.err
	}
	var ce *contract.Error
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

// rowCost is a row's cost against the page's row budget (tool.RowCost:
// its share of the delivered result, escaping included), or
// RESULT_TOO_LARGE when the row cannot be encoded as JSON.
func rowCost(row any) (int64, error) {
	b, err := json.Marshal(row)
	if err != nil {
		return 0, contract.Errorf(contract.CodeResultTooLarge, "a row cannot be encoded as JSON")
	}
	return int64(tool.RowCost(b)), nil
}
