// Package jsontext diagnoses JSON text (RFC 8259) at the boundary where a
// file or an argument is read: what encoding was found (a UTF-8
// byte-order mark, UTF-16 or UTF-32 text), whether the text is empty,
// truncated or malformed, and at which byte, with the recovery. Readers
// use it so their errors keep the format's own cause instead of a generic
// "malformed" message.
package jsontext

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Problem kinds.
const (
	// KindEmpty: the text has no bytes (or only whitespace).
	KindEmpty = "empty"
	// KindUTF16 / KindUTF32: the text is UTF-16 or UTF-32 (by its
	// byte-order mark or its NUL byte pattern); JSON exchanged between
	// systems is UTF-8 (RFC 8259 section 8.1).
	KindUTF16 = "utf16"
	KindUTF32 = "utf32"
	// KindTruncated: the text ends inside a JSON value.
	KindTruncated = "truncated"
	// KindMalformed: a byte that JSON does not allow at that position.
	KindMalformed = "malformed"
)

// UTF8BOM is the UTF-8 byte-order mark. RFC 8259 lets a parser ignore it;
// readers strip it and say so.
var UTF8BOM = []byte("\xef\xbb\xbf")

// Problem is what is wrong with a JSON text: its Kind, the byte Offset it
// was found at (the text's length for a truncation), Found (what was seen,
// for example "byte-order mark FF FE"), and Recovery (what the caller can
// do).
type Problem struct {
	Kind     string
	Offset   int64
	Found    string
	Recovery string
}

// Message renders p for the input named what ("the HAR file").
func (p *Problem) Message(what string) string {
	var s string
	switch p.Kind {
	case KindEmpty:
		s = fmt.Sprintf("%s is empty (%s)", what, p.Found)
	case KindUTF16, KindUTF32:
		s = fmt.Sprintf("%s is %s text (%s), not UTF-8 JSON", what, map[string]string{KindUTF16: "UTF-16", KindUTF32: "UTF-32"}[p.Kind], p.Found)
	case KindTruncated:
		s = fmt.Sprintf("%s is truncated: it ends at byte %d inside a JSON value", what, p.Offset)
	default:
		s = fmt.Sprintf("%s is malformed at byte %d: %s", what, p.Offset, p.Found)
	}
	if p.Recovery != "" {
		s += "; " + p.Recovery
	}
	return s
}

// StripBOM returns b without a leading UTF-8 byte-order mark and whether
// it had one.
func StripBOM(b []byte) ([]byte, bool) {
	if bytes.HasPrefix(b, UTF8BOM) {
		return b[len(UTF8BOM):], true
	}
	return b, false
}

// Encoding returns a KindUTF16/KindUTF32 Problem when head (the first
// bytes of a text, at least 4 when the text has them) is not UTF-8, or
// nil. A JSON text begins with an ASCII character, so NUL bytes among its
// first four bytes mark UTF-16 or UTF-32 (RFC 4627 section 3).
func Encoding(head []byte) *Problem {
	const recovery = "re-encode it as UTF-8 (for example iconv -f %s -t UTF-8)"
	switch {
	case bytes.HasPrefix(head, []byte{0, 0, 0xfe, 0xff}), bytes.HasPrefix(head, []byte{0xff, 0xfe, 0, 0}):
		return &Problem{Kind: KindUTF32, Found: fmt.Sprintf("byte-order mark % X", head[:4]), Recovery: fmt.Sprintf(recovery, "UTF-32")}
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}), bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		return &Problem{Kind: KindUTF16, Found: fmt.Sprintf("byte-order mark % X", head[:2]), Recovery: fmt.Sprintf(recovery, "UTF-16")}
	case len(head) >= 4 && head[0] == 0 && head[1] == 0 && head[2] == 0 && head[3] != 0,
		len(head) >= 4 && head[0] != 0 && head[1] == 0 && head[2] == 0 && head[3] == 0:
		return &Problem{Kind: KindUTF32, Found: "no byte-order mark; NUL bytes in the pattern of UTF-32", Recovery: fmt.Sprintf(recovery, "UTF-32")}
	case len(head) >= 2 && (head[0] == 0) != (head[1] == 0):
		return &Problem{Kind: KindUTF16, Found: "no byte-order mark; NUL bytes in the pattern of UTF-16", Recovery: fmt.Sprintf(recovery, "UTF-16")}
	}
	return nil
}

// Diagnose returns what is wrong with b as one JSON text, or nil when it is
// one. A leading UTF-8 byte-order mark is not a problem (callers strip it
// with StripBOM); Offsets count from the start of b.
func Diagnose(b []byte) *Problem {
	skip := int64(0)
	if rest, ok := StripBOM(b); ok {
		b, skip = rest, int64(len(UTF8BOM))
	}
	if p := Encoding(b); p != nil {
		return p
	}
	if len(bytes.TrimLeft(b, " \t\r\n")) == 0 {
		return &Problem{Kind: KindEmpty, Found: fmt.Sprintf("%d bytes", len(b)+int(skip)), Recovery: "there is nothing to read; produce the file again"}
	}
	if json.Valid(b) {
		return nil
	}
	var v json.RawMessage
	err := json.Unmarshal(b, &v)
	return FromError(err, b, skip)
}

// FromError turns a decoding error of encoding/json over text (the part
// read, offset by skip bytes from the start of the input) into a Problem:
// an unexpected end is KindTruncated at the text's end, a syntax error
// KindMalformed at its offset. It returns nil for other errors.
func FromError(err error, text []byte, skip int64) *Problem {
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Problem{Kind: KindTruncated, Offset: skip + int64(len(text)), Recovery: recoverTruncated}
	case errors.As(err, &se):
		if se.Offset >= int64(len(bytes.TrimRight(text, " \t\r\n"))) && se.Error() == "unexpected end of JSON input" {
			return &Problem{Kind: KindTruncated, Offset: skip + int64(len(text)), Recovery: recoverTruncated}
		}
		found := se.Error()
		return &Problem{Kind: KindMalformed, Offset: skip + se.Offset, Found: found, Recovery: "the text is not JSON at that byte; correct it or produce the file again"}
	}
	return nil
}

const recoverTruncated = "it was cut short (an interrupted write, copy or download); produce or copy it again in full"

// Sniff peeks at the start of a buffered stream: it discards a UTF-8
// byte-order mark (bom true) and returns a Problem for empty, UTF-16 or
// UTF-32 input. Offsets a decoder reports afterwards count from after the
// mark; add 3 when bom is true.
func Sniff(r *bufio.Reader) (bom bool, p *Problem) {
	head, _ := r.Peek(4)
	if bytes.HasPrefix(head, UTF8BOM) {
		r.Discard(len(UTF8BOM))
		bom = true
		head, _ = r.Peek(4)
	}
	if p := Encoding(head); p != nil {
		return bom, p
	}
	if len(head) == 0 {
		n := 0
		if bom {
			n = 3
		}
		return bom, &Problem{Kind: KindEmpty, Found: fmt.Sprintf("%d bytes", n), Recovery: "there is nothing to read; produce the file again"}
	}
	return bom, nil
}
