package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printBody prints the JSON text body (an envelope from contract.Marshal)
// exactly as decoding it into an `any` and printJSON would: object members
// sorted by name (a repeated name keeps its last value), two-space
// indentation, numbers as encoding/json writes a float64, strings as it
// escapes them (HTML characters included), and a final newline. It does so
// in one pass over the text, without building the decoded tree. Text it
// does not rewrite byte for byte that way (not valid JSON, a number a
// float64 cannot hold, nesting deeper than maxSortedDepth) is printed
// through the decoded tree as before.
func printBody(w io.Writer, body []byte) error {
	r := sortedIndenter{src: body}
	out, ok := r.document()
	if !ok {
		var v any
		_ = json.Unmarshal(body, &v)
		return printJSON(w, v)
	}
	_, err := w.Write(append(out, '\n'))
	return err
}

// maxSortedDepth bounds the nesting printBody rewrites itself (an
// envelope nests a few levels); deeper text is left to the decoder.
const maxSortedDepth = 200

// sortedIndenter rewrites one JSON text (printBody). pos is the read
// position in src; out the text written so far.
type sortedIndenter struct {
	src []byte
	pos int
	out []byte
}

// document rewrites the whole of src: one value between optional
// whitespace. ok is false when src is not such a text or holds something
// printBody leaves to the decoder.
func (r *sortedIndenter) document() ([]byte, bool) {
	if !json.Valid(r.src) {
		return nil, false
	}
	r.out = make([]byte, 0, len(r.src)+len(r.src)/2)
	if !r.value(0) {
		return nil, false
	}
	r.space()
	return r.out, r.pos == len(r.src)
}

func (r *sortedIndenter) space() {
	for r.pos < len(r.src) {
		switch r.src[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

func (r *sortedIndenter) newline(depth int) {
	r.out = append(r.out, '\n')
	for i := 0; i < depth; i++ {
		r.out = append(r.out, ' ', ' ')
	}
}

// value rewrites the value at pos (src is valid JSON, so every token is
// well formed) at nesting depth.
func (r *sortedIndenter) value(depth int) bool {
	r.space()
	if depth > maxSortedDepth {
		return false
	}
	switch c := r.src[r.pos]; {
	case c == '{':
		return r.object(depth)
	case c == '[':
		return r.array(depth)
	case c == '"':
		tok := r.stringToken()
		return r.appendString(tok)
	case c == 't':
		r.pos += 4
		r.out = append(r.out, "true"...)
	case c == 'f':
		r.pos += 5
		r.out = append(r.out, "false"...)
	case c == 'n':
		r.pos += 4
		r.out = append(r.out, "null"...)
	default:
		return r.number()
	}
	return true
}

// stringToken returns the quoted string token at pos and moves past it.
func (r *sortedIndenter) stringToken() []byte {
	start := r.pos
	i := r.pos + 1
	for {
		c := r.src[i]
		if c == '\\' {
			i += 2
			continue
		}
		i++
		if c == '"' {
			break
		}
	}
	r.pos = i
	return r.src[start:i]
}

// plainString reports whether the quoted token tok is already written as
// encoding/json writes its value: printable ASCII without a backslash or
// an HTML character.
func plainString(tok []byte) bool {
	for _, c := range tok[1 : len(tok)-1] {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendString writes the string token tok as encoding/json writes its
// decoded value.
func (r *sortedIndenter) appendString(tok []byte) bool {
	if plainString(tok) {
		r.out = append(r.out, tok...)
		return true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return false
	}
	b, err := json.Marshal(s)
	if err != nil {
		return false
	}
	r.out = append(r.out, b...)
	return true
}

// number writes the number at pos as encoding/json writes the float64 it
// decodes to.
func (r *sortedIndenter) number() bool {
	start := r.pos
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			r.pos++
			continue
		}
		break
	}
	tok := r.src[start:r.pos]
	// A plain integer of at most 15 digits is exact in a float64 and
	// written back with the same digits.
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 0 && len(digits) <= 15 && !bytes.ContainsFunc(digits, func(c rune) bool { return c < '0' || c > '9' }) {
		r.out = append(r.out, tok...)
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	r.out = appendFloat64(r.out, f)
	return true
}

// appendFloat64 is encoding/json's encoding of a float64 (its
// floatEncoder): the shortest decimal, in exponent form below 1e-6 and
// from 1e21 on, with a two-digit negative exponent shortened (e-07 to e-7).
func appendFloat64(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// member is one object member: its decoded name, the name as written,
// and its value as rewritten, out[from:to] (a value's rewrite depends on
// its depth only, so it can be moved).
type member struct {
	name     string
	tok      []byte
	from, to int
}

// object rewrites each member's value in turn after the text written so
// far, then moves the rewritten values into name order.
func (r *sortedIndenter) object(depth int) bool {
	r.pos++ // {
	base := len(r.out)
	var ms []member
	sorted := true
	for {
		r.space()
		if r.src[r.pos] == '}' {
			r.pos++
			break
		}
		tok := r.stringToken()
		name := string(tok[1 : len(tok)-1])
		if !plainString(tok) {
			if json.Unmarshal(tok, &name) != nil {
				return false
			}
		}
		r.space()
		r.pos++ // :
		from := len(r.out)
		if !r.value(depth + 1) {
			return false
		}
		if len(ms) > 0 && ms[len(ms)-1].name >= name {
			sorted = false
		}
		ms = append(ms, member{name: name, tok: tok, from: from, to: len(r.out)})
		r.space()
		if r.src[r.pos] == ',' {
			r.pos++
		}
	}
	if len(ms) == 0 {
		r.out = append(r.out, '{', '}')
		return true
	}
	if !sorted {
		// Sorted by name; of equal names the last one written wins, as
		// when decoding into a map.
		slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
		kept := ms[:0]
		for i, m := range ms {
			if i+1 < len(ms) && ms[i+1].name == m.name {
				continue
			}
			kept = append(kept, m)
		}
		ms = kept
	}
	values := append([]byte(nil), r.out[base:]...)
	r.out = append(r.out[:base], '{')
	for i, m := range ms {
		if i > 0 {
			r.out = append(r.out, ',')
		}
		r.newline(depth + 1)
		if !r.appendString(m.tok) {
			return false
		}
		r.out = append(r.out, ':', ' ')
		r.out = append(r.out, values[m.from-base:m.to-base]...)
	}
	r.newline(depth)
	r.out = append(r.out, '}')
	return true
}

func (r *sortedIndenter) array(depth int) bool {
	r.pos++ // [
	r.space()
	if r.src[r.pos] == ']' {
		r.pos++
		r.out = append(r.out, '[', ']')
		return true
	}
	r.out = append(r.out, '[')
	for first := true; ; first = false {
		if !first {
			r.out = append(r.out, ',')
		}
		r.newline(depth + 1)
		if !r.value(depth + 1) {
			return false
		}
		r.space()
		if r.src[r.pos] == ',' {
			r.pos++
			continue
		}
		r.pos++ // ]
		break
	}
	r.newline(depth)
	r.out = append(r.out, ']')
	return true
}
