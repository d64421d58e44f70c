package perf

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

func TestLimits(t *testing.T) {
	e := newEnv(t)
	// Pages ended by page_size, not by the default 64 KiB result budget.
	e.ctx = tool.WithResultBudget(context.Background(), tool.HardResultBytes)
	// A 2 MiB single line: line mode refuses it and points at fragments;
	// fragment mode pages through it.
	long := e.write("long.txt", strings.Repeat("é", 1<<20)+"\n")
	m, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(long)}})
	if code != contract.CodeLimitExceeded || !strings.Contains(mustJSON(m), "text_fragment_chars") {
		t.Fatalf("long line: %s %v", code, m["error"])
	}
	res := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(long)}, "text_fragment_chars": 4096, "page_size": 100})
	rows, pages := e.follow(res)
	if len(rows) != 1<<20/4096+1 || pages != 3 {
		t.Fatalf("%d fragments in %d pages", len(rows), pages)
	}
	lastRow := rows[len(rows)-1].(map[string]any)
	if lastRow["text"] != "\n" || lastRow["line_terminated"] != true || lastRow["fragment"].(float64) != 256 {
		t.Fatalf("last fragment %v", lastRow)
	}
	// A profile that decompresses beyond max_memory_bytes.
	prof := filepath.Join(e.dir, "p.pprof")
	writeLargeProfile(t, prof, 300, 80000)
	if _, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(prof)}, "limits": map[string]any{"max_memory_bytes": 1 << 20}}); code != contract.CodeLimitExceeded {
		t.Fatalf("memory limit: %s", code)
	}
	e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(prof)}, "page_size": 5})
	// A cancelled request reports CANCELLED, not a partial result.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.reg.Call(ctx, "summarize_profile", json.RawMessage(mustJSON(map[string]any{"sources": []any{pathSrc(prof)}})))
	if c := contract.CodeOf(err); c != contract.CodeCancelled {
		t.Fatalf("cancelled: %v", err)
	}
}
