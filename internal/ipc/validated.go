package ipc

import (
	"bytes"
	"encoding/json"
)

// This file reads frames that ReadFrame has already validated (UTF-8, one
// JSON object) without running encoding/json's scanner over them again: a
// proc tool's data is most of a response and was scanned once, so the
// bridge only finds where values end (matching brackets outside strings,
// which is exact on valid JSON) and leaves the data for its consumer to
// decode once. Whatever is not in the exact shape the host writes goes
// the strict way (Decode, encoding/json), so both ways give the same
// message.

// responsePrefix and resultKey frame a response as encode writes it:
// {"kind":"response","request_id":ID,"result":{...}}.
const (
	responsePrefix = `{"kind":"response","request_id":"`
	resultKey      = `,"result":`
)

// validatedResponse returns the response of frame payload p, which
// ReadFrame validated, when p has exactly the shape encode writes (kind
// first, a request_id of 1..MaxIDBytes bytes without escapes, an object
// result, nothing else); ok is false otherwise and the caller decodes p
// with Decode. Result is a slice of p.
func validatedResponse(p []byte) (r *Response, ok bool) {
	if !bytes.HasPrefix(p, []byte(responsePrefix)) {
		return nil, false
	}
	i := len(responsePrefix)
	n := bytes.IndexByte(p[i:], '"')
	if n < 1 || n > MaxIDBytes || bytes.IndexByte(p[i:i+n], '\\') >= 0 {
		return nil, false
	}
	id := p[i : i+n]
	i += n + 1
	if !bytes.HasPrefix(p[i:], []byte(resultKey)) {
		return nil, false
	}
	i += len(resultKey)
	if i >= len(p) || p[i] != '{' {
		return nil, false
	}
	end := skipValue(p, i)
	if end != len(p)-1 || p[end] != '}' {
		return nil, false
	}
	return &Response{Kind: KindResponse, RequestID: string(id), Result: p[i:end:end]}, true
}

// splitData cuts the top-level "data" member out of raw, a valid JSON
// object: data is its value (an object or array) and rest the object
// without it. ok is false, and raw must be decoded whole, when raw has no
// such member, a key that is written with escapes or that encoding/json
// would match to "data" in another case, or "data" twice.
func splitData(raw []byte) (rest, data []byte, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(raw, i+1)
	prevEnd := i // where the previous member's value ended (after '{' for the first)
	keyStart, valStart, valEnd, nextKey := -1, -1, -1, -1
	for i < len(raw) && raw[i] != '}' {
		if raw[i] != '"' {
			return nil, nil, false
		}
		ks := i
		ke := skipString(raw, i)
		if ke < 0 {
			return nil, nil, false
		}
		key := raw[ks+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, nil, false
		}
		isData := string(key) == "data"
		if !isData && bytes.EqualFold(key, []byte("data")) {
			return nil, nil, false
		}
		i = skipSpace(raw, ke)
		if i >= len(raw) || raw[i] != ':' {
			return nil, nil, false
		}
		vs := skipSpace(raw, i+1)
		ve := skipValue(raw, vs)
		if ve < 0 {
			return nil, nil, false
		}
		i = skipSpace(raw, ve)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		switch {
		case isData && keyStart >= 0:
			return nil, nil, false // data twice
		case isData:
			if raw[vs] != '{' && raw[vs] != '[' {
				return nil, nil, false
			}
			keyStart, valStart, valEnd = ks, vs, ve
			if i < len(raw) && raw[i] != '}' {
				nextKey = i
			} else {
				nextKey = -1
			}
			if ks == prevEnd {
				prevEnd = -1 // data is the first member
			}
		case keyStart < 0:
			prevEnd = ve
		}
	}
	if keyStart < 0 {
		return nil, nil, false
	}
	rest = make([]byte, 0, len(raw)-(valEnd-keyStart))
	switch {
	case nextKey >= 0:
		// {..., "data":V, next...}: drop from the key to the next key
		rest = append(append(rest, raw[:keyStart]...), raw[nextKey:]...)
	case prevEnd >= 0:
		// {a:1, "data":V}: drop from the end of the member before
		rest = append(append(rest, raw[:prevEnd]...), raw[valEnd:]...)
	default:
		// {"data":V}: the only member
		rest = append(append(rest, raw[:keyStart]...), raw[valEnd:]...)
	}
	return rest, raw[valStart:valEnd:valEnd], true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
			continue
		}
		return i
	}
	return i
}

// skipString returns the index just past the JSON string that starts at
// b[i] ('"'), or -1 when it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index just past the JSON value of valid JSON
// that starts at b[i], or -1 when it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				i-- // the loop steps past the closing quote
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	// a number, true, false or null: up to the next delimiter
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// validatedResult is resultOf for a result object of a frame ReadFrame
// validated: the data member is cut out unscanned and only the rest (status,
// coverage, warnings, next action) is decoded.
func validatedResult(raw json.RawMessage) (*wireResult, bool) {
	rest, data, ok := splitData(raw)
	if !ok {
		return nil, false
	}
	var wire wireResult
	if err := json.Unmarshal(rest, &wire); err != nil {
		return nil, false
	}
	wire.Data = json.RawMessage(data)
	return &wire, true
}
