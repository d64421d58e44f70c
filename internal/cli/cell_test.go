package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/termtext"
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

// TestPrintPendingEscapesBidi: a pending confirmation whose action names a
// process `\u202eevil\x1b[31m\r\x07x\u2066` prints with the bidi override,
// the isolate and the C0 controls escaped, so the prompt cannot be made to
// read backwards or recolour the terminal.
func TestPrintPendingEscapesBidi(t *testing.T) {
	name := "\u202eevil\x1b[31m\r\x07x\u2066"
	res := &contract.Result{Data: map[string]any{"operations": []any{map[string]any{
		"operation_id": "op-\u202e1",
		"tool":         "update_tracking",
		"confirmation": map[string]any{
			"expires_at": "2026-12-01T22:00:00Z",
			"action":     map[string]any{"track": []any{map[string]any{"name": name}}},
		},
	}}}}
	var b strings.Builder
	if err := printPending(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, r := range out {
		if r != '\n' && termtext.Unsafe(r) {
			t.Fatalf("printPending output holds %U:\n%s", r, strconv.QuoteToASCII(out))
		}
	}
	for _, want := range []string{`op-\u202e1`, `\u202eevil`, `\u2066`} {
		if !strings.Contains(out, want) {
			t.Errorf("printPending output lacks %s:\n%s", want, strconv.QuoteToASCII(out))
		}
	}
}
