package mcpserver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
)

// limit names the check an inbound line failed before it reached a decoder.
type limit int

const (
	limitTooLong limit = iota // longer than MaxLineBytes
	limitUTF8                 // not valid UTF-8
	limitDepth                // nested deeper than MaxNestingDepth
	limitSyntax               // not one JSON value
)

func (l limit) message() string {
	switch l {
	case limitTooLong:
		return fmt.Sprintf("the message exceeds the %d MiB line limit", MaxLineBytes>>20)
	case limitUTF8:
		return "the message is not valid UTF-8; send text as UTF-8 (JSON \\u escapes for other code points)"
	case limitDepth:
		return fmt.Sprintf("the message nests arrays and objects deeper than %d levels", MaxNestingDepth)
	}
	return "the line is not a JSON value"
}

// rejection builds the response to a line that failed l. The request id is
// recovered from the line's top-level "id" member when it is readable (a
// string or number that precedes any damage), else it is null. A
// tools/call whose id is known gets a tool result with isError and an
// INVALID_ARGUMENT error envelope (details.limit names the check), so the
// client sees a typed failure of that call; anything else gets a JSON-RPC
// error: -32700 for a line that is not JSON, -32600 for a limit.
func rejection(line []byte, l limit) []byte {
	id, method := recoverID(line)
	if id != nil && method == "tools/call" && l != limitSyntax {
		e := contract.Errorf(contract.CodeInvalidArgument, "%s", l.message()).
			WithDetail("limit", map[limit]string{limitTooLong: "max_line_bytes", limitUTF8: "utf8", limitDepth: "max_nesting_depth"}[l])
		switch l {
		case limitTooLong:
			e = e.WithDetail("max_line_bytes", MaxLineBytes)
		case limitDepth:
			e = e.WithDetail("max_nesting_depth", MaxNestingDepth)
		}
		body, _ := contract.Marshal(nil, e)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": string(body)}},
			"structuredContent": json.RawMessage(body),
			"isError":           true,
		}})
		return append(b, '\n')
	}
	code, prefix := -32600, "Invalid Request: "
	if l == limitSyntax {
		code, prefix = -32700, "Parse error: "
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": prefix + l.message()}})
	return append(b, '\n')
}

// recoverID reads the top-level "id" and "method" members of a JSON-RPC
// object without decoding it, tolerating damage after them: invalid UTF-8
// elsewhere, any nesting depth (values are skipped iteratively), a line cut
// short, or broken syntax later in the line. id is the raw JSON of a
// string or number id (nil when absent, null, of another type or not
// readable); method is "" when absent or unreadable.
func recoverID(b []byte) (id json.RawMessage, method string) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, ""
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] == '}' {
			return id, method
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '"' {
			return id, method
		}
		kEnd := scanString(b, i)
		if kEnd < 0 {
			return id, method
		}
		key := string(b[i:kEnd])
		i = skipWS(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return id, method
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return id, method
		}
		vEnd := skipValue(b, i)
		if vEnd <= i { // cut short, or no value at all
			return id, method
		}
		v := b[i:vEnd]
		switch key {
		case `"id"`:
			if readableID(v) {
				id = append(json.RawMessage(nil), v...)
			} else {
				id = nil
			}
		case `"method"`:
			var m string
			if v[0] == '"' && utf8.Valid(v) && json.Unmarshal(v, &m) == nil {
				method = m
			}
		}
		i = vEnd
	}
}

// readableID reports whether v is an id a client can read back: a valid
// UTF-8 JSON string, or a JSON number within float64 range.
func readableID(v []byte) bool {
	if !utf8.Valid(v) || !json.Valid(v) {
		return false
	}
	if v[0] == '"' {
		return true
	}
	if v[0] == '-' || (v[0] >= '0' && v[0] <= '9') {
		_, err := strconv.ParseFloat(string(v), 64)
		return err == nil
	}
	return false
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// scanString returns the index after the string starting at b[i] == '"',
// or -1 when the line ends first.
func scanString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i]
// (strings and nesting followed without recursion), or -1 when the line
// ends first.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return scanString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return -1 // a scalar cut by the end of the line may be incomplete
}
