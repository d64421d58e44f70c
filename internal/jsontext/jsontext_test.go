package jsontext

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"
)

func utf16le(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

func TestDiagnose(t *testing.T) {
	doc := `{"log":{"entries":[1,2]}}`
	cases := []struct {
		name   string
		in     []byte
		kind   string
		offset int64
		says   string
	}{
		{"valid", []byte(doc), "", 0, ""},
		{"valid after a UTF-8 BOM", append(bytes.Clone(UTF8BOM), doc...), "", 0, ""},
		{"empty", nil, KindEmpty, 0, "is empty (0 bytes)"},
		{"whitespace", []byte(" \n"), KindEmpty, 0, "is empty (2 bytes)"},
		{"UTF-16LE with BOM", append([]byte{0xff, 0xfe}, utf16le(doc)...), KindUTF16, 0, "UTF-16 text (byte-order mark FF FE)"},
		{"UTF-16LE without BOM", utf16le(doc), KindUTF16, 0, "pattern of UTF-16"},
		{"UTF-16BE with BOM", []byte{0xfe, 0xff, 0, '{'}, KindUTF16, 0, "FE FF"},
		{"UTF-32LE with BOM", []byte{0xff, 0xfe, 0, 0, '{', 0, 0, 0}, KindUTF32, 0, "UTF-32"},
		{"truncated", []byte(doc[:15]), KindTruncated, 15, "ends at byte 15"},
		{"truncated after BOM", append(bytes.Clone(UTF8BOM), doc[:15]...), KindTruncated, 18, "ends at byte 18"},
		{"malformed", []byte(`{"log":x}`), KindMalformed, 8, "malformed at byte 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Diagnose(c.in)
			if c.kind == "" {
				if p != nil {
					t.Fatalf("valid text diagnosed %+v", p)
				}
				return
			}
			if p == nil || p.Kind != c.kind || p.Offset != c.offset {
				t.Fatalf("got %+v, want kind %s offset %d", p, c.kind, c.offset)
			}
			if p.Recovery == "" {
				t.Errorf("%s: no recovery", c.kind)
			}
			if msg := p.Message("the file"); !strings.Contains(msg, c.says) || !strings.HasPrefix(msg, "the file ") {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
			// encoding/json agrees the text is not JSON.
			if json.Valid(c.in) {
				t.Errorf("encoding/json accepts what was diagnosed %s", c.kind)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	r := bufio.NewReader(bytes.NewReader(append(bytes.Clone(UTF8BOM), `[1]`...)))
	bom, p := Sniff(r)
	rest, _ := r.Peek(3)
	if !bom || p != nil || string(rest) != "[1]" {
		t.Fatalf("BOM: bom %v problem %v rest %q", bom, p, rest)
	}
	if _, p := Sniff(bufio.NewReader(bytes.NewReader(nil))); p == nil || p.Kind != KindEmpty {
		t.Fatalf("empty: %+v", p)
	}
	if _, p := Sniff(bufio.NewReader(bytes.NewReader(UTF8BOM))); p == nil || p.Kind != KindEmpty || p.Found != "3 bytes" {
		t.Fatalf("BOM only: %+v", p)
	}
	if _, p := Sniff(bufio.NewReader(bytes.NewReader(utf16le("[1]")))); p == nil || p.Kind != KindUTF16 {
		t.Fatalf("UTF-16: %+v", p)
	}
}

// FuzzDiagnose: Diagnose never panics, agrees with json.Valid (after a
// UTF-8 BOM) and places problems inside the text.
func FuzzDiagnose(f *testing.F) {
	for _, s := range []string{`{}`, "\xef\xbb\xbf[1]", "\xff\xfe{\x00}\x00", `{"a":`, `[1,]`, ``, ` `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := Diagnose(b)
		rest, _ := StripBOM(b)
		if (p == nil) != json.Valid(rest) && (p == nil || p.Kind != KindUTF16 && p.Kind != KindUTF32) {
			t.Fatalf("Diagnose %+v but json.Valid %v", p, json.Valid(rest))
		}
		if p != nil && (p.Offset < 0 || p.Offset > int64(len(b))) {
			t.Fatalf("offset %d outside [0, %d]", p.Offset, len(b))
		}
		if p != nil {
			_ = p.Message("x")
		}
		_, _ = Sniff(bufio.NewReader(bytes.NewReader(b)))
	})
}
