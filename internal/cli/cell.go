package cli

import (
	"strconv"

	"github.com/inquest-dev/inquest/internal/sample"
	"strings"
	"unicode"
)

// cell makes a value safe for one table cell on a terminal: control
// characters (newline, tab, ESC and the rest of C0/C1, DEL) and invalid
// UTF-8 are shown escaped (\n, \t, \x1b, \u0085 ...), so a process or file
// name can neither break the table nor inject terminal escape sequences.
// JSON output (--json) is never passed through cell.
func cell(s string) string { return escapeCell(s, false) }

// textCell is cell for the exact bytes of a name or path: a backslash is
// shown as \\ too, so the escaped form is unambiguous and unescapeCell
// returns the exact bytes (a literal `\xff` in a name and the byte 0xff
// print differently).
func textCell(s string) string { return escapeCell(s, true) }

func escapeCell(s string, backslash bool) string {
	clean := true
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || (backslash && r == '\\') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case backslash && r == '\\':
			b.WriteString(`\\`)
		case r == unicode.ReplacementChar:
			if len(s[i:]) > 0 && strings.HasPrefix(s[i:], "\uFFFD") {
				b.WriteRune(r)
			} else {
				b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
			}
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + leftPad(strconv.FormatUint(uint64(r), 16)))
		case unicode.IsControl(r):
			b.WriteString(`\u` + leftPad4(strconv.FormatUint(uint64(r), 16)))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func leftPad(h string) string {
	if len(h) < 2 {
		return "0" + h
	}
	return h
}

func leftPad4(h string) string {
	for len(h) < 4 {
		h = "0" + h
	}
	return h
}

// unescapeCell inverts textCell: \\, \n, \t, \r, \xHH and \uHHHH
// give back the exact bytes (\xHH is one byte, \uHHHH one UTF-8 encoded
// rune). ok is false for a string textCell cannot produce.
func unescapeCell(s string) (string, bool) {
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
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		case 'u':
			if i+4 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", false
			}
			b.WriteRune(rune(v))
			i += 4
		default:
			return "", false
		}
	}
	return b.String(), true
}

// exactText returns the exact bytes of the name or path field key of a
// JSON row: the base64 key_bytes field when present (the display string
// is lossy), else the key string itself; ok is false when the field is
// absent or null.
func exactText(r map[string]any, key string) (string, bool) {
	if b, ok := r[key+"_bytes"].(string); ok {
		if v, err := sample.DecodeBytes(b); err == nil {
			return v, true
		}
	}
	v, ok := r[key].(string)
	return v, ok
}

// textOf is the table cell of the name or path field key of a row: its
// exact bytes escaped by textCell, or "-" when unknown.
func textOf(r map[string]any, key string) string {
	v, ok := exactText(r, key)
	if !ok {
		return "-"
	}
	return textCell(v)
}

// deletedCell renders a row's deleted field: "yes", "no" or "?" (unknown).
func deletedCell(v any) string {
	switch v {
	case true:
		return "yes"
	case false:
		return "no"
	}
	return "?"
}
