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
	if code != 0 {
		t.Fatalf("exit %d: %v", code, m)
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
