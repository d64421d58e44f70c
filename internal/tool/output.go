package tool

import (
	"encoding/json"
	"fmt"

	"github.com/inquest-dev/inquest/internal/contract"
)

// OutputSchema assembles the published output schema: the common envelope
// with a success variant (data described by dataSchema, or any object) and
// an error variant. It has no external references.
func OutputSchema(dataSchema json.RawMessage) (json.RawMessage, error) {
	var data any = map[string]any{"type": "object"}
	if len(dataSchema) > 0 {
		if err := json.Unmarshal(dataSchema, &data); err != nil {
			return nil, fmt.Errorf("output data schema is not JSON: %w", err)
		}
	}
	codes := make([]string, len(contract.AllCodes))
	for i, c := range contract.AllCodes {
		codes[i] = string(c)
	}
	ts := map[string]any{"type": "string", "format": "date-time"}
	action := map[string]any{
		"oneOf": []any{
			map[string]any{"type": "null"},
			map[string]any{
				"type":     "object",
				"required": []string{"tool", "arguments"},
				"properties": map[string]any{
					"tool":      map[string]any{"type": "string"},
					"arguments": map[string]any{"type": "object"},
				},
			},
		},
	}
	success := map[string]any{
		"type":     "object",
		"required": []string{"api_version", "status", "warnings", "coverage", "data", "next_action"},
		"properties": map[string]any{
			"api_version":         map[string]any{"const": contract.APIVersion},
			"backend_instance_id": map[string]any{"type": "string"},
			"source":              map[string]any{"type": "string"},
			"captured_at":         ts,
			"capture_started_at":  ts,
			"capture_finished_at": ts,
			"status":              map[string]any{"enum": []string{"complete", "partial"}},
			"warnings":            map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"coverage":            map[string]any{"type": "object"},
			"data":                data,
			"next_action":         action,
		},
	}
	failure := map[string]any{
		"type":     "object",
		"required": []string{"error"},
		"properties": map[string]any{
			"error": map[string]any{
				"type":     "object",
				"required": []string{"code", "message", "retryable"},
				"properties": map[string]any{
					"code":              map[string]any{"enum": codes},
					"message":           map[string]any{"type": "string"},
					"retryable":         map[string]any{"type": "boolean"},
					"field":             map[string]any{"type": "string"},
					"constraint":        map[string]any{"type": "string"},
					"expected":          map[string]any{},
					"details":           map[string]any{"type": "object"},
					"native_error_code": map[string]any{"type": "integer"},
					"next_action":       action,
				},
			},
		},
	}
	return json.Marshal(map[string]any{
		"type":  "object",
		"oneOf": []any{success, failure},
	})
}
