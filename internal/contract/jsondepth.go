package contract

// JSONDepth returns the deepest array/object nesting of the JSON text b
// without decoding it: strings (with their escapes) are skipped, so a
// bracket inside a string does not count. It reads any bytes; on text that
// is not JSON the number is the bracket depth it saw. Used to refuse input
// before a decoder with its own fatal depth limit runs.
func JSONDepth(b []byte) int {
	depth, deepest := 0, 0
	inStr, esc := false, false
	for _, c := range b {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
