//go:build linux

package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestCapturePreserveFullStore: preserve:true onto a full evidence store
// (a filled 1 MiB tmpfs) returns the capture's analysis, partial, with
// data.preserve_failure (RESOURCE_LIMIT) and a warning, and next_action
// preserve_evidence of its analysis_id; once space is freed that call
// preserves it, and the workload ran exactly once.
func TestCapturePreserveFullStore(t *testing.T) {
	mnt := testbuild.SmallTmpfs(t, "1m")
	fill := func() string { return testbuild.FillDisk(t, mnt) }
	e := newEnvAt(t, filepath.Join(mnt, "store"))
	if err := e.reg.Add(CaptureTools(e.rt)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.rt.ReleaseCaptures)
	if _, err := e.rt.Store(); err != nil {
		t.Fatal(err)
	}
	filler := fill()
	runs := filepath.Join(e.dir, "runs")
	res, code := e.call("capture_and_summarize_executions", map[string]any{
		"target": target(e.dir, "sh", "-c", "echo ran >> "+runs), "provider": map[string]any{"kind": "direct"}, "preserve": true,
	})
	if code != "" {
		t.Fatalf("capture failed: %v", res["error"])
	}
	d := data(res)
	pf, _ := d["preserve_failure"].(map[string]any)
	if res["status"] != "partial" || pf == nil || pf["code"] != string(contract.CodeResourceLimit) || d["evidence_id"] != nil {
		t.Fatalf("status %v, preserve_failure %v, evidence_id %v", res["status"], pf, d["evidence_id"])
	}
	if !strings.Contains(strings.Join(toStrings(res["warnings"]), "\n"), "preserving it as evidence failed") {
		t.Fatalf("warnings %v", res["warnings"])
	}
	if rows := d["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["exit_code"].(float64) != 0 {
		t.Fatalf("rows %v", rows)
	}
	na, _ := res["next_action"].(map[string]any)
	if na == nil || na["tool"] != "preserve_evidence" || na["arguments"].(map[string]any)["analysis_id"] != d["analysis_id"] {
		t.Fatalf("next_action %v (analysis_id %v)", na, d["analysis_id"])
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	kept := e.mustCall(na["tool"].(string), na["arguments"])
	id, _ := data(kept)["evidence_id"].(string)
	if id == "" {
		t.Fatalf("preserve_evidence after freeing space: %v", data(kept))
	}
	replay := e.mustCall("summarize_executions", map[string]any{"sources": []any{map[string]any{"kind": "evidence", "evidence_id": id, "artifact_selector": "source-0"}}})
	if toJSON(data(replay)["rows"]) != toJSON(d["rows"]) {
		t.Fatalf("preserved rows differ:\n%v\n%v", data(replay)["rows"], d["rows"])
	}
	if b, _ := os.ReadFile(runs); string(b) != "ran\n" {
		t.Fatalf("the workload ran %d times", strings.Count(string(b), "ran"))
	}
	// The retry keeps what a capture preserved with room keeps (the
	// console as well as the analysis source).
	roomy, code := e.call("capture_and_summarize_executions", map[string]any{
		"target": target(e.dir, "sh", "-c", "echo ran >> "+runs), "provider": map[string]any{"kind": "direct"}, "preserve": true,
	})
	if code != "" {
		t.Fatalf("capture with room failed: %v", roomy["error"])
	}
	inspect := func(id any) any {
		return data(e.mustCall("inspect_evidence", map[string]any{"evidence_id": id}))["manifest"]
	}
	want := manifestArtifacts(t, inspect(data(roomy)["evidence_id"]))
	if got := manifestArtifacts(t, inspect(id)); got != want || !strings.Contains(want, "stdout") {
		t.Fatalf("preserve_evidence after a failed preserve keeps %s; a capture preserved with room keeps %s", got, want)
	}
}

// manifestArtifacts lists the name and role of each artifact of a manifest
// (decoded JSON).
func manifestArtifacts(t *testing.T, manifest any) string {
	t.Helper()
	m, _ := manifest.(map[string]any)
	arts, _ := m["artifacts"].([]any)
	if len(arts) == 0 {
		t.Fatalf("manifest without artifacts: %v", manifest)
	}
	var names []string
	for _, a := range arts {
		am := a.(map[string]any)
		names = append(names, fmt.Sprint(am["name"], "/", am["role"]))
	}
	return strings.Join(names, ",")
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestEvidenceReadOnFullStore: a record preserved before the disk filled
// is listed by query_evidence (with the read-only warning) and read by
// inspect_evidence from a server that opens the store while the disk is
// full (after the server that preserved it exited).
func TestEvidenceReadOnFullStore(t *testing.T) {
	mnt := testbuild.SmallTmpfs(t, "1m")
	fill := func() string { return testbuild.FillDisk(t, mnt) }
	store := filepath.Join(mnt, "store")
	e := newEnvAt(t, store)
	p := filepath.Join(e.dir, "a.txt")
	if err := os.WriteFile(p, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	an := e.mustCall("preview_artifact", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": p}}})
	kept := e.mustCall("preserve_evidence", map[string]any{"analysis_id": data(an)["analysis_id"]})
	id := data(kept)["evidence_id"]
	e.rt.Close() // the server that preserved it exits
	f, err := os.OpenFile(fill(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for { // the last partial page too
		if _, err := f.Write([]byte{0}); err != nil {
			break
		}
	}
	f.Close()
	e2 := newEnvAt(t, store) // a new server: opens the store on the full disk
	q, code := e2.call("query_evidence", map[string]any{})
	if code != "" {
		t.Fatalf("query_evidence on a full disk: %v", q["error"])
	}
	rows := data(q)["rows"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["evidence_id"] != id {
		t.Fatalf("rows %v, want %v", rows, id)
	}
	if w := strings.Join(toStrings(q["warnings"]), "\n"); !strings.Contains(w, "disk holding the evidence store is full") {
		t.Fatalf("warnings %q", w)
	}
	if r, code := e2.call("inspect_evidence", map[string]any{"evidence_id": id}); code != "" {
		t.Fatalf("inspect_evidence on a full disk: %v", r["error"])
	}
}
