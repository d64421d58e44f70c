package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Define is the one way a tool is declared: t carries the fixed definition
// (name, description, strict input schema, annotations, paging, job flag)
// and run takes the arguments already validated against t.Input and decoded
// once into A. Define records A in t.Args, so the catalog test can check
// that the schema and the struct agree (every schema property has a field
// and every field a property).
//
// A is a struct whose exported fields carry `json` tags named exactly as
// the schema's properties. Optional scalars that must distinguish "absent"
// from the zero value are pointers; nested objects are structs or pointers
// to structs; free-form values are json.RawMessage.
func Define[A any](t Tool, run func(ctx context.Context, args A) (*contract.Result, error)) Tool {
	t.Args = reflect.TypeFor[A]()
	t.Handler = func(ctx context.Context, raw json.RawMessage) (*contract.Result, error) {
		a, err := Decode[A](raw)
		if err != nil {
			return nil, err
		}
		return run(ctx, a)
	}
	return t
}

// Decode decodes schema-valid arguments into A. Unknown fields are
// rejected (the strict schema already refused them; a field the struct
// lacks is a declaration defect, which the catalog test catches). A
// failure is INVALID_ARGUMENT naming the JSON Pointer of the offending
// field when encoding/json reports one.
func Decode[A any](raw json.RawMessage) (A, error) {
	var a A
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		e := contract.Errorf(contract.CodeInvalidArgument, "arguments do not decode: %v", err)
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			e.Field = "/" + strings.ReplaceAll(te.Field, ".", "/")
		}
		return a, e
	}
	return a, nil
}

// CheckArgs reports where t's input schema and its arguments type
// disagree: a schema property without a struct field, a tagged struct
// field without a schema property, at the top level and inside nested
// object properties whose field is a struct. It returns nil for a tool
// declared without Define (t.Args nil): the catalog test requires Args.
func CheckArgs(t Tool) error {
	if t.Args == nil {
		return fmt.Errorf("tool %q: declared without tool.Define (no arguments type)", t.Name)
	}
	var schema map[string]any
	if err := json.Unmarshal(t.Input, &schema); err != nil {
		return fmt.Errorf("tool %q: input schema is not JSON: %w", t.Name, err)
	}
	var problems []string
	agree("", schema, t.Args, &problems)
	if len(problems) > 0 {
		return fmt.Errorf("tool %q: schema and arguments type disagree: %s", t.Name, strings.Join(problems, "; "))
	}
	return nil
}

// agree compares one object schema with one struct type.
func agree(path string, schema map[string]any, typ reflect.Type, problems *[]string) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return // a map or json.RawMessage takes any object
	}
	if typ == reflect.TypeFor[json.RawMessage]() {
		return
	}
	props := objectProperties(schema)
	fields := map[string]reflect.Type{}
	collectFields(typ, fields)
	for name, sub := range props {
		ft, ok := fields[name]
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s/%s has no struct field", path, name))
			continue
		}
		if s, ok := sub.(map[string]any); ok {
			// A choice among branches (anyOf) is not compared: its
			// struct holds the fields of every branch, offered here or
			// not (a provider this host lacks).
			_, choice := s["anyOf"]
			if s["type"] == "object" && !choice {
				if _, has := s["properties"]; has {
					agree(path+"/"+name, s, ft, problems)
				}
			}
			if s["type"] == "array" {
				if items, ok := s["items"].(map[string]any); ok && items["type"] == "object" {
					et := ft
					for et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					_, choice := items["anyOf"]
					if et.Kind() == reflect.Slice && !choice {
						if _, has := items["properties"]; has {
							agree(path+"/"+name+"/*", items, et.Elem(), problems)
						}
					}
				}
			}
		}
	}
	for name := range fields {
		if _, ok := props[name]; !ok {
			*problems = append(*problems, fmt.Sprintf("%s/%s is a struct field without a schema property", path, name))
		}
	}
}

// objectProperties returns the properties an object schema accepts: its
// own and, for a choice among branches (anyOf: a provider's or a source's
// kind), every branch's, the first declaration of a name winning.
func objectProperties(schema map[string]any) map[string]any {
	own, _ := schema["properties"].(map[string]any)
	branches, _ := schema["anyOf"].([]any)
	if len(branches) == 0 {
		return own
	}
	out := map[string]any{}
	for k, v := range own {
		out[k] = v
	}
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		bp, _ := bm["properties"].(map[string]any)
		for k, v := range bp {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out
}

// collectFields maps the JSON names of typ's exported fields (embedded
// structs flattened, as encoding/json does) to their types.
func collectFields(typ reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				collectFields(et, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}
