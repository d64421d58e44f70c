package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestPreserveRestartQueryReplay preserves a paged analysis, reopens the
// store in a new runtime (a restart), finds the record with query_evidence,
// and replays it through the analysis tool to the same rows, even after
// the original file is gone.
func TestPreserveRestartQueryReplay(t *testing.T) {
	cpu, _ := makeProfiles(t)
	storeDir := filepath.Join(t.TempDir(), "store")
	e := newEnvAt(t, storeDir)
	csvPath := e.write("m.csv", "k,v\na,1\nb,2\nc,3\nd,4\ne,5\n")
	first := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(csvPath)}, "page_size": 2})
	liveRows, _ := e.follow(first)
	id := data(first)["analysis_id"].(string)
	pres := e.mustCall("preserve_evidence", map[string]any{"analysis_id": id})
	evID := data(pres)["evidence_id"].(string)
	// Repeating returns the same record.
	if again := e.mustCall("preserve_evidence", map[string]any{"analysis_id": id}); data(again)["evidence_id"] != evID {
		t.Fatal("repeated preserve made a new record")
	}
	// The refreshed next_page reads evidence, not the live path.
	np := pres["next_action"].(map[string]any)
	if strings.Contains(mustJSON(np), csvPath) || !strings.Contains(mustJSON(np), evID) {
		t.Fatalf("refreshed next_page still names the live path: %v", np)
	}
	// Also preserve a profile summary.
	prof := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(cpu)}, "sample_type": "cpu", "page_size": 3})
	profEv := data(e.mustCall("preserve_evidence", map[string]any{"analysis_id": data(prof)["analysis_id"]}))["evidence_id"].(string)
	e.rt.Close()
	os.Remove(csvPath) // the live input is gone; the evidence remains

	// Restart: a new runtime on the same store.
	e2 := newEnvAt(t, storeDir)
	// The pre-restart evidence-backed next_page still resumes.
	resumed := e2.mustCall(np["tool"].(string), np["arguments"])
	rest, _ := e2.follow(resumed)
	if mustJSON(rest) != mustJSON(liveRows[2:]) {
		t.Fatalf("resumed rows differ:\n%s\n%s", mustJSON(rest), mustJSON(liveRows[2:]))
	}
	q := e2.mustCall("query_evidence", map[string]any{"operation": "preview_artifact"})
	qrows := data(q)["rows"].([]any)
	if len(qrows) != 1 || qrows[0].(map[string]any)["evidence_id"] != evID {
		t.Fatalf("query: %v", qrows)
	}
	q = e2.mustCall("query_evidence", map[string]any{"format": "pprof", "page_size": 1})
	if len(data(q)["rows"].([]any)) != 1 || data(q)["rows"].([]any)[0].(map[string]any)["evidence_id"] != profEv {
		t.Fatal("format filter")
	}
	// inspect_evidence -> analysis_sources -> the same rows.
	for _, c := range []struct {
		ev   string
		live []any
	}{{evID, liveRows}, {profEv, nil}} {
		ins := e2.mustCall("inspect_evidence", map[string]any{"evidence_id": c.ev})
		if strings.Contains(mustJSON(ins), e.dir) || strings.Contains(mustJSON(ins), "host_paths") {
			t.Fatal("inspect_evidence leaks host paths")
		}
		replay := ins["next_action"].(map[string]any)
		replayed, _ := e2.follow(e2.mustCall(replay["tool"].(string), replay["arguments"]))
		if c.live != nil && mustJSON(replayed) != mustJSON(c.live) {
			t.Fatalf("replay differs:\n%s\n%s", mustJSON(replayed), mustJSON(c.live))
		}
		if c.live == nil {
			direct, _ := e2.follow(e2.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(cpu)}, "sample_type": "cpu", "page_size": 3}))
			if mustJSON(replayed) != mustJSON(direct) {
				t.Fatal("profile replay differs from a live analysis")
			}
		}
	}
	// Unknown and corrupt evidence.
	if _, code := e2.call("inspect_evidence", map[string]any{"evidence_id": "ev-" + strings.Repeat("a", 26)}); code != contract.CodeEvidenceNotFound {
		t.Fatalf("unknown: %s", code)
	}
	mf := filepath.Join(storeDir, "manifests", profEv+".json")
	b, _ := os.ReadFile(mf)
	os.WriteFile(mf, []byte(strings.Replace(string(b), "cpu", "CPU", 1)), 0o600)
	if _, code := e2.call("inspect_evidence", map[string]any{"evidence_id": profEv}); code != contract.CodeRepositoryCorrupt {
		t.Fatalf("corrupt: %s", code)
	}
	if _, code := e2.call("summarize_profile", map[string]any{"sources": []any{map[string]any{"kind": "evidence", "evidence_id": profEv}}}); code != contract.CodeRepositoryCorrupt {
		t.Fatalf("corrupt source: %s", code)
	}
	// An evidence source whose format the operation cannot read.
	if m, code := e2.call("summarize_profile", map[string]any{"sources": []any{map[string]any{"kind": "evidence", "evidence_id": evID}}}); code != contract.CodeUnsupportedFormat ||
		!strings.Contains(mustJSON(m), "accepted_formats") {
		t.Fatalf("format: %s", code)
	}
	// An analysis id from before the restart is gone.
	if _, code := e2.call("preserve_evidence", map[string]any{"analysis_id": id}); code != contract.CodeReferenceInvalid {
		t.Fatalf("stale analysis id: %s", code)
	}
}

