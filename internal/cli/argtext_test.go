package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONArgumentsKeepTheCause: --arguments and `inquest call` JSON text
// keep integers exact (end_ns 2^63-1 is accepted as over MCP), skip a UTF-8
// byte-order mark, and name a truncation with its byte in an error
// envelope.
func TestJSONArgumentsKeepTheCause(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	p := filepath.Join(t.TempDir(), "trace.json")
	os.WriteFile(p, []byte(`[{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"x"}]`), 0o644)
	for _, a := range []string{`{"start_ns":0,"end_ns":9223372036854775807}`, "\ufeff" + `{"start_ns":0,"end_ns":"9223372036854775807"}`} {
		m, code := runAnalyzeCLI(t, "analyze", "inspect_trace_window", p, "--arguments", a)
		if code != 0 || m["status"] != "complete" {
			t.Fatalf("--arguments %q: exit %d %v", a, code, m)
		}
	}
	m, code := runAnalyzeCLI(t, "analyze", "inspect_trace_window", p, "--arguments", `{"start_ns":0,`)
	e, _ := m["error"].(map[string]any)
	if code != 1 || e["code"] != "INVALID_ARGUMENT" || !strings.Contains(e["message"].(string), "truncated: it ends at byte 14") {
		t.Fatalf("truncated --arguments: exit %d %v", code, m)
	}
	m, code = runAnalyzeCLI(t, "analyze", "inspect_trace_window", p, "--arguments", `[1]`)
	if e, _ := m["error"].(map[string]any); code != 1 || e["code"] != "INVALID_ARGUMENT" {
		t.Fatalf("array --arguments: exit %d %v", code, m)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, code = runAnalyzeCLI(t, "call", "inspect_binary", "\ufeff"+`{"path":"`+bin+`"}`)
	if code != 0 || m["status"] == nil {
		t.Fatalf("call with a UTF-8 BOM: exit %d %v", code, m)
	}
	m, code = runAnalyzeCLI(t, "call", "inspect_binary", "")
	if e, _ := m["error"].(map[string]any); code != 1 || !strings.Contains(e["message"].(string), "is empty") {
		t.Fatalf("call with empty JSON: exit %d %v", code, m)
	}
}

// TestSchemaBoundsRenderAsIntegers: docs print a schema's integer bounds as
// the schema spells them, never as floats (9.007199254740991e+15).
func TestSchemaBoundsRenderAsIntegers(t *testing.T) {
	got := summarizeSchema([]byte(`{"type":"integer","minimum":0,"maximum":9223372036854775807}`))
	if want := "integer; minimum 0; maximum 9223372036854775807"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := summarizeSchema([]byte(`{"type":"integer","maximum":9007199254740991}`)); strings.Contains(got, "e+") {
		t.Fatalf("float rendering: %q", got)
	}
}
