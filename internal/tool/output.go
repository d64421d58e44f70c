package tool

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/inquest-dev/inquest/internal/contract"
)

// OutputSchema assembles a tool's published output schema: the common
// envelope, one object whose properties describe every member of both
// variants (data by dataSchema, the tool's own data schema, or any object
// when dataSchema is empty) and whose oneOf says which members each
// variant requires: a success has api_version, status, warnings,
// coverage, data and next_action; an error has error (and a result with
// both is refused). It is written compactly because every tool repeats
// it in tools/list:
//
//   - the next_action object (null, or {tool, arguments}), used by both
//     variants, is written once under $defs and referenced as
//     "#/$defs/a", as the timestamps' date-time is "#/$defs/t"
//     (references inside the tool's own schema: MCP has no place for
//     definitions shared between tools);
//   - a member that may be null or one other type says so with a type
//     array (["null","object"]), the shortest form; no schema is empty
//     (error.expected, any JSON value, is described), which the MCP
//     Inspector flags;
//   - error.code is a string of upper-case words joined by "_"
//     (INVALID_ARGUMENT, PROCESS_EXITED, ...); the list of codes is
//     contract.AllCodes, documented in docs/errors.md, and is not repeated
//     in every tool's schema.
//
// The result validates under JSON Schema 2020-12 and draft-07 (what MCP
// clients compile it with: the TypeScript SDK's Ajv, the Go SDK's
// jsonschema-go). It has no external references. It fails only when
// dataSchema is not JSON.
func OutputSchema(dataSchema json.RawMessage) (json.RawMessage, error) {
	data := []byte(`{"type":"object"}`)
	if d := bytes.TrimSpace(dataSchema); len(d) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, d); err != nil {
			return nil, fmt.Errorf("output data schema is not JSON: %w", err)
		}
		data = c.Bytes()
	}
	version, _ := json.Marshal(contract.APIVersion)
	var b bytes.Buffer
	b.WriteString(`{"type":"object","$defs":{"a":{"type":["null","object"],"required":["tool","arguments"],"properties":{"tool":{"type":"string"},"arguments":{"type":"object"}}},"t":{"type":"string","format":"date-time"}},`)
	// Exactly one variant: a success has these members, an error has error.
	b.WriteString(`"oneOf":[{"required":["api_version","status","warnings","coverage","data","next_action"]},{"required":["error"]}],`)
	b.WriteString(`"properties":{"api_version":{"const":`)
	b.Write(version)
	b.WriteString(`},"backend_instance_id":{"type":"string"},"source":{"type":"string"},"captured_at":{"$ref":"#/$defs/t"},"capture_started_at":{"$ref":"#/$defs/t"},"capture_finished_at":{"$ref":"#/$defs/t"},"status":{"enum":["complete","partial"]},"warnings":{"type":"array","items":{"type":"string"}},"coverage":{"type":"object"},"data":`)
	b.Write(data)
	b.WriteString(`,"next_action":{"$ref":"#/$defs/a"},`)
	b.WriteString(`"error":{"type":"object","required":["code","message","retryable"],"properties":{"code":{"type":"string","pattern":"` + codePattern + `"},"message":{"type":"string"},"retryable":{"type":"boolean"},"field":{"type":"string"},"constraint":{"type":"string"},"expected":{"description":"any JSON value"},"details":{"type":"object"},"native_error_code":{"type":"integer"},"next_action":{"$ref":"#/$defs/a"}}}}}`)
	if !json.Valid(b.Bytes()) {
		return nil, fmt.Errorf("output schema is not JSON (data schema %q)", data)
	}
	return b.Bytes(), nil
}

// codePattern is the shape of every error code in contract.AllCodes, as
// the output schema publishes it.
const codePattern = `^[A-Z][A-Z_]*$`
