package perf

import (
	"encoding/json"

	"github.com/inquest-dev/inquest/internal/contract"
)

// js is one JSON Schema node written as a Go value. Every perf input
// schema is built from js values: the fragments shared by several tools
// (sources, limits, page_size, continuation) are functions or variables
// below, and object is the one helper that closes an object schema.
type js map[string]any

// object is a closed object schema (additionalProperties false) over
// props, requiring the named properties.
func object(props js, required ...string) js {
	s := js{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// with returns s with the extra keywords kv set (pairs of key, value).
func (s js) with(kv ...any) js {
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i].(string)] = kv[i+1]
	}
	return s
}

// json is s encoded (map keys sorted, so the bytes are stable).
func (s js) json() json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic("perf: schema does not encode: " + err.Error())
	}
	return b
}

// continuationSchema is the continuation argument of every analysis tool.
var continuationSchema = js{"type": "string", "minLength": 1, "maxLength": contract.MaxCursorLen, "description": "Token from next_action."}

// pageSizeSchema is the page_size argument under the ceilings c.
func pageSizeSchema(c Ceilings) js {
	return js{"type": "integer", "minimum": 1, "maximum": c.MaxRows, "default": c.DefaultRows}
}

// sourcesSchema is the sources argument of op: an ordered array of path
// or evidence sources, discriminated on kind.
func sourcesSchema(op *Operation) js {
	path := object(js{
		"kind":            js{"const": "path"},
		"path":            js{"type": "string", "minLength": 1, "maxLength": 4096},
		"format":          js{"enum": op.Formats, "description": "Detected when omitted."},
		"producer":        js{"type": "string", "minLength": 1, "maxLength": 128},
		"expected_sha256": js{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Else INPUT_CHANGED."},
	}, "kind", "path")
	ev := object(js{
		"kind":              js{"const": "evidence"},
		"evidence_id":       evidenceIDSchema,
		"artifact_selector": js{"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", "description": "Needed when the record has several artifacts."},
	}, "kind", "evidence_id")
	return js{
		"type": "array", "minItems": op.MinSources, "maxItems": op.MaxSources,
		// Discriminated on kind (if/then/else rather than oneOf) so a
		// failure points at the offending field of the selected branch,
		// e.g. /sources/0/evidence_id and its pattern, not at kind.
		// The branches are the closed object schemas; items itself only
		// requires kind and selects a branch.
		"items": js{
			"required":   []string{"kind"},
			"properties": js{"kind": js{"enum": []string{"path", "evidence"}}},
			"if":         js{"properties": js{"kind": js{"const": "path"}}},
			"then":       path,
			"else":       ev,
		},
	}
}

// evidenceIDSchema is an evidence_id inside a source.
var evidenceIDSchema = js{"type": "string", "pattern": "^ev-[a-z2-7]{26}$"}

// limitsSchema is the limits argument under the ceilings c.
func limitsSchema(c Ceilings) js {
	return object(js{
		"max_rows":         js{"type": "integer", "minimum": 1, "maximum": c.MaxRows},
		"max_input_bytes":  js{"type": "integer", "minimum": 1, "maximum": c.MaxInputBytes},
		"timeout_seconds":  js{"type": "integer", "minimum": 1, "maximum": c.TimeoutSeconds},
		"max_memory_bytes": js{"type": "integer", "minimum": 1 << 20, "maximum": c.MaxMemoryBytes, "default": c.defaultMemory()},
	}).with("description", "Lowers server ceilings.")
}