func TestQueryEvidencePaging(t *testing.T) {
	e := newEnv(t)
	p := e.write("a.txt", "x\n")
	var ids []string
	for i := 0; i < 5; i++ {
		r := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "offset": 0})
		ids = append(ids, data(e.mustCall("preserve_evidence", map[string]any{"analysis_id": data(r)["analysis_id"]}))["evidence_id"].(string))
	}
	first := e.mustCall("query_evidence", map[string]any{"page_size": 2, "created_from": "2000-01-01T00:00:00Z"})
	rows, pages := e.follow(first)
	if len(rows) != 5 || pages != 3 || rows[0].(map[string]any)["evidence_id"] != ids[4] {
		t.Fatalf("%d rows in %d pages", len(rows), pages)
	}
	na := first["next_action"].(map[string]any)["arguments"].(map[string]any)
	changed := clone(na)
	changed["operation"] = "summarize_profile"
	if _, code := e.call("query_evidence", changed); code != contract.CodeCursorInvalid {
		t.Fatalf("changed filter: %s", code)
	}
	for _, bad := range []map[string]any{
		{"page_size": 0}, {"page_size": 201}, {"created_from": "yesterday"},
		{"created_from": "2026-01-02T00:00:00Z", "created_to": "2026-01-01T00:00:00Z"},
		{"page_size": "5"}, {"page_size": true},
	} {
		if _, code := e.call("query_evidence", bad); code != contract.CodeInvalidArgument {
			t.Errorf("%v: got %s", bad, code)
		}
	}
}

