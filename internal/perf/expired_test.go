package perf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestExpiredAnalysisCode: a session keeps its newest 256 analyses
// (the MCP server's default). preserve_evidence and rescue_evidence of
// one that 256 newer analyses evicted answer ANALYSIS_EXPIRED (not
// retryable, naming the id and the bound); an id this process never
// issued stays REFERENCE_INVALID; the newest analysis still preserves.
func TestExpiredAnalysisCode(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.dir, "a.csv")
	if err := os.WriteFile(p, []byte("k,v\na,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": p}}}
	var ids []string
	for range 257 {
		m := e.mustCall("preview_artifact", args)
		ids = append(ids, m["data"].(map[string]any)["analysis_id"].(string))
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"preserve_evidence", map[string]any{"analysis_id": ids[0]}},
		{"rescue_evidence", map[string]any{"analysis_id": ids[0], "destination": filepath.Join(t.TempDir(), "rescued")}},
	} {
		m, code := e.call(tc.tool, tc.args)
		if code != contract.CodeAnalysisExpired {
			t.Fatalf("%s of an evicted analysis: %s %v, want ANALYSIS_EXPIRED", tc.tool, code, m["error"])
		}
		er := m["error"].(map[string]any)
		d, _ := er["details"].(map[string]any)
		if er["retryable"] != false || d["analysis_id"] != ids[0] || d["max_session_analyses"] != float64(256) {
			t.Fatalf("%s: %v", tc.tool, er)
		}
	}
	if m, code := e.call("preserve_evidence", map[string]any{"analysis_id": "an-" + "0123456789abcdef01234567"}); code != contract.CodeReferenceInvalid {
		t.Fatalf("unknown analysis id: %s %v, want REFERENCE_INVALID", code, m["error"])
	}
	e.mustCall("preserve_evidence", map[string]any{"analysis_id": ids[1]})
	e.mustCall("preserve_evidence", map[string]any{"analysis_id": ids[256]})
}
