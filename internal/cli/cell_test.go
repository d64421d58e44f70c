package cli

import (
	"encoding/json"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/sample"
)

func TestCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sleep", "sleep"},
		{"x\ny\t\x1b[31mRED", `x\ny\t\x1b[31mRED`},
		{"/tmp/evil\n4    file", `/tmp/evil\n4    file`},
		{"caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d"},
		{"bad\xffbyte", `bad\xffbyte`},
		{"c1\u0085x", `c1\u0085x`},
		{"del\x7f", `del\x7f`},
		{"real \uFFFD kept", "real \uFFFD kept"},
	}
	for _, tt := range tests {
		if got := cell(tt.in); got != tt.want {
			t.Errorf("cell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTextCellRoundTrip: names and paths print escaped and unescape to
// their exact bytes; a literal backslash-x and the byte print differently.
func TestTextCellRoundTrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"bad\xffbyte", `bad\xffbyte`},
		{`lit\xffbyte`, `lit\\xffbyte`},
		{"nl\nx\ty\x1b", `nl\nx\ty\x1b`},
		{"real \uFFFD", "real \uFFFD"},
		{"c1\u0085", `c1\u0085`},
	}
	for _, tt := range tests {
		if got := textCell(tt.in); got != tt.want {
			t.Errorf("textCell(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if back, ok := unescapeCell(tt.want); !ok || back != tt.in {
			t.Errorf("unescapeCell(%q) = %q, %v", tt.want, back, ok)
		}
	}
}

// FuzzPathEncodingCLI: every byte string survives the JSON row encoding
// (display + path_bytes), exactText on the CLI side, and the table cell
// (textCell then unescapeCell); the cell holds no control character and
// no byte that is not UTF-8.
func FuzzPathEncodingCLI(f *testing.F) {
	for _, s := range []string{"plain", "bad\xffbyte", `lit\xff`, "nl\n", "\uFFFD", "\x00\x7f\x80", "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		row := map[string]any{}
		sample.TextFields("path", s, func(k string, v any) { row[k] = v })
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got, ok := exactText(back, "path")
		if !ok || got != s {
			t.Fatalf("JSON round trip %q -> %q", s, got)
		}
		c := textCell(got)
		if !utf8.ValidString(c) {
			t.Fatalf("textCell(%q) = %q is not UTF-8", s, c)
		}
		for _, r := range c {
			if unicode.IsControl(r) {
				t.Fatalf("textCell(%q) = %q holds a control character", s, c)
			}
		}
		if u, ok := unescapeCell(c); !ok || u != s {
			t.Fatalf("unescapeCell(textCell(%q)) = %q, %v", s, u, ok)
		}
	})
}
