package cli

import (
	"bytes"
	"encoding/json"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/jsontext"
)

// jsonObjectArg decodes the JSON text given to a CLI flag or positional
// argument (named by what, e.g. "--arguments") into an object whose numbers
// stay json.Number, so an integer such as 9223372036854775807 reaches the
// tool exactly as an MCP client would send it. A leading UTF-8 byte-order
// mark is ignored (RFC 8259 allows it). Empty, UTF-16/32, truncated or
// malformed text and a value that is not an object (null is {} when
// nullIsEmpty) are INVALID_ARGUMENT
// naming what was found (jsontext) and the byte.
func jsonObjectArg(what, text string, nullIsEmpty bool) (map[string]any, error) {
	b, _ := jsontext.StripBOM([]byte(text))
	if p := jsontext.Diagnose(b); p != nil {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "%s", p.Message(what+" (JSON text)")).WithDetail("problem", p.Kind).WithDetail("offset", p.Offset)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil && !nullIsEmpty {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "%s must be a JSON object", what)
	}
	if m == nil {
		// null means no arguments, as in an MCP tools/call (nullIsEmpty).
		m = map[string]any{}
	}
	return m, nil
}
