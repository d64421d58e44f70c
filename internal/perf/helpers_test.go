package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// env is a perf runtime over a fresh evidence store, with its registry.
type env struct {
	t     testing.TB
	dir   string
	rt    *Runtime
	reg   *tool.Registry
	store string
	// ctx is the context of every call (context.Background when nil).
	ctx context.Context
}

func newEnv(t testing.TB) *env {
	t.Helper()
	storeDir := filepath.Join(t.TempDir(), "store")
	return newEnvAt(t, storeDir)
}

func newEnvAt(t testing.TB, storeDir string) *env {
	rt := New(Config{Sessions: true, OpenStore: func() (*evidence.Store, error) { return evidence.Open(storeDir) }})
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(rt)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &env{t: t, dir: t.TempDir(), rt: rt, reg: reg, store: storeDir}
}

// call runs a tool and returns its result as decoded JSON (the bytes an MCP
// client sees) and the error code ("" on success).
func (e *env) call(name string, args any) (map[string]any, contract.Code) {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	res, cerr := e.reg.Call(ctx, name, raw)
	body, isErr := contract.Marshal(res, cerr)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		e.t.Fatal(err)
	}
	if isErr {
		return m, contract.Code(m["error"].(map[string]any)["code"].(string))
	}
	return m, ""
}

func (e *env) mustCall(name string, args any) map[string]any {
	e.t.Helper()
	m, code := e.call(name, args)
	if code != "" {
		e.t.Fatalf("%s failed: %v", name, m["error"])
	}
	return m
}

// follow calls next_action until a page has none and returns every row.
func (e *env) follow(first map[string]any) ([]any, int) {
	e.t.Helper()
	rows := append([]any{}, data(first)["rows"].([]any)...)
	pages := 1
	cur := first
	for cur["next_action"] != nil {
		na := cur["next_action"].(map[string]any)
		cur = e.mustCall(na["tool"].(string), na["arguments"])
		rows = append(rows, data(cur)["rows"].([]any)...)
		pages++
	}
	return rows, pages
}

func data(m map[string]any) map[string]any { return m["data"].(map[string]any) }

func (e *env) write(name, content string) string {
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func pathSrc(p string, format ...string) map[string]any {
	s := map[string]any{"kind": "path", "path": p}
	if len(format) > 0 {
		s["format"] = format[0]
	}
	return s
}

// golden compares v (JSON-encoded, indented) with testdata/name, rewriting
// it with -update.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	p := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("missing golden %s; run go test -run %s -update", p, t.Name())
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from golden:\n got: %s\nwant: %s", p, got, want)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
