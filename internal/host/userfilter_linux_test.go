//go:build linux

package host

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// filter.user follows ps -u: a name that does not exist is an error
// (ps: "user name does not exist"), INVALID_ARGUMENT at /filter/user; an
// existing name and a numeric uid filter (a uid with no entry and no
// process lists nothing, as ps -u UID does, without error).
func TestListProcessesUserFilterLikePs(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("ps (procps) is not installed")
	}
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	const missing = "nosuchuser-inquest"
	out, err := exec.Command("ps", "-u", missing).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "user name does not exist") {
		t.Fatalf("ps -u %s: %v %s", missing, err, out)
	}
	_, _, err = call(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"user": missing}})
	if e := wantCode(t, err, contract.CodeInvalidArgument); e.Field != "/filter/user" {
		t.Fatalf("field %q", e.Field)
	}

	// The test's own user, by name and by uid: ps lists our pid, and so
	// do both filters.
	uid := strconv.Itoa(os.Getuid())
	name := strings.TrimSpace(psOut(t, "id", "-un"))
	self := os.Getpid()
	if !slices.Contains(strings.Fields(psOut(t, "ps", "-u", name, "-o", "pid=")), strconv.Itoa(self)) {
		t.Fatalf("ps -u %s does not list pid %d", name, self)
	}
	for _, u := range []string{name, uid} {
		d, res := mustCall(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"user": u, "pid": self}})
		if rows := d["rows"].([]any); len(rows) != 1 || res.Status != contract.StatusComplete {
			t.Fatalf("filter.user %s: %v", u, d)
		}
	}
	// A uid with no entry is not an error (ps -u prints nothing, no error).
	const noEntry = "3999999"
	if out, _ := exec.Command("ps", "-u", noEntry).CombinedOutput(); strings.Contains(string(out), "does not exist") {
		t.Fatalf("ps -u %s: %s", noEntry, out)
	}
	d, _ := mustCall(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"user": noEntry}})
	if rows := d["rows"].([]any); len(rows) != 0 {
		t.Fatalf("uid %s: %v", noEntry, rows)
	}
}

func psOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return string(out)
}
