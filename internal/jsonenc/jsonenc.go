// Package jsonenc appends JSON values exactly as encoding/json's Marshal
// writes them, for hot paths that encode a known shape without
// reflection (the proc host's listing rows): strings with Marshal's
// HTML-safe escaping (", \, control characters, <, >, &, U+2028, U+2029,
// and each byte that is not valid UTF-8 as \ufffd) and float64 values in
// Marshal's format (shortest representation; exponent form below 1e-6 and
// from 1e21 on). Its tests compare every function with encoding/json.
package jsonenc

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// safe[c] is true for an ASCII byte that Marshal writes as itself inside a
// string: printable ASCII and DEL, except ", \, <, > and &.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// String appends s as a JSON string (with its quotes) to dst, as
// encoding/json.Marshal(s) writes it.
func String(dst []byte, s string) []byte {
	// Bytes only reads its argument: the string's bytes are not copied.
	return Bytes(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Bytes appends s, text that may hold bytes that are not valid UTF-8, as
// a JSON string (with its quotes) to dst, as encoding/json.Marshal writes
// string(s). s is only read.
func Bytes(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				for i < len(s) && s[i] < utf8.RuneSelf && safe[s[i]] {
					i++
				}
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// other control bytes and the HTML-sensitive <, >, &
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Float appends f as encoding/json.Marshal(f) writes it. f must be finite
// (Marshal refuses NaN and infinities; so must the caller).
func Float(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as Marshal writes it
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// Key appends "key": (a quoted object key and its colon), after a comma
// unless dst ends an object or array opening.
func Key(dst []byte, key string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	dst = String(dst, key)
	return append(dst, ':')
}
