//go:build linux

package capture

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

func field(t *testing.T, r Row, k string) any {
	t.Helper()
	v, ok := r.Get(k)
	if !ok {
		t.Fatalf("row has no %s: %+v", k, r.Fields)
	}
	return v
}

func realPath(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFileUsersFindsChild(t *testing.T) {
	path := realPath(t, tempFile(t, "held.dat"))
	c := startChild(t, "CAPTURE_FILE="+path, "CAPTURE_EXTRA=2")
	cap, err := FileUsers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []Row
	for _, r := range cap.Rows {
		if MatchPath(r.Path, filepath.Base(path)) {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want exactly one row for %s, got %d: %+v", path, len(got), got)
	}
	r := got[0]
	if field(t, r, "pid") != int32(c.cmd.Process.Pid) || field(t, r, "path") != path {
		t.Fatalf("row %+v", r.Fields)
	}
	if n := field(t, r, "handle_count"); n != 3 {
		t.Fatalf("handle_count = %v, want 3 (file + 2 dups)", n)
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/exe")
	if r.Owner != filepath.Base(exe) || r.Comm != field(t, r, "name") {
		t.Fatalf("owner %q comm %q, want %q and the name field", r.Owner, r.Comm, filepath.Base(exe))
	}
	if !r.Verified || r.Proc != c.id {
		t.Fatalf("row identity %+v verified=%v, want %+v verified", r.Proc, r.Verified, c.id)
	}
	cov := cap.Coverage
	listed := cov["processes_listed"].(int)
	sum := cov["processes_examined"].(int) + cov["processes_denied"].(int)
	if sum > listed || cov["fds_examined"].(int) < 3 {
		t.Fatalf("coverage inconsistent: %v", cov)
	}
}

func TestOpenFilesListsFD(t *testing.T) {
	path := realPath(t, tempFile(t, "open.dat"))
	c := startChild(t, "CAPTURE_FILE="+path)
	cap, err := OpenFiles(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	// find the fd the kernel reports for the file
	ents, _ := os.ReadDir("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/fd")
	want := ""
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/fd/" + e.Name()); l == path {
			want = e.Name()
		}
	}
	found := false
	for _, r := range cap.Rows {
		if r.Path != path {
			continue
		}
		found = true
		if field(t, r, "fd") != want {
			t.Fatalf("fd = %v, want %q", field(t, r, "fd"), want)
		}
		if field(t, r, "kind") != "file" || field(t, r, "size_bytes") != "21" || field(t, r, "position") != "3" {
			t.Fatalf("row %+v", r.Fields)
		}
		if fl, _ := field(t, r, "flags").(string); fl == "" {
			t.Fatalf("no flags: %+v", r.Fields)
		}
	}
	if !found {
		t.Fatalf("open file %s not listed", path)
	}
	fds := fdRows(cap.Rows)
	if cap.Coverage["handle_count"].(int) != len(fds)+cap.Coverage["query_failed"].(int) {
		t.Fatalf("coverage %v fd rows %d", cap.Coverage, len(fds))
	}
	// cwd, rtd and txt come first, from the links; then one mem row per
	// mapped file other than the executable (a Go child maps none).
	proc := "/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/"
	for i, w := range []struct{ fd, link, kind string }{{"cwd", "cwd", "dir"}, {"rtd", "root", "dir"}, {"txt", "exe", "file"}} {
		l, _ := os.Readlink(proc + w.link)
		var st syscall.Stat_t
		if err := syscall.Stat(proc+w.link, &st); err != nil {
			t.Fatal(err)
		}
		r := cap.Rows[i]
		if field(t, r, "fd") != w.fd || r.Path != l || field(t, r, "kind") != w.kind ||
			field(t, r, "inode") != strconv.FormatUint(st.Ino, 10) || field(t, r, "size_bytes") != strconv.FormatInt(st.Size, 10) ||
			field(t, r, "flags") != nil || field(t, r, "position") != nil {
			t.Errorf("row %d: %+v, want %s %q inode %d size %d", i, r.Fields, w.fd, l, st.Ino, st.Size)
		}
	}
	mem := len(cap.Rows) - len(fds) - 3
	if cap.Coverage["mapped_files"] != mem {
		t.Errorf("mapped_files %v, %d mem rows", cap.Coverage["mapped_files"], mem)
	}
}

// fdRows is the descriptor rows of an open_files capture (fd a number,
// not cwd/rtd/txt/mem/DEL).
func fdRows(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if fd, ok := r.Get("fd"); ok {
			if s, _ := fd.(string); s != "" && s[0] >= '0' && s[0] <= '9' {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestModulesListsBinaryAndVDSO(t *testing.T) {
	c := startChild(t)
	cap, err := Modules(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/exe")
	var sawExe, sawLib bool
	for _, r := range cap.Rows {
		name, _ := r.Get("name")
		if r.Path == exe {
			sawExe = true
			if field(t, r, "build_id") == nil || field(t, r, "size_bytes") == nil {
				t.Fatalf("exe metadata missing: %+v", r.Fields)
			}
			if field(t, r, "mapping_count").(int) < 1 {
				t.Fatal("mapping_count")
			}
		}
		if name == "[vdso]" || (name != nil && len(name.(string)) > 4 && name.(string)[:4] == "libc") {
			sawLib = true
		}
	}
	if !sawExe || !sawLib {
		t.Fatalf("exe %v libc/vdso %v in %d rows", sawExe, sawLib, len(cap.Rows))
	}
}

func TestNetworkFindsListeners(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	c := startChild(t, "CAPTURE_NET=1", "CAPTURE_UNIX="+sock)
	port, _ := strconv.Atoi(c.extra)
	for _, target := range []*sample.Identity{nil, &c.id} {
		cap, err := Network(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		var tcp, unixOK bool
		for _, r := range cap.Rows {
			proto := field(t, r, "protocol")
			pid := field(t, r, "pid")
			if proto == "tcp" {
				l := field(t, r, "local").(map[string]any)
				if l["address"] == "127.0.0.1" && l["port"] == port && field(t, r, "state") == "LISTEN" && pid == int32(c.cmd.Process.Pid) {
					tcp = true
				}
			}
			if proto == "unix" && r.Path == sock && pid == int32(c.cmd.Process.Pid) {
				// a listening unix socket is LISTEN (like tcp), not UNCONNECTED
				if st := field(t, r, "state"); st != "LISTEN" {
					t.Fatalf("listening unix socket state %v, want LISTEN", st)
				}
				unixOK = true
			}
			if target != nil && pid != int32(c.cmd.Process.Pid) {
				t.Fatalf("per-process capture returned another process's socket: %+v", r.Fields)
			}
		}
		if !tcp || !unixOK {
			t.Fatalf("target %v: tcp listener %v unix %v in %d rows", target, tcp, unixOK, len(cap.Rows))
		}
		// five /proc/net tables per namespace read (host-wide: every
		// namespace a process is in)
		namespaces := 1
		if n, ok := cap.Coverage["net_namespaces_read"].(int); ok {
			namespaces = n
		}
		if cap.Coverage["tables_read"].(int)+cap.Coverage["tables_failed"].(int) != 5*namespaces {
			t.Fatalf("coverage %v", cap.Coverage)
		}
	}
}

func TestThreadsListsChildThreads(t *testing.T) {
	c := startChild(t, "CAPTURE_THREADS=4")
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	cap, err := Threads(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	tids := map[int]bool{}
	for _, r := range cap.Rows {
		tids[field(t, r, "tid").(int)] = true
		if _, ok := field(t, r, "user_cpu_seconds").(float64); !ok {
			t.Fatalf("cpu seconds: %+v", r.Fields)
		}
	}
	if len(ents) < 5 {
		t.Fatalf("child has %d threads, want >= 5", len(ents))
	}
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		if !tids[n] {
			t.Fatalf("thread %d missing from %v", n, tids)
		}
	}
}

func TestSchedulingAndProcessInfo(t *testing.T) {
	c := startChild(t)
	cap, err := Scheduling(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	r := cap.Rows[0]
	if field(t, r, "policy") != "SCHED_OTHER" || field(t, r, "affinity_cpus") == nil {
		t.Fatalf("scheduling %+v", r.Fields)
	}
	info, err := ProcessInfo(context.Background(), c.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	ir := info.Rows[0]
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/exe")
	if v := field(t, ir, "exe").(map[string]any); v["value"] != exe {
		t.Fatalf("exe %v", v)
	}
	if _, ok := ir.Get("command_line"); ok {
		t.Fatal("command_line returned without being requested")
	}
	if v := field(t, ir, "parent").(map[string]any)["value"].(map[string]any); v["pid"] != int32(os.Getpid()) {
		t.Fatalf("parent %v", v)
	}
	info2, err := ProcessInfo(context.Background(), c.id, []string{"command_line", "user"})
	if err != nil {
		t.Fatal(err)
	}
	if v := field(t, info2.Rows[0], "command_line").(map[string]any)["value"].([]string); v[0] != os.Args[0] {
		t.Fatalf("command line %v", v)
	}
}

func TestExitedTargets(t *testing.T) {
	c := startChild(t)
	id := c.id
	c.stop()
	for name, fn := range map[string]func(context.Context, sample.Identity) (*Capture, error){
		"open_files": OpenFiles, "modules": Modules, "threads": Threads, "scheduling": Scheduling,
	} {
		if _, err := fn(context.Background(), id); contract.CodeOf(err) != contract.CodeProcessExited {
			t.Errorf("%s of exited process: %v", name, err)
		}
	}
	// A live PID with the wrong start time (a reused PID) is PROCESS_EXITED too.
	self := identityOf(t, os.Getpid())
	self.StartTicks++
	if _, err := OpenFiles(context.Background(), self); contract.CodeOf(err) != contract.CodeProcessExited {
		t.Fatalf("wrong start time: %v", err)
	}
}

// TestExitMidCollection kills the target while its fds are being read:
// the capture is partial (rows read before the exit, all the target's
// own) or PROCESS_EXITED, never rows of another process.
func TestExitMidCollection(t *testing.T) {
	path := realPath(t, tempFile(t, "mid.dat"))
	for _, killAt := range []int{0, 50} {
		c := startChild(t, "CAPTURE_FILE="+path, "CAPTURE_EXTRA=200")
		testHookFD = func(i int) {
			if i == killAt {
				c.stop()
			}
		}
		cap, err := OpenFiles(context.Background(), c.id)
		testHookFD = nil
		if killAt == 0 {
			if contract.CodeOf(err) != contract.CodeProcessExited && (err != nil || !cap.Partial) {
				t.Fatalf("kill before first fd: %v %+v", err, cap)
			}
			continue
		}
		if err != nil {
			t.Fatalf("kill at %d: %v", killAt, err)
		}
		if fds := fdRows(cap.Rows); !cap.Partial || len(fds) == 0 || len(fds) > killAt || cap.Coverage["process_exited"] != true {
			t.Fatalf("kill at %d: partial=%v fd rows=%d coverage=%v", killAt, cap.Partial, len(fds), cap.Coverage)
		}
		for _, r := range cap.Rows {
			if r.Proc != c.id {
				t.Fatalf("row of another process: %+v", r)
			}
		}
	}
}

// TestFileUsersUnderChurn scans while processes start and exit: the scan
// completes and its coverage adds up (every listed PID is examined,
// denied or counted as exited).
func TestFileUsersUnderChurn(t *testing.T) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				exec.Command("/bin/true").Run()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for i := 0; i < 5; i++ {
		cap, err := FileUsers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cov := cap.Coverage
		listed := cov["processes_listed"].(int)
		ex, den, gone := cov["processes_examined"].(int), cov["processes_denied"].(int), cov["processes_exited"].(int)
		// an examined process may also be counted exited (it ended mid-scan)
		if ex+den > listed || ex+den+gone < listed {
			t.Fatalf("coverage does not add up: %v", cov)
		}
		if (den > 0 || gone > 0 || cov["fds_failed"].(int) > 0) != cap.Partial {
			t.Fatalf("partial=%v with coverage %v", cap.Partial, cov)
		}
		for _, r := range cap.Rows {
			if r.Verified && r.Proc.StartTicks == 0 {
				t.Fatalf("verified row without identity: %+v", r)
			}
		}
	}
}

func TestCancelledScan(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FileUsers(ctx); contract.CodeOf(err) != contract.CodeCancelled {
		t.Fatalf("cancelled scan: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	if _, err := Network(ctx, nil); contract.CodeOf(err) != contract.CodeTimeout {
		t.Fatalf("expired scan: %v", err)
	}
}

func TestParseHexAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"00000000:0016", "0.0.0.0:22"},
		{"00000000000000000000000001000000:0035", "[::1]:53"},
		{"0000000000000000FFFF00000100007F:01BB", "[::ffff:127.0.0.1]:443"},
	} {
		ap, ok := parseHexAddr([]byte(tc.in))
		if !ok || ap.String() != tc.want {
			t.Errorf("%s -> %v %v, want %s", tc.in, ap, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "zz:1", "0100007F", "0100007F:FFFFF", "01007F:0016"} {
		if _, ok := parseHexAddr([]byte(bad)); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	_ = net.IPv4len
}

// TestExitDuringFdWalkIsExit ends the target at a chosen fd of the walk
// and checks that open_files says process_exited, never blaming closed or
// denied fds. The end comes in the states an exit passes through: reaped
// (no /proc/PID), zombie (/proc/PID still there, state Z, no fds) and, in a
// tree laid out as /proc, exiting (state R with PF_EXITING in the stat
// flags and the fd table gone: the window between exit_files and the
// zombie state, when only the flags say the process is ending).
func TestExitDuringFdWalkIsExit(t *testing.T) {
	const at = 40
	check := func(t *testing.T, cap *Capture, err error, proc sample.Identity) {
		t.Helper()
		if err != nil {
			t.Fatalf("open_files: %v", err)
		}
		if cap.Coverage["process_exited"] != true || !cap.Partial || len(fdRows(cap.Rows)) != at {
			t.Fatalf("partial=%v fd rows=%d (want %d) coverage=%v warnings=%q", cap.Partial, len(fdRows(cap.Rows)), at, cap.Coverage, cap.Warnings)
		}
		for _, w := range cap.Warnings {
			if strings.Contains(w, "could not be read") {
				t.Fatalf("an exit blamed on fds: %q", cap.Warnings)
			}
		}
		for _, r := range cap.Rows {
			if r.Proc != proc {
				t.Fatalf("row of another process: %+v", r)
			}
		}
	}
	path := realPath(t, tempFile(t, "walk.dat"))
	for _, how := range []string{"reaped", "zombie"} {
		t.Run(how, func(t *testing.T) {
			c := startChild(t, "CAPTURE_FILE="+path, "CAPTURE_EXTRA=200")
			testHookFD = func(i int) {
				if i != at {
					return
				}
				if how == "reaped" {
					c.stop()
					return
				}
				// Killed, not reaped: wait until the kernel shows the zombie.
				c.cmd.Process.Signal(syscall.SIGKILL)
				for {
					b, err := os.ReadFile("/proc/" + strconv.Itoa(int(c.id.PID)) + "/stat")
					if err != nil {
						t.Errorf("zombie vanished: %v", err)
						return
					}
					if st, err := parseStatLine(b); err == nil && st.state == 'Z' {
						return
					}
					runtime.Gosched()
				}
			}
			cap, err := OpenFiles(context.Background(), c.id)
			testHookFD = nil
			check(t, cap, err, c.id)
		})
	}
	t.Run("exiting", func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "4242")
		for _, d := range []string{"fd", "fdinfo"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		stat := func(flags uint64) {
			line := "4242 (ending) R 1 4242 4242 0 -1 " + strconv.FormatUint(flags, 10) + " 10 0 2 0 3 4 0 0 20 0 1 0 5000 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
			if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		stat(4194304)
		for i := 0; i < 100; i++ {
			if err := os.Symlink(path, filepath.Join(dir, "fd", strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		id := sample.Identity{PID: 4242, StartTicks: 5000}
		testHookFD = func(i int) {
			if i == at {
				// exit_files ran; the task is still R, flagged PF_EXITING.
				stat(4194304 | pfExiting)
				if err := os.RemoveAll(filepath.Join(dir, "fd")); err != nil {
					t.Error(err)
				}
				os.Mkdir(filepath.Join(dir, "fd"), 0o755)
			}
		}
		cap, err := NewFS(root).OpenFilesFiltered(context.Background(), id, Filter{})
		testHookFD = nil
		check(t, cap, err, id)
	})
}

// TestGroupExitDuringFdWalk: a leader that becomes a zombie during the fd
// walk while another thread is still listed is a group exit in progress
// when that thread is ending (PF_EXITING, or SIGKILL pending: it has not
// run do_exit yet), so the walk records process_exited and counts no
// failed fds; when the other thread still runs, the leader ended alone, the
// process lives on and the unreadable fds are failed queries.
func TestGroupExitDuringFdWalk(t *testing.T) {
	const at, fds = 40, 100
	path := realPath(t, tempFile(t, "walk.dat"))
	statLine := func(pid int, state byte, flags uint64, threads int) string {
		return strconv.Itoa(pid) + " (group) " + string(state) + " 1 4242 4242 0 -1 " + strconv.FormatUint(flags, 10) +
			" 10 0 2 0 3 4 0 0 20 0 " + strconv.Itoa(threads) + " 0 5000 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	}
	status := func(sigpnd string) string {
		return "Name:\tgroup\nState:\tS (sleeping)\nTgid:\t4242\nSigQ:\t0/63408\nSigPnd:\t" + sigpnd + "\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n"
	}
	for _, tc := range []struct {
		name        string
		other       string // the other thread's stat once the leader is a zombie
		otherStatus string
		exited      bool
	}{
		{"other thread exiting", statLine(4243, 'R', 4194304|pfExiting, 2), status("0000000000000000"), true},
		{"other thread killed, not yet exiting", statLine(4243, 'S', 4194304, 2), status("0000000000000100"), true},
		{"other thread a zombie", statLine(4243, 'Z', 4194304|pfExiting, 2), status("0000000000000000"), true},
		{"leader ended alone", statLine(4243, 'S', 4194304, 2), status("0000000000000000"), false},
		{"leader ended alone, other signal pending", statLine(4243, 'S', 4194304, 2), status("0000000000004000"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "4242")
			for _, d := range []string{"fd", "fdinfo", "task/4242", "task/4243"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("stat", statLine(4242, 'S', 4194304, 2))
			write("task/4242/stat", statLine(4242, 'S', 4194304, 2))
			write("task/4243/stat", statLine(4243, 'S', 4194304, 2))
			write("task/4243/status", status("0000000000000000"))
			for i := 0; i < fds; i++ {
				if err := os.Symlink(path, filepath.Join(dir, "fd", strconv.Itoa(i))); err != nil {
					t.Fatal(err)
				}
			}
			id := sample.Identity{PID: 4242, StartTicks: 5000}
			testHookFD = func(i int) {
				if i != at {
					return
				}
				// The leader is a zombie (its fd table released); the
				// other thread is still listed.
				write("stat", statLine(4242, 'Z', 4194304|pfExiting, 2))
				write("task/4242/stat", statLine(4242, 'Z', 4194304|pfExiting, 2))
				write("task/4243/stat", tc.other)
				write("task/4243/status", tc.otherStatus)
				if err := os.RemoveAll(filepath.Join(dir, "fd")); err != nil {
					t.Error(err)
				}
				os.Mkdir(filepath.Join(dir, "fd"), 0o755)
			}
			cap, err := NewFS(root).OpenFilesFiltered(context.Background(), id, Filter{})
			testHookFD = nil
			if err != nil {
				t.Fatalf("open_files: %v", err)
			}
			blamed := false
			for _, w := range cap.Warnings {
				blamed = blamed || strings.Contains(w, "could not be read")
			}
			wantFailed := fds - at
			if tc.exited {
				wantFailed = 0
			}
			if got := cap.Coverage["process_exited"] == true; got != tc.exited || blamed == tc.exited ||
				cap.Coverage["query_failed"] != wantFailed || len(fdRows(cap.Rows)) != at || !cap.Partial {
				t.Fatalf("process_exited=%v (want %v) query_failed=%v (want %d) fd rows=%d (want %d) partial=%v warnings=%q",
					got, tc.exited, cap.Coverage["query_failed"], wantFailed, len(fdRows(cap.Rows)), at, cap.Partial, cap.Warnings)
			}
		})
	}
}
