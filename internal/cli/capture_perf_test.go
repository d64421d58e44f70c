//go:build linux

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureCLI runs `inquest capture` end to end: a preserved capture
// whose next page is an `inquest analyze --evidence` argv, an experiment
// table with a verdict, and the separator rule.
func TestCaptureCLI(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	dir := t.TempDir()
	m, code := runAnalyzeCLI(t, "capture", "--provider", "direct", "--operation", "preview_artifact", "--cwd", dir, "--page-size", "2", "--preserve", "--json", "--", "sh", "-c", "printf 'a\\nb\\nc\\n'")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, m)
	}
	d := m["data"].(map[string]any)
	argv := d["next_page"].(map[string]any)["argv"].([]any)
	if argv[2] != "preview_artifact" || argv[3] != "--evidence" || argv[4] != d["evidence_id"] {
		t.Fatalf("argv %v", argv)
	}
	var next []string
	for _, a := range argv[1:] {
		next = append(next, a.(string))
	}
	m2, code := runAnalyzeCLI(t, next...)
	if code != 0 || len(m2["data"].(map[string]any)["rows"].([]any)) != 1 {
		t.Fatalf("next page: %v", m2)
	}
	// Unpreserved: no next page into a removed scratch directory.
	m3, _ := runAnalyzeCLI(t, "capture", "--provider", "direct", "--operation", "preview_artifact", "--cwd", dir, "--page-size", "2", "--json", "--", "sh", "-c", "printf 'a\\nb\\nc\\n'")
	if m3["next_action"] != nil || m3["data"].(map[string]any)["next_page"] != nil || !strings.Contains(strings.Join(toStrings(m3["warnings"]), " "), "--preserve") {
		t.Fatalf("unpreserved: %v", m3)
	}
	// Its source path is gone after exit: the source says so, without it.
	if src := m3["data"].(map[string]any)["sources"].([]any)[0].(map[string]any); src["path"] != nil || src["removed"] != true || src["removed_when"] == nil {
		t.Fatalf("unpreserved source: %v", src)
	}

	// The cases differ by far more than any load can blur (a process
	// start against half a second of sleep), so the verdict is SLOWER on
	// a loaded machine and under -race too.
	exp := filepath.Join(dir, "exp.json")
	os.WriteFile(exp, []byte(`{"cases":[{"name":"short","argv":["true"]},{"name":"long","argv":["sleep","0.5"]}],"blocks":8,"seed":5,"threshold":0.25}`), 0o644)
	var out, errb bytes.Buffer
	code = Run(context.Background(), []string{"capture", "--provider", "direct", "--experiment", exp, "--cwd", dir, "--", "true"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "long vs short: +") || !strings.Contains(out.String(), "SLOWER") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"capture", "--provider", "direct", "true"}, strings.NewReader(""), &out, &errb); code == 0 {
		t.Fatal("a target without -- was accepted")
	}
	// Every case names its argv: no ARGV is needed, and the result is
	// the one with a redundant ARGV. A case without one names itself.
	out.Reset()
	errb.Reset()
	code = Run(context.Background(), []string{"capture", "--provider", "direct", "--experiment", exp, "--cwd", dir}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "long vs short: +") {
		t.Fatalf("experiment without ARGV: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	inherit := filepath.Join(dir, "inherit.json")
	os.WriteFile(inherit, []byte(`{"cases":[{"name":"a","argv":["true"]},{"name":"b","env":{"X":"1"}}]}`), 0o644)
	for _, args := range [][]string{
		{"capture", "--provider", "direct", "--experiment", inherit, "--cwd", dir},
		{"capture", "--provider", "direct", "--experiment", inherit, "--cwd", dir, "--"},
	} {
		out.Reset()
		errb.Reset()
		if code := Run(context.Background(), args, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(errb.String(), `case 2 ("b") has no argv`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
