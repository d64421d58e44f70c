//go:build linux

package bridge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// An export whose write fails within the call (here a full tmpfs: the
// writer's write returns ENOSPC) is the error EXPORT_FAILED (isError)
// with output_path and operation_id in its details, not a successful
// reply carrying data.state "failed"; get_operation of that id then reads
// the failed operation as a success (retrieval succeeded) with state
// failed and the same error. (The file-size rlimit would do too, but it
// also fails the go test log this test binary writes.)
func TestExportGraphsFailureIsError(t *testing.T) {
	dir := testbuild.SmallTmpfs(t, "4k")
	// Fill it: the export's first write finds no space.
	testbuild.FillDisk(t, dir)
	reg, _ := investigationRegistry(t, Mode{})
	_, _, err := regCall(t, reg, "export_graphs", `{"operation_id":"x-1","output_directory":"`+dir+`","filename":"a.csv","metrics":[{"metric_id":"load1"}]}`)
	path := filepath.Join(dir, "a.csv")
	e := contract.AsError(err)
	if e == nil || e.Code != contract.CodeExportFailed || e.Details["output_path"] != path || e.Details["operation_id"] != "x-1" || e.Details["state"] != "failed" {
		t.Fatalf("failed export: %v (%+v)", err, e)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the partial file is not kept: %v", err)
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
