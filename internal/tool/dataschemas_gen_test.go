package tool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	genDir     = flag.String("gen", "", "rewrite dataschemas.json from the result logs (ResultLogEnv) in this directory")
	samplesDir = flag.String("samples", "", "with -gen: also write up to three of each tool's logged results (the smallest, the middle and the largest under 16 KiB) to DIR/TOOL.jsonl")
)

// TestGenerateDataSchemas rewrites dataschemas.json from result logs when
// -gen names their directory (one TOOL.jsonl per tool, as ResultLogEnv
// writes them): each tool's data schema is the union of the shapes of
// its logged data, with types as observed (a number is "number": a float
// that happened to be whole is still a float), no required members and
// open objects, so a member the logs did not show is still accepted.
// Tools without a log keep their previous schema. Without -gen it checks
// that the table decodes and that every schema in it is an object
// schema.
func TestGenerateDataSchemas(t *testing.T) {
	if *genDir == "" {
		var m map[string]map[string]any
		if err := json.Unmarshal(dataSchemasJSON, &m); err != nil {
			t.Fatalf("dataschemas.json: %v", err)
		}
		for name, s := range m {
			if len(s) == 0 {
				t.Errorf("%s: empty data schema", name)
			}
		}
		return
	}
	old := map[string]json.RawMessage{}
	json.Unmarshal(dataSchemasJSON, &old)
	logs, _ := filepath.Glob(filepath.Join(*genDir, "*.jsonl"))
	for _, p := range logs {
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var sh *shape
		var lines [][]byte
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if len(sc.Bytes()) <= 16<<10 {
				lines = append(lines, append([]byte(nil), sc.Bytes()...))
			}
			var env struct {
				Data any `json:"data"`
			}
			d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			d.UseNumber()
			if d.Decode(&env) != nil {
				continue
			}
			sh = sh.add(env.Data)
		}
		f.Close()
		if sh == nil {
			continue
		}
		if *samplesDir != "" && len(lines) > 0 {
			sort.Slice(lines, func(i, j int) bool { return len(lines[i]) < len(lines[j]) })
			pick := [][]byte{lines[0]}
			for _, l := range [][]byte{lines[len(lines)/2], lines[len(lines)-1]} {
				if !bytes.Equal(l, pick[len(pick)-1]) {
					pick = append(pick, l)
				}
			}
			if err := os.WriteFile(filepath.Join(*samplesDir, name+".jsonl"), append(bytes.Join(pick, []byte("\n")), '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old[name] = sh.within(maxDataSchema)
	}
	names := make([]string, 0, len(old))
	for n := range old {
		names = append(names, n)
	}
	sort.Strings(names)
	var out bytes.Buffer
	out.WriteString("{\n")
	for i, n := range names {
		k, _ := json.Marshal(n)
		out.Write(k)
		out.WriteString(": ")
		out.Write(old[n])
		if i < len(names)-1 {
			out.WriteString(",")
		}
		out.WriteString("\n")
	}
	out.WriteString("}\n")
	if err := os.WriteFile("dataschemas.json", out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shape is the union of observed JSON values at one place.
type shape struct {
	types map[string]bool
	props map[string]*shape
	order []string
	items *shape
	// dynamic marks an object whose keys are data (PIDs, paths, metric
	// values), described as any object.
	dynamic bool
}

var memberName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// maxMembers is the most members an object may show before it is taken
// for a map keyed by data.
const maxMembers = 48

func (s *shape) add(v any) *shape {
	if s == nil {
		s = &shape{types: map[string]bool{}}
	}
	switch x := v.(type) {
	case nil:
		s.types["null"] = true
	case bool:
		s.types["boolean"] = true
	case json.Number:
		s.types["number"] = true
	case string:
		s.types["string"] = true
	case []any:
		s.types["array"] = true
		for _, e := range x {
			s.items = s.items.add(e)
		}
	case map[string]any:
		s.types["object"] = true
		if s.props == nil {
			s.props = map[string]*shape{}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !memberName.MatchString(k) {
				s.dynamic = true
			}
			if s.props[k] == nil {
				s.order = append(s.order, k)
			}
			s.props[k] = s.props[k].add(x[k])
		}
		if len(s.props) > maxMembers {
			s.dynamic = true
		}
	}
	return s
}

// maxDataSchema is the most bytes one tool's data schema may take in
// tools/list: past it, the description stops expanding members.
const maxDataSchema = 650

// within returns a schema of s that fits in limit bytes: data's members
// with their types, then, while room remains, the members of nested
// objects and array items, breadth first, the rows (data.rows and what
// they hold) before anything else. A member not expanded keeps its type.
func (s *shape) within(limit int) json.RawMessage {
	open := map[*shape]bool{s: true}
	type cand struct {
		sh    *shape
		depth int
		rows  bool
	}
	var queue []cand
	push := func(sh *shape, depth int, rows bool) {
		for _, k := range sh.order {
			c := sh.props[k]
			if c.expandable() {
				queue = append(queue, cand{c, depth + 1, rows || (depth == 0 && k == "rows")})
			}
		}
		if sh.items != nil && sh.items.expandable() {
			queue = append(queue, cand{sh.items, depth + 1, rows})
		}
	}
	push(s, 0, false)
	b, _ := json.Marshal(s.schema(open))
	for len(queue) > 0 {
		// The next candidate: rows first, then the shallowest.
		best := 0
		for i, c := range queue {
			if (c.rows && !queue[best].rows) || (c.rows == queue[best].rows && c.depth < queue[best].depth) {
				best = i
			}
		}
		c := queue[best]
		queue = append(queue[:best], queue[best+1:]...)
		open[c.sh] = true
		nb, _ := json.Marshal(s.schema(open))
		if len(nb) > limit {
			delete(open, c.sh)
			continue
		}
		b = nb
		push(c.sh, c.depth, c.rows)
	}
	return b
}

// onlyNull reports whether every value seen here was null.
func (s *shape) onlyNull() bool {
	return len(s.types) == 1 && s.types["null"]
}

// expandable reports whether s has members or items to describe.
func (s *shape) expandable() bool {
	return (s.types["object"] && !s.dynamic && len(s.props) > 0) || (s.types["array"] && s.items != nil)
}

// schema describes s: its type, and the members or items of the shapes
// in open (the others are any object, any array). Every member below
// data may also be null (an unknown fact is null, never a made-up value,
// whether or not the logs showed one), and a member only ever seen null
// is left out (its type is not known).
func (s *shape) schema(open map[*shape]bool) map[string]any {
	return s.schemaAt(open, true)
}

func (s *shape) schemaAt(open map[*shape]bool, root bool) map[string]any {
	var types []string
	for _, t := range []string{"null", "boolean", "number", "string", "array", "object"} {
		if s.types[t] || (t == "null" && !root) {
			types = append(types, t)
		}
	}
	out := map[string]any{}
	if len(types) == 1 {
		out["type"] = types[0]
	} else {
		out["type"] = types
	}
	if !open[s] {
		return out
	}
	if s.types["object"] && !s.dynamic && len(s.props) > 0 {
		p := map[string]any{}
		for _, k := range s.order {
			if c := s.props[k]; !c.onlyNull() {
				p[k] = c.schemaAt(open, false)
			}
		}
		if len(p) > 0 {
			out["properties"] = p
		}
	}
	if s.types["array"] && s.items != nil {
		if !s.items.onlyNull() {
			out["items"] = s.items.schemaAt(open, false)
		}
	}
	return out
}
