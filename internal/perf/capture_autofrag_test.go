//go:build linux

package perf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestCapturePreviewLongLines: capture_and_preview_artifact of a workload
// printing CJK lines of 60,000 characters (180 KB each) delivers every
// page, the first with its capture block, within the default 64 KiB, and
// the pages rebuild the workload's output exactly.
func TestCapturePreviewLongLines(t *testing.T) {
	e := newCaptureEnv(t)
	content := strings.Repeat(strings.Repeat("漢字", 30000)+"\n", 3)
	p := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := target("/tmp", "cat", p)
	tg["console_output"] = "full" // the default keeps the first 64 KiB
	cur := e.mustCall("capture_and_preview_artifact", map[string]any{"target": tg, "provider": map[string]any{"kind": "direct"}})
	var sb strings.Builder
	for pages := 1; ; pages++ {
		body, _ := json.Marshal(cur)
		if n := tool.DeliveredBytes(body); n > tool.DefaultResultBytes {
			t.Fatalf("page %d delivers %d bytes, over %d", pages, n, tool.DefaultResultBytes)
		}
		if v, ok := cur["coverage"].(map[string]any)["page_budget_bytes"]; ok {
			t.Fatalf("page %d: coverage.page_budget_bytes = %v", pages, v)
		}
		for _, r := range data(cur)["rows"].([]any) {
			sb.WriteString(r.(map[string]any)["text"].(string))
		}
		na, _ := cur["next_action"].(map[string]any)
		if na == nil {
			break
		}
		cur = e.mustCall(na["tool"].(string), na["arguments"])
	}
	if sb.String() != content {
		t.Fatalf("pages rebuild %d bytes, want %d", sb.Len(), len(content))
	}
}
