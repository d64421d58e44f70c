package tool

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// portableKeywords are the schema members every client inquest registers
// with accepts in a tool's input schema: the fields of Gemini's
// function-declaration Schema object (an OpenAPI 3.0 subset:
// https://ai.google.dev/api/caching#Schema), which Gemini CLI sends to the
// model, plus additionalProperties, which Gemini CLI removes before
// sending and every JSON Schema client (the MCP Inspector, the TypeScript
// and Go SDKs) understands. Nothing here is a JSON Schema-only construct:
// no const, oneOf, if/then/else, patternProperties, $ref, type arrays.
var portableKeywords = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"type": true, "format": true, "title": true, "description": true,
		"enum": true, "maxItems": true, "minItems": true, "properties": true,
		"required": true, "minProperties": true, "maxProperties": true,
		"minLength": true, "maxLength": true, "pattern": true, "anyOf": true,
		"default": true, "items": true, "minimum": true, "maximum": true,
		"additionalProperties": true,
	}
})

// portableTypes are the values a portable schema's type may take: one
// string, never an array and never "null" (an optional member is left
// out, not sent as null).
var portableTypes = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true}
})

// portableFormats are the formats Gemini's Schema documents, per type.
var portableFormats = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"string":  {"enum": true, "date-time": true},
		"number":  {"float": true, "double": true},
		"integer": {"int32": true, "int64": true},
	}
})

// PortableViolations lists, as "JSON-pointer: problem" strings in schema
// order, every construct of the input schema that a registered client does
// not accept (see portableKeywords): a keyword outside the subset, a type
// that is an array or "null", a schema without a type (an empty schema
// {}), an array without items, an enum of anything but strings,
// additionalProperties other than false, a format the subset does not
// list for the type. It returns nil for a portable schema and one
// violation for a schema that is not JSON.
func PortableViolations(schema json.RawMessage) []string {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return []string{"(root): not JSON: " + err.Error()}
	}
	var out []string
	portableWalk(doc, "", &out)
	return out
}

func portableWalk(node any, at string, out *[]string) {
	bad := func(format string, a ...any) {
		loc := at
		if loc == "" {
			loc = "(root)"
		}
		*out = append(*out, loc+": "+fmt.Sprintf(format, a...))
	}
	s, ok := node.(map[string]any)
	if !ok {
		bad("a schema must be an object")
		return
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !portableKeywords()[k] {
			bad("keyword %q is outside the portable subset", k)
		}
	}
	typ, _ := s["type"].(string)
	_, hasAny := s["anyOf"]
	switch t := s["type"].(type) {
	case nil:
		if !hasAny {
			bad("no type (an empty or untyped schema)")
		}
	case string:
		if !portableTypes()[t] {
			bad("type %q is not portable", t)
		}
	default:
		bad("type must be one string, not %s", compactJSON(t))
	}
	if f, ok := s["format"].(string); ok && !portableFormats()[typ][f] {
		bad("format %q is not portable for type %q", f, typ)
	}
	if e, ok := s["enum"]; ok {
		list, _ := e.([]any)
		if len(list) == 0 || typ != "string" {
			bad("enum must be a non-empty list on a string schema")
		}
		for _, v := range list {
			if _, isStr := v.(string); !isStr {
				bad("enum value %s is not a string", compactJSON(v))
				break
			}
		}
	}
	if ap, ok := s["additionalProperties"]; ok && ap != false {
		bad("additionalProperties must be false")
	}
	if typ == "array" {
		if _, ok := s["items"]; !ok {
			bad("an array needs items")
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			portableWalk(props[k], at+"/properties/"+escape(k), out)
		}
	}
	if items, ok := s["items"]; ok {
		portableWalk(items, at+"/items", out)
	}
	if list, ok := s["anyOf"].([]any); ok {
		for i, b := range list {
			portableWalk(b, fmt.Sprintf("%s/anyOf/%d", at, i), out)
		}
	}
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}

