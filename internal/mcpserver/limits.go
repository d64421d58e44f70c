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
	limitArray                // an array of more than MaxArrayItems elements
	limitString               // a string of more than MaxStringBytes bytes
	limitSyntax               // not one JSON value
)

// MaxArrayItems bounds the elements of any one array in an inbound
// message: four times the largest maxItems of any tool's input schema
// (1024), so every schema-valid call passes, while a line of millions of
// small values is refused from its bytes before any decoder builds them.
const MaxArrayItems = 4096

// MaxStringBytes bounds the raw bytes (escapes included) of any one JSON
// string in an inbound message: the largest maxLength of any tool's input
// schema (32,768 characters) written entirely as \u escapes fits.
const MaxStringBytes = 256 << 10

// limitNames are the details.limit values of the limits.
var limitNames = [...]string{limitTooLong: "max_line_bytes", limitUTF8: "utf8", limitDepth: "max_nesting_depth", limitArray: "max_array_items", limitString: "max_string_bytes"}

// admission scans one line once, without decoding it, for nesting deeper
// than MaxNestingDepth, an array of more than MaxArrayItems elements or a
// string of more than MaxStringBytes raw bytes, and stops at the first
// broken: it returns that limit, or limitSyntax (none broken). The scan is
// linear in the bytes and allocates only its stack of open containers (at
// most MaxNestingDepth deep), so refusing a line of millions of values
// costs less than reading it. Broken JSON is not its concern (json.Valid
// follows): it never fails on it.
func admission(b []byte) limit {
	// counts[i] is the number of commas seen in the i-th open container
	// (-1 for an object, whose members are not counted).
	var counts []int
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			start := i
			for i++; i < len(b); i++ {
				if b[i] == '\\' {
					i++
					continue
				}
				if b[i] == '"' {
					break
				}
			}
			if i-start-1 > MaxStringBytes {
				return limitString
			}
		case '[', '{':
			if len(counts) >= MaxNestingDepth {
				return limitDepth
			}
			if b[i] == '[' {
				counts = append(counts, 0)
			} else {
				counts = append(counts, -1)
			}
		case ']', '}':
			if len(counts) > 0 {
				counts = counts[:len(counts)-1]
			}
		case ',':
			if n := len(counts); n > 0 && counts[n-1] >= 0 {
				counts[n-1]++
				if counts[n-1] >= MaxArrayItems {
					return limitArray
				}
			}
		}
	}
	return limitSyntax
}

func (l limit) message() string {
	switch l {
	case limitTooLong:
		return fmt.Sprintf("the message exceeds the %d MiB line limit", MaxLineBytes>>20)
	case limitUTF8:
		return "the message is not valid UTF-8; send text as UTF-8 (JSON \\u escapes for other code points)"
	case limitDepth:
		return fmt.Sprintf("the message nests arrays and objects deeper than %d levels", MaxNestingDepth)
	case limitArray:
		return fmt.Sprintf("the message holds an array of more than %d elements (no tool argument takes more than 1,024)", MaxArrayItems)
	case limitString:
		return fmt.Sprintf("the message holds a string of more than %d KiB (no tool argument takes more than 32,768 characters)", MaxStringBytes>>10)
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
			WithDetail("limit", limitNames[l])
		switch l {
		case limitTooLong:
			e = e.WithDetail("max_line_bytes", MaxLineBytes)
		case limitDepth:
			e = e.WithDetail("max_nesting_depth", MaxNestingDepth)
		case limitArray:
			e = e.WithDetail("max_array_items", MaxArrayItems)
		case limitString:
			e = e.WithDetail("max_string_bytes", MaxStringBytes)
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
