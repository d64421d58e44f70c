package tool

import (
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// MaxArgumentBytes bounds the encoded arguments of one call (the 4 MiB MCP
// message limit of seed 000 section 8).
const MaxArgumentBytes = 4 << 20

func (e *entry) validate(args json.RawMessage) error {
	if len(args) > MaxArgumentBytes {
		return &contract.Error{Code: contract.CodeInvalidArgument, Message: "arguments exceed 4 MiB", Field: "", Constraint: ""}
	}
	if err := e.compiled(); err != nil {
		return &contract.Error{Code: contract.CodeInternalError, Message: "the tool's input schema does not compile: " + err.Error()}
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(args)))
	if err != nil {
		return &contract.Error{Code: contract.CodeInvalidArgument, Message: "arguments are not valid JSON", NextAction: nil}
	}
	verr := e.schema.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return &contract.Error{Code: contract.CodeInvalidArgument, Message: "arguments do not match the input schema"}
	}
	l := leaf(ve)
	if alt := requiredAlternatives(ve); alt != nil {
		if r, ok := l.ErrorKind.(*kind.Required); ok && len(r.Missing) > 0 && containsString(alt.names(), r.Missing[0]) {
			return e.alternatives(alt)
		}
	}
	return e.project(l)
}

// altGroup is an anyOf/oneOf whose every branch only requires members:
// the caller must give every member of one of alts.
type altGroup struct {
	v    *jsonschema.ValidationError
	alts [][]string
}

// names returns every member the alternatives name.
func (a *altGroup) names() []string {
	var out []string
	for _, alt := range a.alts {
		out = append(out, alt...)
	}
	return out
}

// requiredAlternatives finds an anyOf/oneOf failure in ve whose branches
// each failed only for missing members ({"anyOf":[{"required":["a"]},
// {"required":["b"]}]}), or nil.
func requiredAlternatives(ve *jsonschema.ValidationError) *altGroup {
	var found *altGroup
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if found != nil {
			return
		}
		switch v.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			var alts [][]string
			for _, c := range v.Causes {
				r := c
				for len(r.Causes) == 1 {
					r = r.Causes[0]
				}
				req, ok := r.ErrorKind.(*kind.Required)
				if !ok || len(r.Causes) > 0 || len(req.Missing) == 0 {
					alts = nil
					break
				}
				alts = append(alts, req.Missing)
			}
			if len(alts) > 1 {
				found = &altGroup{v: v, alts: alts}
				return
			}
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	return found
}

