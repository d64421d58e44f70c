// Package termtext makes untrusted text safe to print on a terminal.
//
// Process names, file paths, tool arguments and anything else that comes
// from outside inquest can hold bytes a terminal acts on: C0 and C1
// control characters (ESC starts escape sequences, CR rewrites the line,
// U+009B is a one-byte CSI), Unicode format characters (category Cf) and
// the bidirectional controls, which reorder what follows so a line can be
// made to read backwards. Escape shows every such character as a visible
// escape (\n, \x1b, \u202e, \U000e0001) and leaves all other text as it
// is. Every table, prompt and view inquest prints to a terminal passes its
// untrusted strings through this package; JSON output is never escaped
// here (encoding/json already escapes C0, and programs read it).
package termtext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unsafe reports whether the terminal would act on r instead of drawing
// it: C0 and C1 controls and DEL (Unicode category Cc), format characters
// (category Cf, which holds the bidi embeddings, overrides and isolates
// U+202A-U+202E and U+2066-U+2069, the marks U+200E, U+200F and U+061C,
// zero-width characters and tag characters), the line and paragraph
// separators U+2028 and U+2029 (categories Zl, Zp), which some terminals
// treat as line breaks, and U+FFFD only when it stands for an invalid byte
// (Escape handles that case; the rune itself is safe).
func Unsafe(r rune) bool {
	if r < 0x20 || r == 0x7f {
		return true
	}
	if r < 0x7f {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x200e || r == 0x200f || r == 0x061c
}

// Escape returns s with every character Unsafe reports shown as a
// visible escape, and every byte that is not valid UTF-8 shown as \xHH:
// \n, \t and \r for those three, \xHH for the other C0 controls and DEL,
// \uHHHH for other unsafe runes of the Basic Multilingual Plane and
// \UHHHHHHHH above it. A backslash is left as it is, so Escape is for
// display only; use EscapeExact where the escaped form must be
// reversible. s is returned unchanged (no allocation) when it holds
// nothing to escape.
func Escape(s string) string { return escape(s, false) }

// EscapeExact is Escape for the exact bytes of a name or path: a
// backslash is shown as \\ too, so the escaped form is unambiguous and
// Unescape returns the original bytes (a literal `\xff` in a name and the
// byte 0xff print differently).
func EscapeExact(s string) string { return escape(s, true) }

func clean(s string, backslash bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return cleanRunes(s[i:], backslash)
		}
		if c < 0x20 || c == 0x7f || (backslash && c == '\\') {
			return false
		}
	}
	return true
}

func cleanRunes(s string, backslash bool) bool {
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			return false
		}
		if Unsafe(r) || (backslash && r == '\\') {
			return false
		}
	}
	return true
}

func escape(s string, backslash bool) string {
	if clean(s, backslash) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case backslash && r == '\\':
			b.WriteString(`\\`)
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteString(`\x`)
			b.WriteString(hex(uint64(s[i]), 2))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex(uint64(r), 2))
		case Unsafe(r) && r > 0xffff:
			b.WriteString(`\U`)
			b.WriteString(hex(uint64(r), 8))
		case Unsafe(r):
			b.WriteString(`\u`)
			b.WriteString(hex(uint64(r), 4))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func hex(v uint64, width int) string {
	h := strconv.FormatUint(v, 16)
	if len(h) < width {
		h = strings.Repeat("0", width-len(h)) + h
	}
	return h
}

// Unescape inverts EscapeExact: \\, \n, \t, \r, \xHH (one byte), \uHHHH
// and \UHHHHHHHH (one UTF-8 encoded rune) give back the exact bytes. ok
// is false for a string EscapeExact cannot produce (a lone or unknown
// escape, short or bad hex digits).
func Unescape(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		i++
		width := 0
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			width = 2
		case 'u':
			width = 4
		case 'U':
			width = 8
		default:
			return "", false
		}
		if width == 0 {
			continue
		}
		if i+1+width > len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+1+width], 16, 32)
		if err != nil {
			return "", false
		}
		if width == 2 {
			b.WriteByte(byte(v))
		} else {
			if v > utf8.MaxRune || !utf8.ValidRune(rune(v)) {
				return "", false
			}
			b.WriteRune(rune(v))
		}
		i += width
	}
	return b.String(), true
}
