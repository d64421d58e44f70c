package tool

import (
	_ "embed"
	"encoding/json"
	"sync"
)

// dataSchemasJSON holds the data schema of every tool that does not set
// Tool.OutputData: an object keyed by tool name whose values are JSON
// Schemas of that tool's success data (its fields, row fields and their
// types). It is kept in step with what the tools return by the result
// check (see ResultLogEnv): every result a test produces is validated
// against the published schema, and `go test ./internal/tool -run
// TestGenerateDataSchemas -gen DIR` rewrites it from a directory of
// result logs.
//
//go:embed dataschemas.json
var dataSchemasJSON []byte

// dataSchemas decodes dataSchemasJSON on first use (a command that
// publishes no catalog never pays for it).
var dataSchemas = sync.OnceValue(func() map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(dataSchemasJSON, &m)
	return m
})

// DataSchemaOf returns the data schema the named tool publishes: its
// Tool.OutputData when set, else its entry in the built-in table; nil
// when there is none (data is then published as any object).
func (r *Registry) DataSchemaOf(name string) json.RawMessage {
	e, ok := r.byName[name]
	if !ok {
		return nil
	}
	return e.dataSchema()
}

func (e *entry) dataSchema() json.RawMessage {
	if len(e.OutputData) > 0 {
		return e.OutputData
	}
	return dataSchemas()[e.Name]
}
