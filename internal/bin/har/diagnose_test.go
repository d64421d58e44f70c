package har

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// sha256sum runs the coreutils tool over b (the reference digest).
func sha256sum(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sha256sum", p).Output()
	if err != nil {
		t.Skipf("sha256sum: %v", err)
	}
	return strings.Fields(string(out))[0]
}

// TestBodyDigestNamesItsRepresentation: body_sha256 says whether it is over
// base64-decoded bytes or content.text's UTF-8 bytes, and an undecodable
// text keeps the sha256 and size of its own bytes (sha256sum agrees).
func TestBodyDigestNamesItsRepresentation(t *testing.T) {
	doc := `{"log":{"version":"1.2","entries":[
	{"request":{"method":"GET","url":"https://a.test/t"},"response":{"status":200,"content":{"size":5,"mimeType":"text/plain","text":"héllo"}}},
	{"request":{"method":"GET","url":"https://a.test/b"},"response":{"status":200,"content":{"size":3,"mimeType":"application/octet-stream","text":"AAEC","encoding":"base64"}}},
	{"request":{"method":"GET","url":"https://a.test/u"},"response":{"status":200,"content":{"size":3,"mimeType":"application/octet-stream","text":"!!not base64","encoding":"base64"}}}]}}`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Entries
	if e[0].BodyDigestOf != DigestTextUTF8 || e[0].BodySHA256 != sha256sum(t, []byte("héllo")) {
		t.Errorf("text body: %s %s", e[0].BodyDigestOf, e[0].BodySHA256)
	}
	if e[1].BodyDigestOf != DigestDecodedBase64 || e[1].BodySHA256 != sha256sum(t, []byte{0, 1, 2}) {
		t.Errorf("base64 body: %s %s", e[1].BodyDigestOf, e[1].BodySHA256)
	}
	if e[2].Body != BodyUndecodable || e[2].BodySHA256 != "" || e[2].TextSHA256 != sha256sum(t, []byte("!!not base64")) || e[2].TextSize != "12" {
		t.Errorf("undecodable body: %+v", e[2])
	}
}
