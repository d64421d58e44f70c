package setup

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlDoc is a TOML document located by go-toml's parser: where the one
// table setup owns ([mcp_servers.NAME]) starts and ends, and its key/value
// lines. Everything outside that table is left as bytes.
type tomlDoc struct {
	path  string
	doc   []byte
	value map[string]any // the whole document decoded
	table []string       // the owned table's key path
	// start..end is the owned table with its contiguous sub-tables, from
	// the start of its header line to just after its last line; start is
	// -1 when the table is absent.
	start, end int
	// headerEnd is the offset after the header line.
	headerEnd int
	// keys are the direct key/value lines of the owned table.
	keys []tomlKey
}

type tomlKey struct {
	name       string
	start, end int // the key = value expression
	lineEnd    int // after its line (inline comment and newline)
}

// parseTOML decodes doc (refusing invalid syntax and redefined keys with
// the file, line and reason) and locates table in it. A table defined any
// other way than by its own [header] (dotted keys, an inline table, an
// array of tables) is refused: setup would have to rewrite user text.
func parseTOML(path string, doc []byte, table []string) (*tomlDoc, error) {
	t := &tomlDoc{path: path, doc: doc, table: table, start: -1}
	if err := toml.Unmarshal(doc, &t.value); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, &ConfigError{Path: path, Line: line, Column: col, Reason: strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return nil, &ConfigError{Path: path, Reason: err.Error()}
	}
	if t.value == nil {
		t.value = map[string]any{}
	}
	p := unstable.Parser{}
	p.Reset(doc)
	var current []string
	inOurs := false   // inside the owned table or a sub-table of it
	ownsKeys := false // inside the owned table itself
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys, first, last := exprKey(e)
			lineStart := bytes.LastIndexByte(doc[:first], '\n') + 1
			lineEnd := endOfLine(doc, last)
			current = keys
			switch {
			case slices.Equal(keys, table) && e.Kind == unstable.Table:
				if t.start >= 0 {
					return nil, t.refuse(lineStart, "the table is defined twice")
				}
				t.start, t.headerEnd, t.end = lineStart, lineEnd, lineEnd
				inOurs, ownsKeys = true, true
			case hasPrefix(keys, table):
				if !inOurs || e.Kind == unstable.ArrayTable && len(keys) == len(table) {
					return nil, t.refuse(lineStart, "it is split across the file or is an array of tables; edit it by hand")
				}
				t.end = lineEnd
				ownsKeys = false
			default:
				inOurs, ownsKeys = false, false
			}
		case unstable.KeyValue:
			keys, first, _ := exprKey(e)
			full := append(slices.Clone(current), keys...)
			raw := e.Raw
			start, end := int(raw.Offset), int(raw.Offset+raw.Length)
			if start > first {
				start = first
			}
			if inOurs {
				t.end = endOfLine(doc, end)
				if ownsKeys && len(keys) == 1 {
					t.keys = append(t.keys, tomlKey{name: keys[0], start: start, end: end, lineEnd: endOfLine(doc, end)})
				}
				continue
			}
			if hasPrefix(full, table) || hasPrefix(table, full) && len(full) < len(table) && isTableValue(t.value, full) {
				return nil, t.refuse(bytes.LastIndexByte(doc[:start], '\n')+1, "it is defined with dotted keys or an inline table; edit it by hand")
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, &ConfigError{Path: path, Reason: err.Error()}
	}
	return t, nil
}

// isTableValue reports whether the key path names a table inside v that
// contains (part of) the owned table, i.e. `mcp_servers = { inquest = ... }`.
func isTableValue(v map[string]any, keys []string) bool {
	var cur any = v
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		cur = m[k]
	}
	_, ok := cur.(map[string]any)
	return ok
}

func (t *tomlDoc) refuse(off int, why string) error {
	line, col := lineColumn(t.doc, off)
	return &ConfigError{Path: t.path, Line: line, Column: col, Reason: fmt.Sprintf("[%s] cannot be edited safely: %s", strings.Join(t.table, "."), why)}
}

// exprKey returns the key parts of a table header or key/value expression,
// the offset of its first key part and the offset after its last.
func exprKey(e *unstable.Node) (keys []string, first, last int) {
	first = -1
	it := e.Key()
	for it.Next() {
		n := it.Node()
		keys = append(keys, string(n.Data))
		if first < 0 {
			first = int(n.Raw.Offset)
		}
		last = int(n.Raw.Offset + n.Raw.Length)
	}
	return keys, first, last
}

// endOfLine returns the offset after the newline ending the line that
// contains off (or len(doc)).
func endOfLine(doc []byte, off int) int {
	if off > len(doc) {
		return len(doc)
	}
	i := bytes.IndexByte(doc[off:], '\n')
	if i < 0 {
		return len(doc)
	}
	return off + i + 1
}

func hasPrefix(s, prefix []string) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}

// tomlValue renders a string, bool or []string as TOML.
func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return tomlString(x)
	case bool:
		return strconv.FormatBool(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	panic(fmt.Sprintf("setup: no TOML form for %T", v))
}

// tomlString renders s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlTableHeader renders the header of the table path.
func tomlTableHeader(keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		bare := k != ""
		for _, r := range k {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				bare = false
			}
		}
		if bare {
			parts[i] = k
		} else {
			parts[i] = tomlString(k)
		}
	}
	return "[" + strings.Join(parts, ".") + "]"
}