// alternatives is the INVALID_ARGUMENT error for a missing choice among
// required alternatives: it names every alternative, in the message and
// as expected.one_of_required (a list of alternatives, each the members
// it needs), at the object that lacks them.
func (e *entry) alternatives(a *altGroup) *contract.Error {
	field := pointer(a.v.InstanceLocation)
	schemaPtr := ""
	if i := strings.Index(a.v.SchemaURL, "#"); i >= 0 {
		schemaPtr = a.v.SchemaURL[i+1:]
	}
	at := "the top level"
	if field != "" {
		at = field
	}
	words := make([]string, len(a.alts))
	for i, alt := range a.alts {
		words[i] = strings.Join(alt, " and ")
	}
	return &contract.Error{
		Code:       contract.CodeInvalidArgument,
		Message:    "one of these is required: " + strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1] + " (at " + at + ")",
		Field:      field,
		Constraint: schemaPtr + pointer(a.v.ErrorKind.KeywordPath()),
		Expected:   map[string]any{"one_of_required": a.alts},
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// leaf picks the most specific cause: the deepest instance location, then
// the first in schema order. For oneOf/anyOf groups it descends into the
// first branch that got furthest.
func leaf(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	best := ve
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			if best == ve || len(v.InstanceLocation) > len(best.InstanceLocation) {
				best = v
			}
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	return best
}

// project turns one validation failure into the safe INVALID_ARGUMENT error:
// field points into the arguments, constraint into the schema, expected is
// copied from the schema at constraint. The rejected value is never echoed.
func (e *entry) project(v *jsonschema.ValidationError) *contract.Error {
	field := pointer(v.InstanceLocation)
	schemaPtr := ""
	if i := strings.Index(v.SchemaURL, "#"); i >= 0 {
		schemaPtr = v.SchemaURL[i+1:]
	}
	kw := v.ErrorKind.KeywordPath()
	constraint := schemaPtr + pointer(kw)
	msg := "argument does not match the input schema"
	switch k := v.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) > 0 {
			field = field + "/" + escape(k.Missing[0])
		}
		msg = "a required argument is missing"
	case *kind.DependentRequired:
		// The field is the given member that needs the others.
		field = field + "/" + escape(k.Prop)
		msg = k.Prop + " requires " + strings.Join(k.Missing, ", ") + ", which is missing"
	case *kind.AdditionalProperties:
		msg = "an argument is not accepted by this tool"
		// The name is the caller's own input: point at it only when it is
		// short and printable, never echo a huge or binary key.
		if len(k.Properties) > 0 && safeName(k.Properties[0]) {
			field = field + "/" + escape(k.Properties[0])
		} else if len(k.Properties) > 0 {
			msg = "an argument name that is too long or not printable is not accepted by this tool"
		}
	case *kind.Enum, *kind.Const:
		msg = "argument is not one of the accepted values"
	case *kind.Type:
		msg = "argument has the wrong type"
	case *kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum:
		msg = "argument is out of range"
	case *kind.MinLength, *kind.MaxLength, *kind.MinItems, *kind.MaxItems:
		msg = "argument has the wrong length"
	case *kind.UniqueItems:
		msg = "argument repeats an item; items must be unique"
	case *kind.Pattern, *kind.Format:
		msg = "argument has the wrong format"
	case *kind.OneOf, *kind.AnyOf:
		msg = "argument matches none of the accepted shapes"
	case *kind.FalseSchema:
		msg = "an argument is not accepted here"
	}
	if field == "" {
		msg += " (at the top level)"
	} else {
		msg += " (at " + field + ")"
	}
	return &contract.Error{
		Code:       contract.CodeInvalidArgument,
		Message:    msg,
		Retryable:  false,
		Field:      field,
		Constraint: constraint,
		Expected:   e.expected(schemaPtr, kw),
	}
}

// expected copies the keyword's value from the schema (and, for
// additionalProperties, the accepted property names).
func (e *entry) expected(schemaPtr string, kw []string) any {
	node := resolve(e.doc, schemaPtr)
	obj, ok := node.(map[string]any)
	if !ok || len(kw) == 0 {
		return nil
	}
	val := resolve(node, pointer(kw))
	out := map[string]any{kw[0]: val}
	if kw[0] == "additionalProperties" {
		if props, ok := obj["properties"].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sortStrings(names)
			out["properties"] = names
		}
	}
	if kw[0] == "type" || kw[0] == "required" || kw[0] == "enum" {
		return out
	}
	if t, ok := obj["type"]; ok {
		out["type"] = t
	}
	return out
}

func resolve(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func pointer(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// MaxEchoedName bounds an unknown argument name that an error may point at.
const MaxEchoedName = 64

func safeName(n string) bool {
	if len(n) == 0 || len(n) > MaxEchoedName {
		return false
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return false
		}
	}
	return true
}

// integralNumbers rewrites numbers with an integral value written as
// decimals or exponents (1.0, 2e3) as plain integers: JSON Schema calls them
// integers, so they pass "type": "integer", and handlers decoding into Go
// ints must accept them too. Other values are untouched.
func integralNumbers(args json.RawMessage) json.RawMessage {
	if !strings.ContainsAny(string(args), ".eE") {
		return args
	}
	d := json.NewDecoder(strings.NewReader(string(args)))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return args
	}
	changed := false
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		case json.Number:
			s := string(t)
			if !strings.ContainsAny(s, ".eE") {
				return t
			}
			r, ok := new(big.Rat).SetString(s)
			if ok && r.IsInt() && r.Num().BitLen() < 64 {
				changed = true
				return json.Number(r.Num().String())
			}
		}
		return x
	}
	v = walk(v)
	if !changed {
		return args
	}
	b, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return b
}
