package contract

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// MaxCursorLen bounds an encoded cursor; longer input is CURSOR_INVALID
// before any decoding work.
const MaxCursorLen = 4096

// Cursor is the decoded position of a paged query. Scope names the frozen
// object the pages come from (a capture id, an input digest set); Query is
// the hash of every query argument except the cursor itself (HashQuery);
// Offset is the index of the next row; Extra carries codec-user state.
type Cursor struct {
	Version int             `json:"v"`
	Scope   string          `json:"s"`
	Query   string          `json:"q"`
	Offset  int64           `json:"o"`
	Extra   json.RawMessage `json:"x,omitempty"`
}

// CursorCodec seals cursors with HMAC-SHA256 so clients cannot forge or edit
// them. A codec with a random key (NewCursorCodec(nil)) binds cursors to one
// backend instance; a persisted key lets stateless continuations survive
// restarts.
type CursorCodec struct{ key []byte }

// NewCursorCodec returns a codec keyed by key, or by 32 random bytes when key
// is empty.
func NewCursorCodec(key []byte) *CursorCodec {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			panic("contract: no entropy for cursor key: " + err.Error())
		}
	}
	return &CursorCodec{key: append([]byte(nil), key...)}
}

func (c *CursorCodec) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// Encode returns the opaque token for cur: base64url(JSON) "." base64url(MAC).
func (c *CursorCodec) Encode(cur Cursor) string {
	cur.Version = 1
	payload, _ := json.Marshal(cur)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(c.mac(payload))
}

// Decode parses and authenticates token. Any malformed, forged or foreign
// token yields a CURSOR_INVALID *Error; the token is never echoed.
func (c *CursorCodec) Decode(token string) (Cursor, error) {
	bad := func() (Cursor, error) {
		return Cursor{}, Errorf(CodeCursorInvalid, "the cursor is malformed or was not issued by this backend; restart the query without a cursor")
	}
	if token == "" || len(token) > MaxCursorLen {
		return bad()
	}
	p, s, ok := strings.Cut(token, ".")
	if !ok {
		return bad()
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return bad()
	}
	sig, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !hmac.Equal(sig, c.mac(payload)) {
		return bad()
	}
	var cur Cursor
	if err := json.Unmarshal(payload, &cur); err != nil || cur.Version != 1 || cur.Offset < 0 {
		return bad()
	}
	return cur, nil
}

// Resume decodes token and checks that it belongs to scope and to the same
// query hash. A mismatch is CURSOR_INVALID: the query changed since the
// cursor was issued, or the cursor belongs to another capture.
func (c *CursorCodec) Resume(token, scope, query string) (Cursor, error) {
	cur, err := c.Decode(token)
	if err != nil {
		return cur, err
	}
	if cur.Scope != scope {
		return Cursor{}, Errorf(CodeCursorInvalid, "the cursor belongs to another capture or input; restart the query without a cursor")
	}
	if cur.Query != query {
		return Cursor{}, Errorf(CodeCursorInvalid, "the query arguments changed since the cursor was issued; repeat them unchanged or restart without a cursor")
	}
	return cur, nil
}

// HashQuery hashes the canonical JSON of args with the named top-level keys
// removed (normally "cursor"). args must be a JSON object (raw or a map);
// encoding/json sorts map keys, which makes the hash canonical.
func HashQuery(args json.RawMessage, exclude ...string) string {
	var m map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &m); err != nil {
			m = nil
		}
	}
	for _, k := range exclude {
		delete(m, k)
	}
	b, _ := json.Marshal(m)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
