package cli

import (
	"strconv"
	"strings"
	"unicode"
)

// cell makes a value safe for one table cell on a terminal: control
// characters (newline, tab, ESC and the rest of C0/C1, DEL) and invalid
// UTF-8 are shown escaped (\n, \t, \x1b, \u0085 ...), so a process or file
// name can neither break the table nor inject terminal escape sequences.
// JSON output (--json) is never passed through cell.
func cell(s string) string {
	clean := true
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
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
