package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
)

// InputIdentity is what a continuation binds for one ordered input: its
// content digest (SHA-256 hex), format and producer. Storage paths and
// publication roles are deliberately not part of it, so a live path source
// and the preserved evidence source of the same bytes resume the same token
// (docs/perf.md, "Continuations").
type InputIdentity struct {
	SHA256   string `json:"sha256"`
	Format   string `json:"format"`
	Producer string `json:"producer,omitempty"`
}

// Position is where the next page starts: Row is the logical row index
// (text line, record, event...); State is optional decoder state (a byte
// offset, a line number) that lets the reader seek instead of rescanning.
type Position struct {
	Row   int64           `json:"row"`
	State json.RawMessage `json:"state,omitempty"`
}

// Continuations issues and resumes opaque continuation tokens sealed with
// HMAC-SHA256 (contract.CursorCodec). Tokens contain no credentials and no
// artifact data; they are integrity cursors, not an authentication boundary.
type Continuations struct{ codec *contract.CursorCodec }

// NewContinuations returns a codec keyed by key (a store's Key(), or nil for
// a random process-local key).
func NewContinuations(key []byte) *Continuations {
	return &Continuations{codec: contract.NewCursorCodec(key)}
}

// ContinuationExcluded are the top-level argument names left out of the
// argument binding: sources are bound through their digests instead.
var ContinuationExcluded = []string{"sources", "continuation"}

func inputsHash(inputs []InputIdentity) string {
	b, _ := json.Marshal(inputs)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}

// Issue returns the token for the page starting at pos of tool over inputs
// with arguments args (a JSON object: the exact arguments of the next call;
// "sources" and "continuation" are ignored).
func (c *Continuations) Issue(tool string, inputs []InputIdentity, args json.RawMessage, pos Position) string {
	extra, _ := json.Marshal(pos)
	return c.codec.Encode(contract.Cursor{
		Scope:  tool + "|" + inputsHash(inputs),
		Query:  contract.HashQuery(args, ContinuationExcluded...),
		Offset: pos.Row,
		Extra:  extra,
	})
}

// Reasons of a CURSOR_INVALID from Resume (details.reason), so a toolset
// can restate the error in its own paging terms (cursor and next_action
// instead of continuation and next_page).
const (
	ReasonOtherTool        = "other_tool"        // issued by another tool
	ReasonArgumentsChanged = "arguments_changed" // the other arguments differ
	ReasonMalformed        = "malformed"         // the position does not decode
)

// Resume authenticates token for tool, inputs and args and returns the
// position it encodes. Errors: CURSOR_INVALID for a forged or foreign token,
// another tool, or changed arguments (details.reason, Reason*, except for
// a token that does not authenticate); INPUT_CHANGED when the ordered input
// digests or formats differ from those the token was issued for.
func (c *Continuations) Resume(token, tool string, inputs []InputIdentity, args json.RawMessage) (Position, error) {
	cur, err := c.codec.Decode(token)
	if err != nil {
		return Position{}, err
	}
	t, ih, ok := strings.Cut(cur.Scope, "|")
	if !ok || t != tool {
		return Position{}, contract.Errorf(contract.CodeCursorInvalid, "the continuation was issued by another tool; submit next_action unchanged or start without a continuation").WithDetail("reason", ReasonOtherTool)
	}
	if ih != inputsHash(inputs) {
		return Position{}, contract.Errorf(contract.CodeInputChanged, "an input changed since the continuation was issued (digest or format differs); start a fresh analysis without a continuation")
	}
	if cur.Query != contract.HashQuery(args, ContinuationExcluded...) {
		return Position{}, contract.Errorf(contract.CodeCursorInvalid, "the arguments changed since the continuation was issued; submit next_action.arguments unchanged or start without a continuation").WithDetail("reason", ReasonArgumentsChanged)
	}
	var pos Position
	if err := json.Unmarshal(cur.Extra, &pos); err != nil || pos.Row != cur.Offset || pos.Row < 0 {
		return Position{}, contract.Errorf(contract.CodeCursorInvalid, "the continuation is malformed; start without a continuation").WithDetail("reason", ReasonMalformed)
	}
	return pos, nil
}
