package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// printBody prints the JSON text body (an envelope from contract.Marshal)
// exactly as decoding it into an `any` and printJSON would: object members
// sorted by name (a repeated name keeps its last value), two-space
// indentation, numbers as encoding/json writes a float64, strings as it
// escapes them (HTML characters included), and a final newline. It does so
// in one pass over the text, checking its grammar as it goes, without
// building the decoded tree. Text it does not rewrite that way (not valid
// JSON, a number a float64 cannot hold, nesting deeper than
// maxSortedDepth) is printed through the decoded tree as before.
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
	// members and scratch are object's working storage.
	members []member
	scratch []byte
}

// document rewrites the whole of src: one value between optional
// whitespace. ok is false when src is not such a text or holds something
// printBody leaves to the decoder.
func (r *sortedIndenter) document() ([]byte, bool) {
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

// peek returns the byte at pos, or 0 at the end of src.
func (r *sortedIndenter) peek() byte {
	if r.pos < len(r.src) {
		return r.src[r.pos]
	}
	return 0
}

// value rewrites the value at pos at nesting depth; false when it is not
// a JSON value.
func (r *sortedIndenter) value(depth int) bool {
	r.space()
	if depth > maxSortedDepth {
		return false
	}
	switch c := r.peek(); {
	case c == '{':
		return r.object(depth)
	case c == '[':
		return r.array(depth)
	case c == '"':
		tok, ok := r.stringToken()
		return ok && r.appendString(tok)
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	default:
		return r.number()
	}
}

// literal writes lit when src holds it at pos.
func (r *sortedIndenter) literal(lit string) bool {
	if !bytes.HasPrefix(r.src[r.pos:], []byte(lit)) {
		return false
	}
	r.pos += len(lit)
	r.out = append(r.out, lit...)
	return true
}

// stringToken returns the quoted string token at pos and moves past it;
// ok is false when it is not a JSON string (unterminated, a raw control
// character, an unknown escape, \u without four hex digits).
func (r *sortedIndenter) stringToken() (tok []byte, ok bool) {
	start := r.pos
	i := r.pos + 1
	for {
		if i >= len(r.src) {
			return nil, false
		}
		c := r.src[i]
		switch {
		case c == '"':
			r.pos = i + 1
			return r.src[start:r.pos], true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if i+1 >= len(r.src) {
				return nil, false
			}
			switch r.src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(r.src) {
					return nil, false
				}
				for _, h := range r.src[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return nil, false
					}
				}
				i += 6
			default:
				return nil, false
			}
		default:
			i++
		}
	}
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

// digits moves pos past a run of decimal digits and returns its length.
func (r *sortedIndenter) digits() int {
	n := 0
	for c := r.peek(); c >= '0' && c <= '9'; c = r.peek() {
		r.pos++
		n++
	}
	return n
}

// number writes the number at pos (JSON's grammar: -?(0|[1-9][0-9]*)
// (.[0-9]+)?([eE][+-]?[0-9]+)?) as encoding/json writes the float64 it
// decodes to.
func (r *sortedIndenter) number() bool {
	start := r.pos
	if r.peek() == '-' {
		r.pos++
	}
	switch c := r.peek(); {
	case c == '0':
		r.pos++
	case c >= '1' && c <= '9':
		r.digits()
	default:
		return false
	}
	if r.peek() == '.' {
		r.pos++
		if r.digits() == 0 {
			return false
		}
	}
	if c := r.peek(); c == 'e' || c == 'E' {
		r.pos++
		if c := r.peek(); c == '+' || c == '-' {
			r.pos++
		}
		if r.digits() == 0 {
			return false
		}
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
	name     []byte
	tok      []byte
	from, to int
}

// object rewrites each member's value in turn after the text written so
// far, then moves the rewritten values into name order. The members of
// the objects being rewritten share r.members (each object its tail) and
// the moved values share r.scratch.
func (r *sortedIndenter) object(depth int) bool {
	r.pos++ // {
	base := len(r.out)
	first := len(r.members)
	defer func() { r.members = r.members[:first] }()
	sorted := true
	r.space()
	if r.peek() == '}' {
		r.pos++
		r.out = append(r.out, '{', '}')
		return true
	}
	for {
		r.space()
		if r.peek() != '"' {
			return false
		}
		tok, ok := r.stringToken()
		if !ok {
			return false
		}
		name := tok[1 : len(tok)-1]
		if !plainString(tok) {
			var s string
			if json.Unmarshal(tok, &s) != nil {
				return false
			}
			name = []byte(s)
		}
		r.space()
		if r.peek() != ':' {
			return false
		}
		r.pos++
		from := len(r.out)
		if !r.value(depth + 1) {
			return false
		}
		if n := len(r.members); n > first && bytes.Compare(r.members[n-1].name, name) >= 0 {
			sorted = false
		}
		r.members = append(r.members, member{name: name, tok: tok, from: from, to: len(r.out)})
		r.space()
		c := r.peek()
		r.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			return false
		}
	}
	ms := r.members[first:]
	if !sorted {
		// Sorted by name; of equal names the last one written wins, as
		// when decoding into a map.
		slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.name, b.name) })
		kept := ms[:0]
		for i, m := range ms {
			if i+1 < len(ms) && bytes.Equal(ms[i+1].name, m.name) {
				continue
			}
			kept = append(kept, m)
		}
		ms = kept
	}
	r.scratch = append(r.scratch[:0], r.out[base:]...)
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
		r.out = append(r.out, r.scratch[m.from-base:m.to-base]...)
	}
	r.newline(depth)
	r.out = append(r.out, '}')
	return true
}

func (r *sortedIndenter) array(depth int) bool {
	r.pos++ // [
	r.space()
	if r.peek() == ']' {
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
		c := r.peek()
		r.pos++
		if c == ']' {
			break
		}
		if c != ',' {
			return false
		}
	}
	r.newline(depth)
	r.out = append(r.out, ']')
	return true
}
