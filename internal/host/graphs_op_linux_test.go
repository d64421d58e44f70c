package host

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// A write that fails after acceptance (here the file-size limit, set
// while the writer waits: the write returns EFBIG, a real short write)
// fails the operation with EXPORT_FAILED naming output_path and the
// accepted workspace; the partial file and the requested additions stay.
func TestExportGraphsWriteFailureKeepsPathAndAdditions(t *testing.T) {
	h, _, bs := graphHost(t)
	dir := t.TempDir()
	const limit = 32
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	entered, gate := make(chan struct{}), make(chan struct{})
	setExportHook(t, func(p string) {
		if strings.HasSuffix(p, "fail.csv") {
			close(entered)
			<-gate
		}
	})
	d, _ := mustCall(t, h, bs, "export_graphs", map[string]any{"wait_ms": 0, "operation_id": "f-1", "output_directory": dir, "filename": "fail.csv",
		"metrics": []any{map[string]any{"metric_id": "memory_total_bytes"}, map[string]any{"metric_id": "memory_available_bytes"}}})
	if d["state"] != "running" {
		t.Fatalf("accepted export: %v", d)
	}
	<-entered
	lim := syscall.Rlimit{Cur: limit, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		close(gate)
		t.Skipf("cannot lower RLIMIT_FSIZE: %v", err)
	}
	close(gate)
	fin := awaitOperation(t, h, "f-1")
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if fin["state"] != "failed" {
		t.Fatalf("write failure: %v", fin)
	}
	e := fin["error"].(map[string]any)
	det, _ := e["details"].(map[string]any)
	path := filepath.Join(dir, "fail.csv")
	if e["code"] != string(contract.CodeExportFailed) || det["output_path"] != path || det["workspace"] == nil {
		t.Fatalf("error %v", e)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != limit {
		t.Fatalf("the partial file is not kept at %d bytes: %v %v", limit, st, err)
	}
	ws, _ := mustCall(t, h, bs, "get_graphs", map[string]any{})
	if n := len(ws["graphs"].([]any)); n != 2 {
		t.Fatalf("accepted additions not kept: %d graphs", n)
	}
	// the same failure by the repeat of its id, without writing again
	_, _, err := call(t, h, bs, "export_graphs", map[string]any{"wait_ms": 0, "operation_id": "f-1", "output_directory": dir, "filename": "fail.csv",
		"metrics": []any{map[string]any{"metric_id": "memory_total_bytes"}, map[string]any{"metric_id": "memory_available_bytes"}}})
	if ce := wantCode(t, err, contract.CodeExportFailed); ce.Details["output_path"] != path || ce.Details["operation_id"] != "f-1" {
		t.Fatalf("repeat: %v", ce.Details)
	}
}
