package tool

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Paging names the arguments a paged tool takes: the opaque token that
// resumes a listing and the rows-per-page bound. Each toolset has one
// descriptor: CursorPaging for proc and bin, ContinuationPaging for perf.
type Paging struct {
	// Token is the argument that carries the previous page's next_cursor
	// ("cursor" or "continuation").
	Token string
	// Limit is the rows-per-page argument ("limit" or "page_size").
	Limit string
}

// CursorPaging is the proc and bin descriptor: `cursor` and `limit`.
var CursorPaging = &Paging{Token: "cursor", Limit: "limit"}

// ContinuationPaging is the perf descriptor: `continuation` and `page_size`.
var ContinuationPaging = &Paging{Token: "continuation", Limit: "page_size"}

// DefaultResultBytes is the default byte budget of one delivered result
// (the text block and structuredContent together, as an MCP client counts
// them): 64 KiB. A caller raises it through the tool's own limit or page
// size, or for a whole session with `inquest mcp --max-result-bytes`.
const DefaultResultBytes = 64 << 10

// HardResultBytes is the largest result any call delivers (4 MiB, the
// message limit); no option raises a budget above it.
const HardResultBytes = 4 << 20

// BudgetWarning is the warning a page carries when bytes, not rows, ended
// it early.
const BudgetWarning = "the page ended early at the result byte budget, not at the row limit; follow next_action for the rest"

// Page is the one page object every paged data carries as `page`.
// Offset is the logical index of the first row returned (a JSON number);
// Returned is the row count of this page; Size is the effective page size
// (the limit argument or its default); More is whether rows remain after
// this page; Total is the row count of the whole listing when it is known
// (nil when the listing is streamed and not counted).
type Page struct {
	Offset   int64  `json:"offset"`
	Returned int    `json:"returned"`
	Size     int    `json:"size"`
	More     bool   `json:"more"`
	Total    *int64 `json:"total,omitempty"`
}

// PageSchema is the JSON Schema of Page, for output schemas.
const PageSchema = `{"type":"object","required":["offset","returned","size","more"],"properties":{"offset":{"type":"integer","minimum":0},"returned":{"type":"integer","minimum":0},"size":{"type":"integer","minimum":1},"more":{"type":"boolean"},"total":{"type":"integer","minimum":0}}}`

// NextCall is the exact next call of a paged tool: the first call's
// arguments unchanged except the token argument, set to token. It returns
// nil when token is empty (the listing ended). args that do not decode as
// an object are treated as {}.
func (p *Paging) NextCall(tool string, args json.RawMessage, token string) *contract.Action {
	if token == "" {
		return nil
	}
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	if a == nil {
		a = map[string]any{}
	}
	a[p.Token] = token
	return &contract.Action{Tool: tool, Arguments: a}
}

// FitRows returns how many of rows, starting at the first, fit a page of
// at most limit rows whose rows cost at most budget bytes (RowCost each:
// a row's share of the delivered result, JSON escaping of the text block
// included). byBytes reports that the budget, not the limit or the end of
// rows, ended the page. A page always holds at least one row when rows is
// not empty and limit > 0, so a listing always advances; callers whose
// single row exceeds the hard limit report RESULT_TOO_LARGE themselves.
func FitRows(rows []json.RawMessage, limit, budget int) (n int, byBytes bool) {
	size := 0
	for n < len(rows) && n < limit {
		s := RowCost(rows[n])
		if n > 0 && size+s > budget {
			return n, true
		}
		size += s
		n++
	}
	return n, false
}

// RowCost is what one encoded row costs against RowBudget: the result is
// delivered twice, once as structuredContent (the row's bytes) and once
// as the text block, a JSON string in which quotes, backslashes, control
// characters and the HTML-sensitive <, > and & are escaped; RowBudget is
// per copy, so the cost is the mean of the two sizes, plus a separator.
func RowCost(row []byte) int {
	return (2*len(row)+escapeOverhead(row)+1)/2 + 1
}

// DeliveredBytes is the size an MCP client receives for an envelope body:
// the structuredContent (body itself) plus the text block, body encoded
// as a JSON string the way encoding/json writes it (HTML-safe escaping).
func DeliveredBytes(body []byte) int {
	return 2*len(body) + escapeOverhead(body) + 2
}

// asciiOverhead[c] is what encoding/json adds to the ASCII byte c inside
// a string: 1 for " \\ and \b \f \n \r \t (Go 1.22 on writes \b and \f
// short), 5 for other control bytes and for <, >, & (\u00XX), 0 otherwise.
var asciiOverhead = func() (t [utf8.RuneSelf]uint8) {
	for c := 0; c < utf8.RuneSelf; c++ {
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 1
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 5
		}
	}
	return t
}()

// escapeOverhead is how many bytes encoding/json adds when it writes b as
// a JSON string (without the quotes): 1 for \" \\ \b \f \n \r \t, 5 for other
// control bytes and for <, >, & (\u00XX), 5 for U+2028 and U+2029 (3
// bytes each, written as 6), and for invalid UTF-8 \ufffd.
func escapeOverhead(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			n += int(asciiOverhead[c])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte becomes \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}

type budgetKey struct{}

// WithResultBudget returns ctx carrying the delivered-result byte budget
// of this call (the MCP server sets it from --max-result-bytes; values
// above HardResultBytes are clamped to it).
func WithResultBudget(ctx context.Context, bytes int) context.Context {
	if bytes > HardResultBytes {
		bytes = HardResultBytes
	}
	return context.WithValue(ctx, budgetKey{}, bytes)
}

// ResultBudget is the delivered-result byte budget of the call in ctx:
// what WithResultBudget set, else DefaultResultBytes.
func ResultBudget(ctx context.Context) int {
	if b, ok := ctx.Value(budgetKey{}).(int); ok && b > 0 {
		return b
	}
	return DefaultResultBytes
}

// RowBudget is the byte budget for a page's encoded rows within the
// call's result budget: the result is delivered twice (text block and
// structuredContent), and envelopeReserve bytes are kept for the envelope,
// coverage and warnings. It is at least 1 (FitRows always returns one row).
func RowBudget(ctx context.Context) int {
	const envelopeReserve = 4 << 10
	b := ResultBudget(ctx)/2 - envelopeReserve
	if b < 1 {
		b = 1
	}
	return b
}