// Portable rewrites an input schema into the portable subset where an
// equivalent form exists there, and returns it unchanged (the same bytes)
// when nothing needed rewriting:
//
//   - an enum of strings without a type gains "type":"string";
//   - a string const becomes a one-value string enum;
//   - a type array with "null" loses "null" (an optional member is left
//     out instead of sent as null); a type array of several other types
//     becomes anyOf over one schema per type, each keeping the keywords
//     that apply to it;
//   - an if/then/else chain that selects a branch by one member's value
//     ({"if":{"properties":{"kind":{"const":"a"}}},"then":A,"else":...},
//     every branch fixing that member to one value) becomes anyOf over
//     the branches (the validator's error then names the selected
//     branch's field, as before: see selectBranch);
//   - a oneOf whose branches cannot both match (each a closed object
//     requiring a member no other branch accepts) becomes anyOf;
//   - a schema holding anyOf and object keywords gains "type":"object",
//     and a branch of an object's anyOf that only lists required members
//     gains it too.
//
// Each rewrite accepts exactly the arguments the original accepted (bar
// an explicit null, which the tools treat as absence). It fails only when
// the schema is not JSON.
func Portable(input json.RawMessage) (json.RawMessage, error) {
	var doc any
	if err := json.Unmarshal(input, &doc); err != nil {
		return nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	if !portableRewrite(doc) {
		return input, nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// typeKeywords says which keywords constrain which instance type, for
// splitting a multi-type schema into one branch per type.
var typeKeywords = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"minimum": "number", "maximum": "number",
		"minLength": "string", "maxLength": "string", "pattern": "string", "format": "string",
		"minItems": "array", "maxItems": "array", "items": "array",
		"properties": "object", "required": "object", "additionalProperties": "object", "minProperties": "object", "maxProperties": "object",
	}
})

// portableRewrite applies Portable's rewrites to node in place and
// reports whether anything changed.
func portableRewrite(node any) bool {
	changed := false
	switch n := node.(type) {
	case []any:
		for _, v := range n {
			changed = portableRewrite(v) || changed
		}
		return changed
	case map[string]any:
		// A chain is read whole before its branches are rewritten.
		if branches, ok := discriminatedChain(n); ok {
			delete(n, "if")
			delete(n, "then")
			delete(n, "else")
			n["anyOf"] = branches
			changed = true
		}
		for k, v := range n {
			switch k {
			case "enum", "const", "default", "required", "examples":
				continue
			}
			changed = portableRewrite(v) || changed
		}
		if c, ok := n["const"].(string); ok {
			delete(n, "const")
			n["enum"] = []any{c}
			changed = true
		}
		if e, ok := n["enum"].([]any); ok && n["type"] == nil && allStrings(e) {
			n["type"] = "string"
			changed = true
		}
		if branches, ok := n["oneOf"].([]any); ok && exclusive(branches) {
			delete(n, "oneOf")
			n["anyOf"] = branches
			changed = true
		}
		if list, ok := n["anyOf"].([]any); ok && n["type"] == "object" {
			// A branch that only lists required members of this object
			// is about an object too.
			for _, bi := range list {
				if b, _ := bi.(map[string]any); b != nil && b["type"] == nil && len(b) == 1 && b["required"] != nil {
					b["type"] = "object"
					changed = true
				}
			}
		}
		if _, ok := n["anyOf"]; ok && n["type"] == nil {
			if _, obj := n["properties"]; obj {
				n["type"] = "object"
				changed = true
			}
		}
		if ts, ok := n["type"].([]any); ok {
			var kept []string
			for _, t := range ts {
				if s, _ := t.(string); s != "null" {
					kept = append(kept, s)
				}
			}
			changed = true
			if len(kept) == 1 {
				n["type"] = kept[0]
				break
			}
			var branches []any
			for _, t := range kept {
				b := map[string]any{"type": t}
				for k, v := range n {
					if applies, ok := typeKeywords()[k]; ok && (applies == t || (applies == "number" && t == "integer")) {
						b[k] = v
					}
				}
				branches = append(branches, b)
			}
			for k := range n {
				if _, ok := typeKeywords()[k]; ok || k == "type" {
					delete(n, k)
				}
			}
			n["anyOf"] = branches
		}
	}
	return changed
}

