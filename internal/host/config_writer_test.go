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

// The state a host wrote is the state it reads back: deleting the last
// saved profile (an empty list, omitted from the file) and emptying the
// tracking list leave later changes writable.
func TestTrackingWritableAfterEmptyLists(t *testing.T) {
	h := testHost(t, time.Hour, nil)
	s := h.NewSession()
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "e-1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "alpha"})
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "e-2", "expected_revision": revision(t, h, s), "action": "remove", "process_name": "alpha"})
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "e-3", "expected_revision": revision(t, h, s), "action": "add", "process_name": "beta"})
	p, _ := config.Path()
	if f, err := config.LoadFrom(p); err != nil || len(f.Tracking) != 1 || f.Tracking[0] != "beta" {
		t.Fatalf("file %v %v", f, err)
	}
}

// configState treats an empty list as the file stores it (omitted, or
// []), so what a host wrote compares equal to what it reads back.
func TestConfigStateEmptyLists(t *testing.T) {
	for _, c := range []struct{ a, b config.File }{
		{config.File{Profiles: []config.Profile{}}, config.File{}},
		{config.File{Tracking: []string{}}, config.File{}},
		{config.File{Profiles: []config.Profile{{ID: "p", Name: "n", Tracking: nil}}}, config.File{Profiles: []config.Profile{{ID: "p", Name: "n", Tracking: []string{}}}}},
	} {
		if configState(&c.a) != configState(&c.b) {
			t.Errorf("%+v and %+v differ", c.a, c.b)
		}
	}
}
