//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestCaptureCLIPreserveFullStore: `inquest capture --preserve` onto a
// full evidence store (a filled 1 MiB tmpfs; skipped when mount is not
// permitted) prints the analysis, partial, with data.preserve_failure and
// a warning, keeps the captured files after exit, and its next_command
// (inquest analyze ... --preserve) preserves them once space is freed,
// without rerunning the workload.
func TestCaptureCLIPreserveFullStore(t *testing.T) {
	mnt := testbuild.SmallTmpfs(t, "1m")
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(mnt, "store"))
	filler := testbuild.FillDisk(t, mnt)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	m, code := runAnalyzeCLI(t, "capture", "--provider", "direct", "--cwd", dir, "--preserve", "--json", "--", "sh", "-c", "echo ran >> "+runs)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the result is printed, but nothing was preserved): %v", code, m)
	}
	if w := strings.Join(toStrings(m["warnings"]), "\n"); strings.Contains(w, "scratch directory removed") {
		t.Fatalf("a capture whose files are kept still warns they are removed: %s", w)
	}
	d := m["data"].(map[string]any)
	pf, _ := d["preserve_failure"].(map[string]any)
	if m["status"] != "partial" || pf == nil || pf["code"] != "RESOURCE_LIMIT" || d["evidence_id"] != nil || m["next_action"] != nil {
		t.Fatalf("status %v, preserve_failure %v, evidence_id %v, next_action %v", m["status"], pf, d["evidence_id"], m["next_action"])
	}
	if w := strings.Join(toStrings(m["warnings"]), "\n"); !strings.Contains(w, "preserving it as evidence failed") || !strings.Contains(w, "kept in") {
		t.Fatalf("warnings %v", w)
	}
	var next []string
	for _, a := range d["next_command"].([]any) {
		next = append(next, a.(string))
	}
	if len(next) < 4 || next[1] != "analyze" || next[len(next)-1] != "--preserve" {
		t.Fatalf("next_command %v", next)
	}
	src := next[3]
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(src)) })
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("the captured source was not kept after exit: %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	kept, code := runAnalyzeCLI(t, next[1:]...)
	if code != 0 {
		t.Fatalf("next_command exit %d: %v", code, kept)
	}
	pres, _ := kept["data"].(map[string]any)["preserved"].(map[string]any)
	if pres == nil || pres["evidence_id"] == nil {
		t.Fatalf("next_command preserved nothing: %v", kept["data"])
	}
	if a, b := mustMarshal(kept["data"].(map[string]any)["rows"]), mustMarshal(d["rows"]); a != b {
		t.Fatalf("preserved rows differ:\n%v\n%v", kept["data"].(map[string]any)["rows"], d["rows"])
	}
	if b, _ := os.ReadFile(runs); string(b) != "ran\n" {
		t.Fatalf("the workload ran %d times", strings.Count(string(b), "ran"))
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCaptureCLIRescueTo: `inquest capture --rescue-to DIR` publishes the
// capture to a new evidence store at DIR, whose next_command reads it
// back; a destination that exists or is relative, or --rescue-to with
// --preserve, is refused naming the flag before the workload runs.
func TestCaptureCLIRescueTo(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	workload := []string{"--", "sh", "-c", "echo ran >> " + runs}
	dest := filepath.Join(dir, "rescued")
	m, code := runAnalyzeCLI(t, append([]string{"capture", "--provider", "direct", "--cwd", dir, "--rescue-to", dest, "--json"}, workload...)...)
	if code != 0 {
		t.Fatalf("exit %d: %v", code, m)
	}
	d := m["data"].(map[string]any)
	r, _ := d["rescued"].(map[string]any)
	id, _ := r["evidence_id"].(string)
	if id == "" || m["next_action"] != nil || d["analysis_id"] != nil {
		t.Fatalf("rescued %v, next_action %v, analysis_id %v", r, m["next_action"], d["analysis_id"])
	}
	if w := strings.Join(toStrings(m["warnings"]), "\n"); strings.Contains(w, "scratch directory") {
		t.Fatalf("a rescued capture still warns of its scratch directory: %s", w)
	}
	next := toStrings(d["next_command"])
	if len(next) != 6 || next[0] != "env" || next[1] != "INQUEST_DATA_DIR="+dest || next[5] != id {
		t.Fatalf("next_command %v", next)
	}
	t.Setenv("INQUEST_DATA_DIR", dest)
	shown, code := runAnalyzeCLI(t, "evidence", "show", id, "--json")
	if code != 0 || shown["data"] == nil {
		t.Fatalf("evidence show %s in the rescue store: exit %d: %v", id, code, shown)
	}
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"existing destination", []string{"--rescue-to", dest}, "--rescue-to: destination is refused: it already exists"},
		{"relative destination", []string{"--rescue-to", "rel"}, "--rescue-to: destination is refused: it is not an absolute path"},
		{"with --preserve", []string{"--rescue-to", filepath.Join(dir, "new"), "--preserve"}, "--preserve and --rescue-to are mutually exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb strings.Builder
			args := append(append([]string{"capture", "--provider", "direct", "--cwd", dir}, tc.flags...), workload...)
			if code := Run(t.Context(), args, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, errb.String(), tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(runs); string(b) != "ran\n" {
		t.Fatalf("the workload ran %d times (refused destinations must be refused before it runs)", strings.Count(string(b), "ran"))
	}
}