func allStrings(list []any) bool {
	for _, v := range list {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return len(list) > 0
}

// discriminatedChain returns the branches of an if/then/else chain whose
// every condition is {"properties":{K:{"enum":[v]}}} for one member K and
// whose every branch (each then, and the last else) is an object schema
// fixing K to one value (a one-value enum), so that at most one branch
// can match any instance and anyOf over them accepts what the chain did.
func discriminatedChain(n map[string]any) ([]any, bool) {
	if _, ok := n["if"]; !ok {
		return nil, false
	}
	var branches []any
	key := ""
	cur := n
	for {
		cond, _ := cur["if"].(map[string]any)
		props, _ := cond["properties"].(map[string]any)
		if len(cond) != 1 || len(props) != 1 {
			return nil, false
		}
		for k := range props {
			if key != "" && k != key {
				return nil, false
			}
			key = k
		}
		v, ok := fixedValue(props[key])
		if !ok {
			return nil, false
		}
		then, _ := cur["then"].(map[string]any)
		if tv, ok := branchValue(then, key); !ok || tv != v {
			return nil, false
		}
		branches = append(branches, then)
		els, _ := cur["else"].(map[string]any)
		if _, more := els["if"]; more {
			for k := range els {
				if k != "if" && k != "then" && k != "else" {
					return nil, false
				}
			}
			cur = els
			continue
		}
		if _, ok := branchValue(els, key); !ok {
			return nil, false
		}
		return append(branches, els), true
	}
}

// fixedValue is the one string a schema allows ({"enum":[v]} or
// {"const":v}).
func fixedValue(schema any) (string, bool) {
	s, _ := schema.(map[string]any)
	if c, ok := s["const"].(string); ok {
		return c, true
	}
	if e, ok := s["enum"].([]any); ok && len(e) == 1 {
		v, ok := e[0].(string)
		return v, ok
	}
	return "", false
}

// branchValue is the one value branch fixes member key to, when branch
// is an object schema requiring key.
func branchValue(branch map[string]any, key string) (string, bool) {
	props, _ := branch["properties"].(map[string]any)
	req, _ := branch["required"].([]any)
	required := false
	for _, r := range req {
		required = required || r == key
	}
	if !required {
		return "", false
	}
	return fixedValue(props[key])
}

// exclusive reports whether no instance can match two of branches: each
// has its own type (integer and number overlap), or each is a closed
// object (additionalProperties false) that requires a member no other
// branch accepts.
func exclusive(branches []any) bool {
	if len(branches) < 2 {
		return false
	}
	if distinctTypes(branches) {
		return true
	}
	for i, bi := range branches {
		b, _ := bi.(map[string]any)
		req, _ := b["required"].([]any)
		if b["additionalProperties"] != false || len(req) == 0 {
			return false
		}
		for j, bj := range branches {
			if i == j {
				continue
			}
			other, _ := bj.(map[string]any)
			props, _ := other["properties"].(map[string]any)
			found := false
			for _, r := range req {
				name, _ := r.(string)
				if _, accepted := props[name]; !accepted {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	return true
}

// distinctTypes reports whether every branch names one type and no two
// branches' types can hold the same value.
func distinctTypes(branches []any) bool {
	seen := map[string]bool{}
	for _, bi := range branches {
		b, _ := bi.(map[string]any)
		t, ok := b["type"].(string)
		if !ok {
			return false
		}
		if t == "integer" {
			t = "number"
		}
		if seen[t] {
			return false
		}
		seen[t] = true
	}
	return true
}
