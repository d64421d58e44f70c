//go:build linux

package capture

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestZombieLeaderCollectors: a process whose main thread called
// pthread_exit while a worker thread holds held.log is live (ps "Zl"):
// its threads, open files (lsof), file users (fuser), process info and
// network are read through the live task, compared with
// /proc/PID/task/TID read in the same run (fuser itself lists nothing
// for such a process: it reads /proc/PID/fd only).
func TestZombieLeaderCollectors(t *testing.T) {
	held := filepath.Join(t.TempDir(), "held.log")
	zl := testbuild.StartZombieLeader(t, held)
	id, running, err := sample.IdentityOf(int32(zl.PID))
	if err != nil || !running {
		t.Fatalf("IdentityOf %v %v", running, err)
	}
	task := "/proc/" + strconv.Itoa(zl.PID) + "/task/" + strconv.Itoa(zl.TID)
	ents, err := os.ReadDir(task + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, e := range ents {
		l, err := os.Readlink(task + "/fd/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		want[e.Name()] = l
	}
	if len(want) == 0 {
		t.Fatal("the live task holds no fds")
	}
	ctx := context.Background()

	t.Run("open_files", func(t *testing.T) {
		c, err := OpenFiles(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range fdRows(c.Rows) {
			fd, _ := r.Get("fd")
			got[fd.(string)] = r.Path
		}
		for fd, l := range want {
			if got[fd] != l {
				t.Errorf("fd %s: %q, task fd says %q", fd, got[fd], l)
			}
		}
		if len(got) != len(want) || got[findFD(want, held)] != held {
			t.Errorf("%d rows, task has %d fds; held.log %q", len(got), len(want), got[findFD(want, held)])
		}
	})
	t.Run("threads", func(t *testing.T) {
		c, err := Threads(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		states := map[int]string{}
		for _, r := range c.Rows {
			tid, _ := r.Get("tid")
			st, _ := r.Get("state")
			states[toInt(tid)], _ = st.(string)
		}
		if len(states) != 2 || states[zl.PID] != "zombie" || states[zl.TID] == "zombie" || states[zl.TID] == "" {
			t.Errorf("threads %v, want the zombie leader %d and the live worker %d", states, zl.PID, zl.TID)
		}
	})
	t.Run("file_users", func(t *testing.T) {
		c, err := FileUsersFiltered(ctx, Filter{Path: held})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range c.Rows {
			if r.Proc == id && r.Path == held {
				found = true
			}
		}
		if !found {
			t.Errorf("file users of %s do not list pid %d (%d rows)", held, zl.PID, len(c.Rows))
		}
	})
	t.Run("process_info", func(t *testing.T) {
		c, err := ProcessInfo(ctx, id, []string{"exe", "cwd"})
		if err != nil {
			t.Fatal(err)
		}
		exe, _ := os.Readlink(task + "/exe")
		if len(c.Rows) != 1 || c.Rows[0].Owner != "zleader" {
			t.Fatalf("rows %d owner %q", len(c.Rows), c.Rows[0].Owner)
		}
		v, _ := c.Rows[0].Get("exe")
		if m, _ := v.(map[string]any); m == nil || m["value"] != exe {
			t.Errorf("exe %v, task exe %q", v, exe)
		}
	})
	t.Run("network", func(t *testing.T) {
		if _, err := Network(ctx, &id); err != nil {
			t.Fatalf("network of the live process: %v", err)
		}
	})
}

func findFD(m map[string]string, path string) string {
	for fd, l := range m {
		if l == path {
			return fd
		}
	}
	return ""
}

func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int32:
		return int(x)
	case int64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return -1
}
