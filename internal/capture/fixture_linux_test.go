//go:build linux

package capture

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// captureJSON is a capture's rows (fields in order), verification,
// coverage, warnings and filtered-out count, for golden comparison.
func captureJSON(t *testing.T, c *Capture) []byte {
	t.Helper()
	type row struct {
		Fields   json.RawMessage `json:"fields"`
		Verified bool            `json:"verified"`
	}
	out := struct {
		Rows        []row          `json:"rows"`
		Coverage    map[string]any `json:"coverage"`
		Warnings    []string       `json:"warnings"`
		Partial     bool           `json:"partial"`
		FilteredOut int            `json:"filtered_out"`
	}{Coverage: c.Coverage, Warnings: c.Warnings, Partial: c.Partial, FilteredOut: c.FilteredOut}
	for i := range c.Rows {
		out.Rows = append(out.Rows, row{Fields: c.Rows[i].AppendJSON(nil, nil), Verified: c.Rows[i].Verified})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs:\n%s", path, got)
	}
}

// TestFileUsersFixture scans testdata/proc, a tree laid out as /proc by
// hand: a holder with every kind of fd (a path with a space, the same file
// twice, a socket, a pipe, an unlinked file, a name with a newline, one
// with a byte that is not UTF-8, an anonymous inode, and a case variant),
// a process whose comm holds parentheses and whose fd 3 cannot be read as
// a link, one listed but vanished (its directory is a dangling link), one
// that exited before its fd directory was read, and a zombie.
func TestFileUsersFixture(t *testing.T) {
	fs := NewFS(filepath.Join("testdata", "proc"))
	tests := []struct {
		name   string
		filter Filter
	}{
		{"all", Filter{}},
		{"path", Filter{Path: "A file"}},
		{"extension", Filter{Extension: ".LOG"}},
		{"owner", Filter{OwnerName: "hold er"}},
		{"bytes", Filter{PathBytes: "/w==" /* 0xff */}},
		// a path selector also finds the root, working directory,
		// executable and mappings (access r, c, e, m); a fixture's fd
		// links are plain symlinks (mode 0777), so their access is F
		{"uses-cwd", Filter{Path: "work dir"}},
		{"uses-usr", Filter{Path: "/usr/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := fs.FileUsersFiltered(context.Background(), tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "fileusers-"+tt.name+".json"), captureJSON(t, c))
		})
	}
}

// TestTargetedFixture runs the per-process collectors on process 100 of
// testdata/proc: open_files (links, fdinfo positions and flags, an fd
// without fdinfo), scheduling (status affinity, cgroup, cpuset,
// oom_score_adj; no io_priority outside the live /proc), modules (maps
// with a name holding parentheses, a deleted object, anonymous memory,
// the vdso; the mapped files cannot be opened in a fixture, so their
// metadata is unavailable), process_info and threads (a thread whose name holds a newline, one
// whose status is unreadable, one that vanished).
func TestTargetedFixture(t *testing.T) {
	fs := NewFS(filepath.Join("testdata", "proc"))
	id := sample.Identity{PID: 100, StartTicks: 5000}
	of, err := fs.OpenFilesFiltered(context.Background(), id, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// The rtd row stats the fixture's root directory (a directory of this
	// checkout): its device and inode are this machine's, checked here
	// and masked in the golden file.
	var root syscall.Stat_t
	if err := syscall.Stat(filepath.Join("testdata", "proc", "100", "root"), &root); err != nil {
		t.Fatal(err)
	}
	for i := range of.Rows {
		if fd, _ := of.Rows[i].Get("fd"); fd != "rtd" {
			continue
		}
		for j, f := range of.Rows[i].Fields {
			switch f.Key {
			case "inode":
				if f.Value != strconv.FormatUint(root.Ino, 10) {
					t.Errorf("rtd inode %v, the fixture root's is %d", f.Value, root.Ino)
				}
				of.Rows[i].Fields[j].Value = "<fixture root inode>"
			case "device":
				of.Rows[i].Fields[j].Value = "<fixture root device>"
			}
		}
	}
	checkGolden(t, filepath.Join("testdata", "openfiles.json"), captureJSON(t, of))
	th, err := fs.Threads(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "threads.json"), captureJSON(t, th))
	sc, err := fs.Scheduling(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "scheduling.json"), captureJSON(t, sc))
	mo, err := fs.Modules(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "modules.json"), captureJSON(t, mo))
	pi, err := fs.ProcessInfo(context.Background(), id, []string{"exe", "cwd", "parent", "start_time", "cgroup", "command_line"})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "processinfo.json"), captureJSON(t, pi))
	// a stale identity (another lifetime had PID 100) is PROCESS_EXITED
	if _, err := fs.Threads(context.Background(), sample.Identity{PID: 100, StartTicks: 4999}); contract.CodeOf(err) != contract.CodeProcessExited {
		t.Fatalf("stale identity: %v", err)
	}
	// a listed process whose directory vanished is PROCESS_EXITED
	if _, err := fs.OpenFilesFiltered(context.Background(), sample.Identity{PID: 300, StartTicks: 1}, Filter{}); contract.CodeOf(err) != contract.CodeProcessExited {
		t.Fatalf("vanished process: %v", err)
	}
}

// TestNetworkFixture reads the tables of testdata/proc/net (tcp, tcp6,
// udp and unix; udp6 is missing, so unreadable) host-wide and for process
// 100: owners come from the fd links of the tree's processes; unix rows
// come from net/unix (a path with spaces, an unnamed socket, an abstract
// name, and a line that does not parse).
func TestNetworkFixture(t *testing.T) {
	fs := NewFS(filepath.Join("testdata", "proc"))
	all, err := fs.Network(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "network-all.json"), captureJSON(t, all))
	one, err := fs.Network(context.Background(), &sample.Identity{PID: 100, StartTicks: 5000})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "network-100.json"), captureJSON(t, one))
}
