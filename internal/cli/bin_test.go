package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestBinCommands drives the bin and har commands through the same tools
// an MCP client calls: tables by default, the envelope with --json, and
// error envelopes with exit status 1.
func TestBinCommands(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	out, errs, code := runCLI(t, "bin", "inspect", fixture)
	if code != 0 || !strings.Contains(out, "Full RELRO") || !strings.Contains(out, "EM_X86_64") { // checksec --file: Full RELRO
		t.Fatalf("inspect: %d %s %s", code, out, errs)
	}
	out, _, code = runCLI(t, "bin", "symbols", "--json", "--limit", "3", fixture)
	var env struct {
		Status string `json:"status"`
		Data   struct {
			Rows []map[string]any `json:"rows"`
			Next *string          `json:"next_cursor"`
		} `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil || len(env.Data.Rows) != 3 || env.Data.Next == nil {
		t.Fatalf("symbols --json: %d %s", code, out)
	}
	out2, _, code := runCLI(t, "bin", "symbols", "--json", "--limit", "3", "--cursor", *env.Data.Next, fixture)
	if code != 0 || out2 == out {
		t.Fatalf("second page: %d %s", code, out2)
	}
	_, _, code = runCLI(t, "bin", "symbols", "--json", "--limit", "4", "--cursor", *env.Data.Next, fixture)
	if code != 1 {
		t.Errorf("changed limit with cursor: exit %d, want 1", code)
	}
	out, _, code = runCLI(t, "bin", "strings", "--min-length", "8", fixture)
	if code != 0 || !strings.Contains(out, "OFFSET") {
		t.Errorf("strings: %d %s", code, out)
	}
	out, _, code = runCLI(t, "bin", "disasm", "--start", "0x1040", "--max", "5", fixture)
	if code != 0 || strings.Count(strings.TrimSpace(out), "\n") != 4 {
		t.Errorf("disasm: %d %q", code, out)
	}
	out, _, code = runCLI(t, "bin", "diff", fixture, fixture)
	if code != 0 || !strings.Contains(out, `"equal"`) {
		t.Errorf("diff: %d %s", code, out)
	}
	out, _, code = runCLI(t, "bin", "inspect", "--json", filepath.Join(t.TempDir(), "missing"))
	if code != 1 || !strings.Contains(out, "INVALID_ARGUMENT") {
		t.Errorf("missing file: %d %s", code, out)
	}
	dir := t.TempDir()
	har := `{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[{"request":{"method":"GET","url":"https://x.test/a"},"response":{"status":200,"content":{"size":2,"mimeType":"text/plain","text":"hi"}},"time":3,"timings":{"wait":2,"receive":1}}]}}`
	p := filepath.Join(dir, "a.har")
	os.WriteFile(p, []byte(har), 0o644)
	out, _, code = runCLI(t, "har", "show", p)
	if code != 0 || !strings.Contains(out, "https://x.test/a") {
		t.Errorf("har show: %d %s", code, out)
	}
	out, _, code = runCLI(t, "har", "diff", "--right-complete", p, p)
	if code != 0 || !strings.Contains(out, "omissions_can_explain") {
		t.Errorf("har diff: %d %s", code, out)
	}
}