func TestRescueEvidence(t *testing.T) {
	e := newEnv(t)
	p := e.write("a.txt", "1\n2\n3\n")
	r := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "page_size": 1})
	id := data(r)["analysis_id"]
	dest := filepath.Join(t.TempDir(), "rescued")
	res := e.mustCall("rescue_evidence", map[string]any{"analysis_id": id, "destination": dest})
	d := data(res)
	if d["environment"].(map[string]any)["INQUEST_DATA_DIR"] != dest {
		t.Fatalf("handoff %v", d["environment"])
	}
	again := e.mustCall("rescue_evidence", map[string]any{"analysis_id": id, "destination": dest})
	if data(again)["evidence_id"] != d["evidence_id"] {
		t.Fatal("repeated rescue is not the original handoff")
	}
	// The active store is unchanged.
	if q := e.mustCall("query_evidence", map[string]any{}); len(data(q)["rows"].([]any)) != 0 {
		t.Fatal("rescue wrote to the active store")
	}
	// A runtime opened on the rescued store follows the handoff.
	e2 := newEnvAt(t, dest)
	np := res["next_action"].(map[string]any)
	rows, _ := e2.follow(e2.mustCall(np["tool"].(string), np["arguments"]))
	if len(rows) != 2 {
		t.Fatalf("rescued continuation rows: %v", rows)
	}
	for _, bad := range []string{"relative/dir", dest, filepath.Join(t.TempDir(), "no", "parent")} {
		if _, code := e.call("rescue_evidence", map[string]any{"analysis_id": id, "destination": bad}); code == "" && bad != dest {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, code := e.call("rescue_evidence", map[string]any{"analysis_id": id, "destination": "relative"}); code != contract.CodeInvalidArgument {
		t.Errorf("relative destination: %s", code)
	}
	other := filepath.Join(t.TempDir(), "exists")
	os.Mkdir(other, 0o700)
	if _, code := e.call("rescue_evidence", map[string]any{"analysis_id": id, "destination": other}); code != contract.CodeStateConflict {
		t.Errorf("existing destination: %s", code)
	}
}

// TestQueryEvidenceSameAfterRebuild: the tester's case. Six records, one
// manifest replaced with "{bad", another naming another id; query_evidence
// lists all six, two with a problem, unreadable_manifests 2, status
// partial; after index.sqlite is overwritten with garbage (and, again,
// deleted) the automatic rebuild gives the identical answer.
func TestQueryEvidenceSameAfterRebuild(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "store")
	e := newEnvAt(t, storeDir)
	p := e.write("a.txt", "x\n")
	var ids []string
	for i := 0; i < 6; i++ {
		r := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "offset": 0})
		ids = append(ids, data(e.mustCall("preserve_evidence", map[string]any{"analysis_id": data(r)["analysis_id"]}))["evidence_id"].(string))
	}
	mf := func(id string) string { return filepath.Join(storeDir, "manifests", id+".json") }
	os.WriteFile(mf(ids[1]), []byte("{bad"), 0o600)
	b, _ := os.ReadFile(mf(ids[3]))
	os.WriteFile(mf(ids[3]), []byte(strings.Replace(string(b), ids[3], ids[0], 1)), 0o600)
	answer := func(e *env) string {
		q := e.mustCall("query_evidence", map[string]any{})
		d := data(q)
		rows := d["rows"].([]any)
		problems := 0
		for _, r := range rows {
			if r.(map[string]any)["problem"] != nil {
				problems++
			}
		}
		cov := q["coverage"].(map[string]any)
		if _, dup := d["coverage"]; dup {
			t.Fatal("data.coverage repeats the envelope's coverage")
		}
		if len(rows) != 6 || problems != 2 || cov["unreadable_manifests"] != float64(2) || cov["complete"] != false || q["status"] != "partial" {
			t.Fatalf("rows %d problems %d coverage %v status %v", len(rows), problems, cov, q["status"])
		}
		return mustJSON(map[string]any{"rows": rows, "coverage": cov, "status": q["status"], "page": d["page"]})
	}
	before := answer(e)
	for _, damage := range []func(string) error{
		func(p string) error { return os.WriteFile(p, []byte("garbage"), 0o600) },
		os.Remove,
	} {
		e.rt.Close()
		for _, s := range []string{"-wal", "-shm"} {
			os.Remove(filepath.Join(storeDir, "index.sqlite"+s))
		}
		if err := damage(filepath.Join(storeDir, "index.sqlite")); err != nil {
			t.Fatal(err)
		}
		e = newEnvAt(t, storeDir)
		if after := answer(e); after != before {
			t.Fatalf("after the rebuild:\n%s\nbefore:\n%s", after, before)
		}
	}
}
