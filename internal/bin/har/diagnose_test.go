package har

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestDecodeDiagnosticsKeepTheCause: a HAR that is not readable says what
// was found (empty, UTF-16, truncated at byte N, JSON of another shape)
// instead of one generic message; a UTF-8 byte-order mark is skipped.
func TestDecodeDiagnosticsKeepTheCause(t *testing.T) {
	p := write(t, t.TempDir(), "a.har", []fx{{method: "GET", url: "https://example.test/", typ: "document", mime: "text/html", body: "hi", status: 200}})
	doc, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var u16 []byte
	u16 = append(u16, 0xff, 0xfe)
	for _, c := range utf16.Encode([]rune(string(doc))) {
		u16 = append(u16, byte(c), byte(c>>8))
	}
	if c, err := Parse(append([]byte("\xef\xbb\xbf"), doc...)); err != nil || len(c.Entries) != 1 {
		t.Fatalf("HAR with a UTF-8 BOM: %v", err)
	}
	cut := len(doc) / 2
	for _, c := range []struct {
		name string
		in   []byte
		says string
	}{
		{"empty", nil, "is empty (0 bytes)"},
		{"UTF-16", u16, "is UTF-16 text (byte-order mark FF FE)"},
		{"truncated", doc[:cut], "truncated: it ends at byte " + strconv.Itoa(cut)},
		{"other JSON", []byte(`[1,2]`), "JSON but not a HAR document"},
		{"malformed", []byte(`{"log": nope}`), "malformed at byte 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseContext(context.Background(), c.in)
			e := contract.AsError(err)
			if err == nil || e.Code != contract.CodeDecodeFailed || !strings.Contains(e.Message, c.says) {
				t.Fatalf("got %v, want DECODE_FAILED saying %q", err, c.says)
			}
		})
	}
}
