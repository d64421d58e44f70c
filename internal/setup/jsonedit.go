package setup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/tailscale/hujson"
)

// maxNesting bounds the depth of arrays and objects in a JSON/JSONC client
// configuration; deeper documents are refused before hujson parses them
// (hujson recurses once per level).
const maxNesting = 1000

// maxConfigBytes bounds the size of a client configuration file setup reads.
const maxConfigBytes = 64 << 20

// kv is one member of an ordered JSON object (the entry setup writes keeps
// its keys in this order).
type kv struct {
	Key   string
	Value any
}

// entryObject is an ordered JSON object.
type entryObject []kv

// MarshalJSON writes the members in order, compact, without HTML escaping.
func (o entryObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalCompact(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshalCompact(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// formatJSON renders v as JSON text that starts at a column whose line is
// indented by prefix, with indentation unit unit: objects setup builds
// (entryObject) one member per line, everything else (arrays of strings,
// scalars) on one line; multiline false renders all of it on one line.
func formatJSON(v any, prefix, unit string, multiline bool) ([]byte, error) {
	o, ok := v.(entryObject)
	if !ok || !multiline || len(o) == 0 {
		c, err := marshalCompact(v)
		if err != nil {
			return nil, err
		}
		return spaceCompact(c), nil
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, m := range o {
		k, err := marshalCompact(m.Key)
		if err != nil {
			return nil, err
		}
		val, err := formatJSON(m.Value, prefix+unit, unit, true)
		if err != nil {
			return nil, err
		}
		b.WriteString(prefix + unit)
		b.Write(k)
		b.WriteString(": ")
		b.Write(val)
		if i < len(o)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(prefix + "}")
	return b.Bytes(), nil
}

// spaceCompact puts one space after each ':' and ',' outside strings, the
// way one-line JSON is usually written by hand.
func spaceCompact(c []byte) []byte {
	var b bytes.Buffer
	in, esc := false, false
	for _, ch := range c {
		b.WriteByte(ch)
		switch {
		case esc:
			esc = false
		case in && ch == '\\':
			esc = true
		case ch == '"':
			in = !in
		case !in && (ch == ':' || ch == ','):
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

// parseJSONC parses a JSON or JSONC document and refuses what setup cannot
// edit unambiguously: invalid syntax, nesting beyond maxNesting, a root that
// is not an object, and duplicate member names anywhere in the document.
// Errors are *ConfigError with the file, line and column.
func parseJSONC(path string, doc []byte) (hujson.Value, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}\n")
	}
	if off, ok := nestingWithin(doc, maxNesting); !ok {
		line, col := lineColumn(doc, off)
		return hujson.Value{}, &ConfigError{Path: path, Line: line, Column: col, Reason: fmt.Sprintf("nested more than %d levels deep", maxNesting)}
	}
	v, err := hujson.Parse(doc)
	if err != nil {
		line, col, reason := hujsonErrorPosition(err)
		return hujson.Value{}, &ConfigError{Path: path, Line: line, Column: col, Reason: reason}
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		line, col := lineColumn(doc, v.StartOffset)
		return hujson.Value{}, &ConfigError{Path: path, Line: line, Column: col, Reason: "the top-level value is not an object"}
	}
	if err := checkDuplicates(path, doc, obj); err != nil {
		return hujson.Value{}, err
	}
	return v, nil
}

// hujsonErrorPosition takes "hujson: line L, column C: reason" apart.
func hujsonErrorPosition(err error) (line, col int, reason string) {
	msg := err.Error()
	if _, e := fmt.Sscanf(msg, "hujson: line %d, column %d:", &line, &col); e == nil {
		if i := strings.Index(msg, ": "); i >= 0 {
			rest := msg[i+2:]
			if j := strings.Index(rest, ": "); j >= 0 {
				return line, col, rest[j+2:]
			}
		}
	}
	return 0, 0, strings.TrimPrefix(msg, "hujson: ")
}

// checkDuplicates walks every object and refuses a member name that occurs
// twice (after unescaping): clients disagree on which one wins.
func checkDuplicates(path string, doc []byte, root *hujson.Object) error {
	var walk func(v hujson.ValueTrimmed) error
	walk = func(v hujson.ValueTrimmed) error {
		switch t := v.(type) {
		case *hujson.Object:
			seen := map[string]int{}
			for _, m := range t.Members {
				name := m.Name.Value.(hujson.Literal).String()
				if first, ok := seen[name]; ok {
					line, col := lineColumn(doc, m.Name.StartOffset)
					fl, _ := lineColumn(doc, first)
					return &ConfigError{Path: path, Line: line, Column: col, Reason: fmt.Sprintf("duplicate key %q (first at line %d): which one a client uses is ambiguous", name, fl)}
				}
				seen[name] = m.Name.StartOffset
				if err := walk(m.Value.Value); err != nil {
					return err
				}
			}
		case *hujson.Array:
			for i := range t.Elements {
				if err := walk(t.Elements[i].Value); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(root)
}

// nestingWithin reports whether arrays and objects in doc (outside strings
// and comments) nest at most max levels; when not, the offset where the
// limit was passed.
func nestingWithin(doc []byte, max int) (int, bool) {
	depth := 0
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(doc) && doc[i+1] == '/' {
				for i < len(doc) && doc[i] != '\n' {
					i++
				}
			} else if i+1 < len(doc) && doc[i+1] == '*' {
				end := bytes.Index(doc[i+2:], []byte("*/"))
				if end < 0 {
					return 0, true // unterminated: the parser reports it
				}
				i += end + 3
			}
		case '[', '{':
			depth++
			if depth > max {
				return i, false
			}
		case ']', '}':
			depth--
		}
	}
	return 0, true
}

func lineColumn(b []byte, n int) (line, col int) {
	if n > len(b) {
		n = len(b)
	}
	line = 1 + bytes.Count(b[:n], []byte("\n"))
	col = 1 + n - (bytes.LastIndexByte(b[:n], '\n') + 1)
	return line, col
}

// member returns the index of the member named name, or -1.
func member(obj *hujson.Object, name string) int {
	for i, m := range obj.Members {
		if m.Name.Value.(hujson.Literal).String() == name {
			return i
		}
	}
	return -1
}

// layout describes how an object's members are laid out: on their own
// lines with indent (closing brace indented by closeIndent), or on one line.
type layout struct {
	multiline   bool
	indent      string
	closeIndent string
}

// afterLastNewline returns what follows the last newline of extra, and
// whether that is only spaces and tabs (an indentation).
func afterLastNewline(extra []byte) (string, bool) {
	i := bytes.LastIndexByte(extra, '\n')
	if i < 0 {
		return "", false
	}
	s := string(extra[i+1:])
	return s, strings.Trim(s, " \t") == ""
}

// objectLayout infers the layout of obj, whose own line is indented by
// indent, from its members; an empty object is laid out like its parent.
func objectLayout(doc []byte, v *hujson.Value, indent, unit string, parentMultiline bool) layout {
	obj := v.Value.(*hujson.Object)
	l := layout{closeIndent: indent}
	if len(obj.Members) == 0 {
		l.multiline = parentMultiline
		l.indent = indent + unit
		return l
	}
	l.multiline = bytes.ContainsRune(doc[v.StartOffset:v.EndOffset], '\n')
	if in, ok := afterLastNewline(obj.Members[0].Name.BeforeExtra); ok {
		l.indent = in
	} else {
		l.indent = indent + unit
	}
	if in, ok := afterLastNewline(obj.AfterExtra); ok {
		l.closeIndent = in
	}
	return l
}

// indentUnit infers the indentation step of a document from its root
// object (two spaces when nothing is indented).
func indentUnit(root *hujson.Object) string {
	if len(root.Members) > 0 {
		if in, ok := afterLastNewline(root.Members[0].Name.BeforeExtra); ok && in != "" {
			return in
		}
	}
	return "  "
}

// insertMember appends name: val to obj so that the text before the
// object's closing brace keeps its place and a comment on the previous last
// member's line stays on that line. removeMember undoes it byte for byte.
func insertMember(obj *hujson.Object, name string, val hujson.Value, l layout) {
	nameLit := hujson.String(name)
	ae := []byte(obj.AfterExtra)
	var before, after []byte
	trailing := len(obj.Members) > 0 && obj.Members[len(obj.Members)-1].Value.AfterExtra != nil
	switch {
	case !l.multiline:
		before = []byte(" ")
		if len(obj.Members) == 0 {
			before = nil
		}
		after = ae
	case bytes.IndexByte(ae, '\n') >= 0:
		i := bytes.IndexByte(ae, '\n')
		before = append(append([]byte{}, ae[:i+1]...), l.indent...)
		after = append([]byte("\n"), ae[i+1:]...)
	case len(obj.Members) == 0:
		before = append(append([]byte{}, ae...), "\n"+l.indent...)
		after = []byte("\n" + l.closeIndent)
	default:
		before = []byte("\n" + l.indent)
		after = ae
	}
	val.BeforeExtra = []byte(" ")
	if trailing {
		val.AfterExtra = []byte{}
	} else {
		val.AfterExtra = nil
	}
	obj.Members = append(obj.Members, hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: before, Value: nameLit},
		Value: val,
	})
	obj.AfterExtra = after
}

// removeMember deletes member k of obj, the inverse of insertMember when k
// is the last member.
func removeMember(obj *hujson.Object, k int) {
	ours := obj.Members[k]
	last := k == len(obj.Members)-1
	if !last {
		next := &obj.Members[k+1].Name
		be := ours.Name.BeforeExtra
		keep := be
		if i := bytes.IndexByte(be, '\n'); i >= 0 {
			keep = be[:i] // a comment on the previous member's line stays
		} else {
			keep = nil
		}
		next.BeforeExtra = append(append([]byte{}, keep...), next.BeforeExtra...)
		obj.Members = append(obj.Members[:k], obj.Members[k+1:]...)
		return
	}
	trailing := ours.Value.AfterExtra != nil
	ae := []byte(obj.AfterExtra)
	be := []byte(ours.Name.BeforeExtra)
	if _, ok := afterLastNewline(be); ok {
		head := be[:bytes.LastIndexByte(be, '\n')+1]
		var nae []byte
		if bytes.HasPrefix(ae, []byte("\n")) {
			nae = append(append([]byte{}, head...), ae[1:]...)
		} else {
			nae = append(append([]byte{}, head[:len(head)-1]...), ae...)
		}
		if k == 0 && strings.Trim(string(head), " \t") == "\n" && strings.Trim(string(ae), " \t") == "\n" {
			// The object is empty again: `{}` or `{ }` as it was (`{\n}`
			// gave the same text and becomes `{}`).
			nae = head[:len(head)-1]
		}
		ae = nae
	}
	obj.Members = obj.Members[:k]
	if k > 0 {
		prev := &obj.Members[k-1].Value
		if trailing && prev.AfterExtra == nil {
			prev.AfterExtra = []byte{}
		}
		if !trailing && prev.AfterExtra != nil {
			ae = append(append([]byte{}, prev.AfterExtra...), ae...)
			prev.AfterExtra = nil
		}
	}
	obj.AfterExtra = ae
}

// jsonEdit is the result of editing one JSON/JSONC document.
type jsonEdit struct {
	out     []byte
	changed bool
}

// upsertJSON sets doc's container[name] to the members of want, keeping
// every other member of an existing entry and every unrelated byte.
func upsertJSON(path string, doc []byte, container, name string, want entryObject) (jsonEdit, error) {
	v, err := parseJSONC(path, doc)
	if err != nil {
		return jsonEdit{}, err
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}\n")
	}
	root := v.Value.(*hujson.Object)
	unit := indentUnit(root)
	rootLayout := objectLayout(doc, &v, "", unit, true)
	ci := member(root, container)
	changed := false
	if ci < 0 {
		text, err := formatJSON(entryObject{{name, want}}, rootLayout.indent, unit, rootLayout.multiline)
		if err != nil {
			return jsonEdit{}, err
		}
		val, err := hujson.Parse(text)
		if err != nil {
			return jsonEdit{}, err
		}
		insertMember(root, container, val, rootLayout)
		changed = true
	} else {
		cv := &root.Members[ci].Value
		cobj, ok := cv.Value.(*hujson.Object)
		if !ok {
			line, col := lineColumn(doc, cv.StartOffset)
			return jsonEdit{}, &ConfigError{Path: path, Line: line, Column: col, Reason: fmt.Sprintf("%q is not an object", container)}
		}
		cl := objectLayout(doc, cv, rootLayout.indent, unit, rootLayout.multiline)
		ei := member(cobj, name)
		if ei < 0 {
			text, err := formatJSON(want, cl.indent, unit, cl.multiline)
			if err != nil {
				return jsonEdit{}, err
			}
			val, err := hujson.Parse(text)
			if err != nil {
				return jsonEdit{}, err
			}
			insertMember(cobj, name, val, cl)
			changed = true
		} else {
			ev := &cobj.Members[ei].Value
			eobj, ok := ev.Value.(*hujson.Object)
			if !ok {
				line, col := lineColumn(doc, ev.StartOffset)
				return jsonEdit{}, &ConfigError{Path: path, Line: line, Column: col, Reason: fmt.Sprintf("%s.%s is not an object", container, name)}
			}
			el := objectLayout(doc, ev, cl.indent, unit, cl.multiline)
			for _, m := range want {
				text, err := formatJSON(m.Value, el.indent, unit, el.multiline)
				if err != nil {
					return jsonEdit{}, err
				}
				val, err := hujson.Parse(text)
				if err != nil {
					return jsonEdit{}, err
				}
				mi := member(eobj, m.Key)
				if mi < 0 {
					insertMember(eobj, m.Key, val, el)
					changed = true
					continue
				}
				if sameJSON(eobj.Members[mi].Value, m.Value) {
					continue
				}
				eobj.Members[mi].Value.Value = val.Value
				changed = true
			}
		}
	}
	if !changed {
		return jsonEdit{out: doc}, nil
	}
	out := v.Pack()
	if err := verifyJSON(path, doc, out, func(m map[string]any) {
		c, _ := m[container].(map[string]any)
		if c == nil {
			c = map[string]any{}
			m[container] = c
		}
		e, _ := c[name].(map[string]any)
		if e == nil {
			e = map[string]any{}
			c[name] = e
		}
		for _, w := range want {
			e[w.Key] = normalize(w.Value)
		}
	}); err != nil {
		return jsonEdit{}, err
	}
	return jsonEdit{out: out, changed: true}, nil
}

// removeJSON deletes doc's container[name], and the container when that
// leaves it empty.
func removeJSON(path string, doc []byte, container, name string) (jsonEdit, error) {
	v, err := parseJSONC(path, doc)
	if err != nil {
		return jsonEdit{}, err
	}
	root := v.Value.(*hujson.Object)
	ci := member(root, container)
	if ci < 0 {
		return jsonEdit{out: doc}, nil
	}
	cobj, ok := root.Members[ci].Value.Value.(*hujson.Object)
	if !ok {
		line, col := lineColumn(doc, root.Members[ci].Value.StartOffset)
		return jsonEdit{}, &ConfigError{Path: path, Line: line, Column: col, Reason: fmt.Sprintf("%q is not an object", container)}
	}
	ei := member(cobj, name)
	if ei < 0 {
		return jsonEdit{out: doc}, nil
	}
	removeMember(cobj, ei)
	dropContainer := len(cobj.Members) == 0 && strings.Trim(string(cobj.AfterExtra), " \t\r\n") == ""
	if dropContainer {
		removeMember(root, ci)
	}
	out := v.Pack()
	if err := verifyJSON(path, doc, out, func(m map[string]any) {
		c, _ := m[container].(map[string]any)
		delete(c, name)
		if dropContainer {
			delete(m, container)
		}
	}); err != nil {
		return jsonEdit{}, err
	}
	return jsonEdit{out: out, changed: true}, nil
}

// readJSONEntry returns container[name] of doc decoded, or nil when absent.
func readJSONEntry(path string, doc []byte, container, name string) (map[string]any, error) {
	if _, err := parseJSONC(path, doc); err != nil {
		return nil, err
	}
	m := decodeJSONC(doc)
	c, _ := m[container].(map[string]any)
	e, _ := c[name].(map[string]any)
	return e, nil
}

// decodeJSONC decodes a JSONC document into plain Go values (numbers as
// json.Number); nil when it is not valid.
func decodeJSONC(doc []byte) map[string]any {
	if len(bytes.TrimSpace(doc)) == 0 {
		return map[string]any{}
	}
	std, err := hujson.Standardize(append([]byte{}, doc...))
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(std))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// normalize turns a Go value into what decoding its JSON yields.
func normalize(v any) any {
	b, _ := marshalCompact(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	dec.Decode(&out)
	return out
}

func sameJSON(v hujson.Value, want any) bool {
	std := v.Clone()
	std.Standardize()
	dec := json.NewDecoder(bytes.NewReader(std.Pack()))
	dec.UseNumber()
	var got any
	if dec.Decode(&got) != nil {
		return false
	}
	return reflect.DeepEqual(got, normalize(want))
}

// verifyJSON parses the edited document again and checks that it means
// exactly the original with expect applied: nothing else changed.
func verifyJSON(path string, before, after []byte, expect func(map[string]any)) error {
	if _, err := parseJSONC(path, after); err != nil {
		return fmt.Errorf("internal error: the edited %s does not parse (%v); nothing was written", path, err)
	}
	want := decodeJSONC(before)
	got := decodeJSONC(after)
	if want == nil || got == nil {
		return fmt.Errorf("internal error: cannot decode %s for verification; nothing was written", path)
	}
	expect(want)
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("internal error: the edit of %s would change more than the inquest entry; nothing was written", path)
	}
	return nil
}
