package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinInspectBatchReportsPerItem: `inquest bin inspect missing a b`
// inspects every item, prints each item's envelope (an error naming its
// index and path) and exits 1 because one item failed.
func TestBinInspectBatchReportsPerItem(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"bin", "inspect", "--json", missing, self, self}, strings.NewReader(""), &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errb.String())
	}
	dec := json.NewDecoder(&out)
	var envs []map[string]any
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("output is not a stream of envelopes: %v", err)
		}
		envs = append(envs, m)
	}
	if len(envs) != 3 {
		t.Fatalf("%d envelopes, want one per item (3)", len(envs))
	}
	e, _ := envs[0]["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if e["code"] != "INVALID_ARGUMENT" || d["index"] != float64(0) || d["path"] != missing {
		t.Fatalf("item 0: %v, want INVALID_ARGUMENT with index 0 and its path", envs[0])
	}
	for i, m := range envs[1:] {
		if m["error"] != nil || m["data"] == nil {
			t.Errorf("item %d was not inspected: %v", i+1, m)
		}
	}
	// Text mode names each item before its table; a failed item is told
	// on stderr with its index and path.
	out.Reset()
	errb.Reset()
	code = Run(context.Background(), []string{"bin", "inspect", missing, self}, strings.NewReader(""), &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "== [1] "+self) || strings.Contains(out.String(), "INVALID_ARGUMENT") || !strings.Contains(errb.String(), "\n  index: 0\n") {
		t.Fatalf("text batch: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// TestBinFlagErrorsAreEnvelopes: a flag value the parser rejects is an
// INVALID_ARGUMENT envelope naming the tool argument, as over MCP.
func TestBinFlagErrorsAreEnvelopes(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"bin", "symbols", "--limit", "2.5", self}, "/limit"},
		{[]string{"bin", "disasm", "--max", "x", self}, "/max_instructions"},
		{[]string{"bin", "strings", "--min-length", "1e3", self}, "/min_length"},
		{[]string{"bin", "symbols", "--no-such-flag", self}, ""},
	} {
		m, code := runAnalyzeCLI(t, append([]string{c.args[0], c.args[1], "--json"}, c.args[2:]...)...)
		e, _ := m["error"].(map[string]any)
		if code != 1 || e["code"] != "INVALID_ARGUMENT" || (c.field != "" && e["field"] != c.field) {
			t.Errorf("%v: exit %d %v, want an INVALID_ARGUMENT envelope at %q", c.args, code, m, c.field)
		}
	}
}
