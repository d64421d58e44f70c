package tool

import (
	"encoding/json"
	"fmt"
	"strings"
)

// LeanEnumMax is the longest enum a lean input schema keeps (Lean): a
// longer one (metric ids, row fields, sort keys) is published as a plain
// string, and the validator's INVALID_ARGUMENT for a value outside it
// lists every allowed value in expected.enum.
const LeanEnumMax = 12

// leanDropped are the keywords Lean drops, each still enforced or applied
// by the server against the full schema:
//
//   - numeric, length and count bounds, pattern, uniqueItems and
//     dependentRequired: the validator's INVALID_ARGUMENT copies the
//     bound into expected (expected.maximum, expected.pattern, ...) and
//     states it in its message;
//   - additionalProperties and patternProperties: every object stays
//     closed, and an unknown member's error lists the accepted names in
//     expected.properties;
//   - default: the tool applies it to an omitted argument.
var leanDropped = map[string]bool{
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minItems": true, "maxItems": true, "uniqueItems": true,
	"minProperties": true, "maxProperties": true, "dependentRequired": true,
	"additionalProperties": true, "patternProperties": true,
	"default": true,
}

// leanEnumNote is appended to the description of a schema whose long
// enum Lean dropped.
const leanEnumNote = "one of %d values; the error lists them"

// Lean returns the input schema tools/list publishes for a tool whose
// full (validating) schema is input: the same properties, types,
// required members, short enums, anyOf branches and descriptions,
// without what only the server needs:
//
//   - the keywords of leanDropped (bounds, patterns, closedness,
//     defaults), which the server enforces or applies from the full
//     schema;
//   - enums of more than LeanEnumMax values, which become plain strings
//     (the type stays) with a sentence in the description saying the
//     error lists the values;
//   - an enum of numbers and a boolean or number const, outside the
//     portable subset: the schema keeps its type and the description
//     gains the values in words ("one of 1, 2, 5, 10", "only true");
//   - properties of an anyOf branch that the same property of the
//     enclosing object already implies (pruneBranches), such as a
//     per-kind field list left without its long enum.
//
// Lean only removes constraints, never adds one, so every argument set
// the full schema accepts the lean one accepts too; a subtree under not
// or oneOf (where removing a constraint could reject more) is kept
// whole. Calls are still validated against the full schema
// (Registry.Validate). It fails only when input is not JSON; the result
// is compact JSON.
func Lean(input json.RawMessage) (json.RawMessage, error) {
	var doc any
	if err := json.Unmarshal(input, &doc); err != nil {
		return nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	leanWalk(doc)
	return json.Marshal(doc)
}

// leanWalk applies Lean's removals to the schema node in place.
func leanWalk(node any) {
	s, ok := node.(map[string]any)
	if !ok {
		if list, isList := node.([]any); isList {
			for _, v := range list {
				leanWalk(v)
			}
		}
		return
	}
	for k := range s {
		if leanDropped[k] {
			delete(s, k)
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > LeanEnumMax {
		delete(s, "enum")
		if s["type"] == nil && allStrings(e) {
			s["type"] = "string"
		}
		leanNote(s, fmt.Sprintf(leanEnumNote, len(e)))
	}
	if e, ok := s["enum"].([]any); ok && !allStrings(e) {
		// The portable subset has string enums only: a short enum of
		// numbers is published as its type, its values in words.
		delete(s, "enum")
		words := make([]string, len(e))
		for i, v := range e {
			words[i] = compactJSON(v)
		}
		leanNote(s, "one of "+strings.Join(words, ", "))
	}
	if c, ok := s["const"]; ok {
		// Portable turned a string const into an enum; a boolean or
		// number const is published as its type.
		if _, isStr := c.(string); !isStr {
			delete(s, "const")
			if t := jsonType(c); s["type"] == nil && t != "" {
				s["type"] = t
			}
			leanNote(s, "only "+compactJSON(c))
		}
	}
	for k, v := range s {
		switch k {
		case "not", "oneOf", "enum", "const", "default", "required", "examples":
			continue
		case "properties", "$defs", "definitions":
			if m, ok := v.(map[string]any); ok {
				for _, sub := range m {
					leanWalk(sub)
				}
			}
		default:
			leanWalk(v)
		}
	}
	pruneBranches(s)
}

// leanNote appends note to the description of schema s (its own when it
// has none), for a constraint Lean dropped.
func leanNote(s map[string]any, note string) {
	if d, _ := s["description"].(string); d != "" {
		s["description"] = strings.TrimRight(d, ".") + "; " + note
	} else {
		s["description"] = note
	}
}

// jsonType is the JSON Schema type of a decoded JSON value; "" for null.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "string"
}

// pruneBranches removes from each branch of s's anyOf every property the
// same property of s already implies (leanImplied): a branch that fixed
// kind and the fields of that kind's rows keeps only kind once Lean has
// dropped the long enum of fields. With no additionalProperties left, a
// branch without the property accepts whatever it accepted with it.
func pruneBranches(s map[string]any) {
	branches, _ := s["anyOf"].([]any)
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		return
	}
	for _, bi := range branches {
		b, _ := bi.(map[string]any)
		bp, _ := b["properties"].(map[string]any)
		if _, closed := b["additionalProperties"]; closed || bp == nil {
			continue
		}
		for name, sub := range bp {
			if leanImplied(sub, props[name]) {
				delete(bp, name)
			}
		}
		if len(bp) == 0 {
			delete(b, "properties")
		}
	}
}

// leanImplied reports whether every instance schema p accepts, schema b
// accepts too, read structurally: b holds only descriptions, the same
// type as p, properties p implies one by one, items p's items imply, and
// other keywords with p's own values.
func leanImplied(b, p any) bool {
	bs, _ := b.(map[string]any)
	ps, _ := p.(map[string]any)
	if bs == nil || ps == nil {
		return false
	}
	for k, v := range bs {
		switch k {
		case "description":
		case "properties":
			bp, _ := v.(map[string]any)
			pp, _ := ps["properties"].(map[string]any)
			for name, sub := range bp {
				if !leanImplied(sub, pp[name]) {
					return false
				}
			}
		case "items":
			if !leanImplied(v, ps["items"]) {
				return false
			}
		default:
			if !equalJSON(v, ps[k]) {
				return false
			}
		}
	}
	return true
}
