package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipString(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		share int
		clip  bool
	}{
		{"short", "main.main", 100, false},
		{"exact", strings.Repeat("a", 10), RowCost([]byte(`"aaaaaaaaaa"`)), false},
		{"ascii", strings.Repeat("a", 5000), 1000, true},
		{"multibyte", strings.Repeat("漢字é", 3000), 1000, true},
		{"escapes", strings.Repeat("<\"\x01", 3000), 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, c := ClipString(tt.s, tt.share)
			if c.Truncated != tt.clip {
				t.Fatalf("truncated %v, want %v", c.Truncated, tt.clip)
			}
			if !tt.clip {
				if got != tt.s || c != (Clip{}) {
					t.Fatalf("whole string changed: %q %+v", got, c)
				}
				return
			}
			sum := sha256.Sum256([]byte(tt.s))
			if !strings.HasPrefix(tt.s, got) || !utf8.ValidString(got) || c.Bytes != len(tt.s) || c.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("clip %d bytes %+v", len(got), c)
			}
			b, _ := json.Marshal(got)
			if RowCost(b) > tt.share {
				t.Fatalf("prefix costs %d > %d", RowCost(b), tt.share)
			}
			// The prefix is the longest: one more rune passes the share.
			_, w := utf8.DecodeRuneInString(tt.s[len(got):])
			b, _ = json.Marshal(tt.s[:len(got)+w])
			if RowCost(b) <= tt.share {
				t.Fatalf("prefix of %d bytes is not the longest", len(got))
			}
		})
	}
}