// entryTOML renders want as the owned table.
func entryTOML(table []string, want entryObject) string {
	var b strings.Builder
	b.WriteString(tomlTableHeader(table) + "\n")
	for _, m := range want {
		fmt.Fprintf(&b, "%s = %s\n", m.Key, tomlValue(m.Value))
	}
	return b.String()
}

// splice is a replacement of doc[start:end] by text.
type splice struct {
	start, end int
	text       string
}

func applySplices(doc []byte, s []splice) []byte {
	sort.Slice(s, func(i, j int) bool { return s[i].start > s[j].start })
	out := append([]byte{}, doc...)
	for _, x := range s {
		out = append(out[:x.start], append([]byte(x.text), out[x.end:]...)...)
	}
	return out
}

// upsertTOML sets the owned table's keys to want, keeping its other keys,
// its comments and every byte outside it; an absent table is appended.
func upsertTOML(path string, doc []byte, table []string, want entryObject) (jsonEdit, error) {
	t, err := parseTOML(path, doc, table)
	if err != nil {
		return jsonEdit{}, err
	}
	var out []byte
	if t.start < 0 {
		out = append([]byte{}, doc...)
		switch {
		case len(bytes.TrimSpace(doc)) == 0:
			out = nil
		case bytes.HasSuffix(doc, []byte("\n")):
			out = append(out, '\n')
		default:
			out = append(out, "\n\n"...)
		}
		out = append(out, entryTOML(table, want)...)
	} else {
		entry := lookup(t.value, table)
		var edits []splice
		insertAt := t.headerEnd
		for _, k := range t.keys {
			insertAt = k.lineEnd
		}
		var added strings.Builder
		for _, m := range want {
			i := slices.IndexFunc(t.keys, func(k tomlKey) bool { return k.name == m.Key })
			line := fmt.Sprintf("%s = %s", m.Key, tomlValue(m.Value))
			if i < 0 {
				added.WriteString(line + "\n")
				continue
			}
			if reflect.DeepEqual(entry[m.Key], normalizeTOML(m.Value)) {
				continue
			}
			edits = append(edits, splice{t.keys[i].start, t.keys[i].end, line})
		}
		if added.Len() > 0 {
			text := added.String()
			if insertAt > 0 && doc[insertAt-1] != '\n' {
				text = "\n" + text
			}
			edits = append(edits, splice{insertAt, insertAt, text})
		}
		if len(edits) == 0 {
			return jsonEdit{out: doc}, nil
		}
		out = applySplices(doc, edits)
	}
	if err := verifyTOML(path, t.value, out, func(m map[string]any) {
		e := ensure(m, table)
		for _, w := range want {
			e[w.Key] = normalizeTOML(w.Value)
		}
	}); err != nil {
		return jsonEdit{}, err
	}
	return jsonEdit{out: out, changed: true}, nil
}

// removeTOML deletes the owned table and its contiguous sub-tables, and the
// blank line setup put before it.
func removeTOML(path string, doc []byte, table []string) (jsonEdit, error) {
	t, err := parseTOML(path, doc, table)
	if err != nil {
		return jsonEdit{}, err
	}
	if t.start < 0 {
		return jsonEdit{out: doc}, nil
	}
	start, end := t.start, t.end
	if start >= 2 && string(doc[start-2:start]) == "\n\n" && (end == len(doc) || doc[end] == '\n') {
		start--
	} else if start == 1 && doc[0] == '\n' && end == len(doc) {
		start = 0
	}
	out := append(append([]byte{}, doc[:start]...), doc[end:]...)
	if err := verifyTOML(path, t.value, out, func(m map[string]any) {
		parent := lookup(m, table[:len(table)-1])
		delete(parent, table[len(table)-1])
	}); err != nil {
		return jsonEdit{}, err
	}
	return jsonEdit{out: out, changed: true}, nil
}

// readTOMLEntry returns the owned table decoded, or nil when absent.
func readTOMLEntry(path string, doc []byte, table []string) (map[string]any, error) {
	t, err := parseTOML(path, doc, table)
	if err != nil {
		return nil, err
	}
	return lookup(t.value, table), nil
}

func lookup(m map[string]any, keys []string) map[string]any {
	cur := m
	for _, k := range keys {
		next, _ := cur[k].(map[string]any)
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

func ensure(m map[string]any, keys []string) map[string]any {
	cur := m
	for _, k := range keys {
		next, _ := cur[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	return cur
}

// normalizeTOML turns a Go value into what go-toml decodes its TOML to.
func normalizeTOML(v any) any {
	if ss, ok := v.([]string); ok {
		out := make([]any, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	return v
}

// dropEmptyTables removes tables that hold nothing: `[a.b]` implies an
// empty `a`, which an edit may or may not leave behind.
func dropEmptyTables(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			dropEmptyTables(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

// verifyTOML parses the edited document again and checks that it means the
// original with expect applied.
func verifyTOML(path string, before map[string]any, after []byte, expect func(map[string]any)) error {
	var got map[string]any
	if err := toml.Unmarshal(after, &got); err != nil {
		return fmt.Errorf("internal error: the edited %s does not parse (%v); nothing was written", path, err)
	}
	if got == nil {
		got = map[string]any{}
	}
	want := deepCopy(before)
	expect(want)
	dropEmptyTables(want)
	dropEmptyTables(got)
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("internal error: the edit of %s would change more than the inquest table; nothing was written", path)
	}
	return nil
}

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			out[k] = deepCopy(sub)
		} else {
			out[k] = v
		}
	}
	return out
}
