package termtext

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want, exact string }{
		{"sleep", "sleep", "sleep"},
		{"x\ny\t\x1b[31mRED", `x\ny\t\x1b[31mRED`, `x\ny\t\x1b[31mRED`},
		{"caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d"},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{"c1\u0085x\u009b", `c1\u0085x\u009b`, `c1\u0085x\u009b`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"real \uFFFD kept", "real \uFFFD kept", "real \uFFFD kept"},
		{`back\slash`, `back\slash`, `back\\slash`},
		// The name from the reliability report: RLO, ESC, CR, BEL, LRI.
		{"\u202eevil\x1b[31m\r\x07x\u2066", `\u202eevil\x1b[31m\r\x07x\u2066`, `\u202eevil\x1b[31m\r\x07x\u2066`},
		{"a\u202ab\u202bc\u202cd\u202de", `a\u202ab\u202bc\u202cd\u202de`, `a\u202ab\u202bc\u202cd\u202de`},
		{"\u2067\u2068\u2069", `\u2067\u2068\u2069`, `\u2067\u2068\u2069`},
		{"lrm\u200erlm\u200falm\u061c", `lrm\u200erlm\u200falm\u061c`, `lrm\u200erlm\u200falm\u061c`},
		{"zw\u200bsp\u00adhy\ufeff", `zw\u200bsp\u00adhy\ufeff`, `zw\u200bsp\u00adhy\ufeff`},
		{"ls\u2028ps\u2029", `ls\u2028ps\u2029`, `ls\u2028ps\u2029`},
		{"tag\U000e0041", `tag\U000e0041`, `tag\U000e0041`},
		{"\x00", `\x00`, `\x00`},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := EscapeExact(tt.in); got != tt.exact {
			t.Errorf("EscapeExact(%q) = %q, want %q", tt.in, got, tt.exact)
		}
		if back, ok := Unescape(tt.exact); !ok || back != tt.in {
			t.Errorf("Unescape(%q) = %q, %v; want %q", tt.exact, back, ok, tt.in)
		}
	}
}

func TestUnescapeRejects(t *testing.T) {
	for _, s := range []string{`\`, `a\q`, `\x1`, `\xzz`, `\u12`, `\U0011ffff`, `\ud800`, `\U0000d800`} {
		if got, ok := Unescape(s); ok {
			t.Errorf("Unescape(%q) = %q, true; want false", s, got)
		}
	}
}

// TestUnsafeCovers checks Unsafe against the Unicode tables for every
// rune: all of Cc, Cf, Zl, Zp and the bidi controls are unsafe, and
// nothing else is.
func TestUnsafeCovers(t *testing.T) {
	bidi := map[rune]bool{0x061c: true, 0x200e: true, 0x200f: true}
	for r := rune(0x202a); r <= 0x202e; r++ {
		bidi[r] = true
	}
	for r := rune(0x2066); r <= 0x2069; r++ {
		bidi[r] = true
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) || bidi[r]
		if got := Unsafe(r); got != want {
			t.Fatalf("Unsafe(%U) = %v, want %v", r, got, want)
		}
	}
}

func TestEscapeNoAllocWhenClean(t *testing.T) {
	s := "a plain name, caf\u00e9 \u4e2d"
	if n := testing.AllocsPerRun(100, func() { _ = Escape(s) }); n != 0 {
		t.Errorf("Escape of clean text allocates %v times", n)
	}
}

// FuzzEscape: the escaped text holds no unsafe rune and no invalid
// UTF-8, clean text is unchanged, and EscapeExact round-trips through
// Unescape to the exact bytes.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain", "bad\xffbyte", `lit\xff`, "nl\n", "\uFFFD", "\x00\x7f\x80", "\\", "\u202eevil\x1b[31m\r\x07x\u2066", "\U000e0041", "\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Escape(s), EscapeExact(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("escape of %q = %q is not UTF-8", s, out)
			}
			for _, r := range out {
				if Unsafe(r) {
					t.Fatalf("escape of %q = %q holds %U", s, out, r)
				}
			}
		}
		safe := utf8.ValidString(s)
		for _, r := range s {
			if Unsafe(r) {
				safe = false
			}
		}
		if safe && Escape(s) != s {
			t.Fatalf("Escape changed safe text %q to %q", s, Escape(s))
		}
		if back, ok := Unescape(EscapeExact(s)); !ok || back != s {
			t.Fatalf("Unescape(EscapeExact(%q)) = %q, %v", s, back, ok)
		}
	})
}
