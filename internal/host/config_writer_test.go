package host

import (
	"os"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
)

// A change whose inquest.toml no longer holds the tracking state the host
// last read or wrote (another process wrote it) is STATE_CONFLICT and
// writes nothing: the other process's names are neither dropped nor
// resurrected by this host's next write.
func TestTrackingWriteRefusedAfterOutsideChange(t *testing.T) {
	h := testHost(t, time.Hour, nil)
	s := h.NewSession()
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "w-1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "alpha"})
	p, err := config.Path()
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.LoadFrom(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Tracking = append(f.Tracking, "beta")
	if err := config.SaveTo(p, f); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p)
	_, _, err = call(t, h, s, "update_tracking", map[string]any{"operation_id": "w-2", "expected_revision": revision(t, h, s), "action": "add", "process_name": "gamma"})
	wantCode(t, err, contract.CodeStateConflict)
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Fatalf("the refused change wrote the file:\n%s", after)
	}
}
