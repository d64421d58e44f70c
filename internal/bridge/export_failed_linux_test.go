package bridge

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// An export whose write fails within the call (here the file-size limit:
// the writer's write returns EFBIG after a real short write) is the error
// EXPORT_FAILED (isError) with output_path and operation_id in its
// details, not a successful reply carrying data.state "failed";
// get_operation of that id then reads the failed operation as a success
// (retrieval succeeded) with state failed and the same error.
func TestExportGraphsFailureIsError(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	dir := t.TempDir()
	const limit = 8
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skipf("cannot lower RLIMIT_FSIZE: %v", err)
	}
	_, _, err := regCall(t, reg, "export_graphs", `{"operation_id":"x-1","output_directory":"`+dir+`","filename":"a.csv","metrics":[{"metric_id":"load1"}]}`)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "a.csv")
	e := contract.AsError(err)
	if e == nil || e.Code != contract.CodeExportFailed || e.Details["output_path"] != path || e.Details["operation_id"] != "x-1" || e.Details["state"] != "failed" {
		t.Fatalf("failed export: %v (%+v)", err, e)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != limit {
		t.Fatalf("partial file not kept at %d bytes: %v %v", limit, st, err)
	}
	d, _, err := regCall(t, reg, "get_operation", `{"operation_id":"x-1"}`)
	if err != nil {
		t.Fatal(err)
	}
	ge, _ := d["error"].(map[string]any)
	if d["state"] != "failed" || ge["code"] != string(contract.CodeExportFailed) {
		t.Fatalf("get_operation of the failed export: %v", d)
	}
}
