//go:build linux

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// startHolder starts sh holding path open on fd 7, then sleeping; it
// returns the pid once /proc/PID/fd/7 exists (the fd is open).
func startHolder(t *testing.T, path string) string {
	t.Helper()
	child := exec.Command("sh", "-c", `exec 7<"$1"; exec sleep 30`, "sh", path)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := strconv.Itoa(child.Process.Pid)
	for {
		if c, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.HasPrefix(string(c), "sleep") {
			return pid
		}
		if _, err := os.Stat("/proc/" + pid); err != nil {
			t.Fatalf("holder %s ended", pid)
		}
		exec.Command("true").Run() // yield without a timed sleep
	}
}

// TestFuserSubstringDeleted: a file opened by a process and then unlinked
// is listed by fuser --substring (marked deleted), although its name no
// longer exists; the exact lookup still fails with exit 1.
func TestFuserSubstringDeleted(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	path := filepath.Join(dir, "gone2.txt")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	pid := startHolder(t, path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCaptureCLI("fuser", "--substring", path)
	if code != 0 {
		t.Fatalf("fuser --substring (%d): %q %q", code, out, errOut)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, pid+" ") {
			row = l
		}
	}
	if row == "" || !strings.Contains(row, path) || !strings.Contains(row, "yes") {
		t.Fatalf("fuser --substring: no deleted row for %s in\n%s", pid, out)
	}
	out, errOut, code = runCaptureCLI("fuser", path)
	if code != 1 || out != "" || !strings.Contains(errOut, "no such file or directory") {
		t.Fatalf("fuser exact on a deleted name (%d): %q %q", code, out, errOut)
	}
}

// TestFuserDirectory: fuser DIR lists the process holding the directory
// itself open, not the one holding a file below it, and any PARTIAL
// notice counts the rows the table shows.
func TestFuserDirectory(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	file := filepath.Join(dir, "inside.txt")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dirHolder := startHolder(t, dir)
	fileHolder := startHolder(t, file)
	out, errOut, code := runCaptureCLI("fuser", dir)
	if code != 0 {
		t.Fatalf("fuser dir (%d): %q %q", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], dirHolder+" ") || strings.Contains(out, fileHolder+" ") {
		t.Fatalf("fuser dir: want only %s (the directory's holder), not %s:\n%s", dirHolder, fileHolder, out)
	}
	if strings.Contains(errOut, "PARTIAL") && !strings.Contains(errOut, "PARTIAL result: 1 rows listed") {
		t.Fatalf("fuser dir: the PARTIAL notice does not count the table's rows:\n%s", errOut)
	}
}

// TestFuserMatchesFuser runs `inquest fuser PATH` and psmisc's `fuser -v
// PATH` on a file the test's children hold open, in the same run: the
// same processes, and for each the same command name (psmisc's COMMAND).
func TestFuserMatchesFuser(t *testing.T) {
	fuserBin, err := exec.LookPath("fuser")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("fuser (psmisc) is not installed")
		}
		t.Skip("fuser (psmisc) is not installed")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	path := filepath.Join(dir, "held.txt")
	other := filepath.Join(dir, "other.txt")
	for _, p := range []string{path, other} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	holders := map[string]bool{startHolder(t, path): true, startHolder(t, path): true}
	startHolder(t, other) // another file: in neither list
	out, errOut, code := runCaptureCLI("fuser", path)
	if code != 0 {
		t.Fatalf("inquest fuser: exit %d\n%s%s", code, out, errOut)
	}
	cmd := exec.Command(fuserBin, "-v", path)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("fuser -v: %v\n%s", err, se.String())
	}
	t.Logf("inquest fuser:\n%s\nfuser -v:\n%s", out, se.String())
	ours := map[string]string{} // pid -> NAME
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		ours[f[0]] = f[1]
	}
	// fuser -v prints the PIDs on stdout and, on stderr, a USER ACCESS
	// COMMAND row for each, in the same order (the first after the file
	// name); other stderr lines are its warnings about unreadable fds.
	pids := strings.Fields(so.String())
	var cmds []string
	for _, l := range strings.Split(se.String(), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), path+":"))
		if f := strings.Fields(l); len(f) == 3 && strings.Trim(f[1], "fFcerm.") == "" {
			cmds = append(cmds, f[2])
		}
	}
	if len(cmds) != len(pids) {
		t.Fatalf("fuser -v: %d pids, %d rows:\n%s\n%s", len(pids), len(cmds), so.String(), se.String())
	}
	theirs := map[string]string{}
	for i, pid := range pids {
		theirs[strings.TrimRight(pid, "fFcerm")] = cmds[i]
	}
	if len(theirs) != 2 {
		t.Fatalf("fuser -v lists %d processes, want the 2 holders:\n%s", len(theirs), se.String())
	}
	for pid := range holders {
		if theirs[pid] == "" {
			t.Errorf("fuser -v does not list holder %s", pid)
		}
	}
	for pid, name := range theirs {
		if ours[pid] != name {
			t.Errorf("pid %s: inquest NAME %q, fuser COMMAND %q", pid, ours[pid], name)
		}
	}
	for pid := range ours {
		if theirs[pid] == "" {
			t.Errorf("inquest lists pid %s, fuser does not", pid)
		}
	}
}

// startIn starts name args with working directory dir and returns its pid
// once /proc/PID/comm is want (the exec is done).
func startIn(t *testing.T, dir, want, name string, args ...string) string {
	t.Helper()
	child := exec.Command(name, args...)
	child.Dir = dir
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := strconv.Itoa(child.Process.Pid)
	for {
		if c, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(c)) == want {
			return pid
		}
		if _, err := os.Stat("/proc/" + pid); err != nil {
			t.Fatalf("%s (%s) ended", name, pid)
		}
		exec.Command("true").Run() // yield without a timed sleep
	}
}

// fuserUse is one process in psmisc fuser -v's answer.
type fuserUse struct{ access, command string }

// fuserV runs psmisc's fuser -v PATH and returns its processes by pid:
// the PIDs are on stdout and, on stderr, a USER ACCESS COMMAND row for
// each, in the same order (the first after the file name); other stderr
// lines are its warnings about unreadable fds.
func fuserV(t *testing.T, fuserBin, path string) map[string]fuserUse {
	t.Helper()
	cmd := exec.Command(fuserBin, "-v", path)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 { // 1: no process uses it
			t.Fatalf("fuser -v %s: %v\n%s", path, err, se.String())
		}
	}
	pids := strings.Fields(so.String())
	var rows []fuserUse
	for _, l := range strings.Split(se.String(), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), path+":"))
		if f := strings.Fields(l); len(f) == 3 && len(f[1]) == 5 && strings.Trim(f[1], "fFrcem.") == "" {
			rows = append(rows, fuserUse{f[1], f[2]})
		}
	}
	if len(rows) != len(pids) {
		t.Fatalf("fuser -v %s: %d pids, %d rows:\n%s\n%s", path, len(pids), len(rows), so.String(), se.String())
	}
	out := map[string]fuserUse{}
	for i, pid := range pids {
		out[strings.TrimRight(pid, "fFrcem")] = rows[i]
	}
	return out
}

// TestFuserAccessMatchesFuser: processes the test starts use files of a
// fresh directory in every way psmisc's fuser reports (a working
// directory, a copied executable, a dlopened library mapped without an fd,
// a file held open for reading and one held open for writing); for each
// path `inquest fuser` lists the same processes with the same ACCESS
// letters and command names as `fuser -v` in the same run, and HANDLES
// counts only open fds.
func TestFuserAccessMatchesFuser(t *testing.T) {
	fuserBin, err := exec.LookPath("fuser")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("fuser (psmisc) is not installed")
		}
		t.Skip("fuser (psmisc) is not installed")
	}
	dl := testbuild.BuildDLOpen(t)
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	elsewhere, _ := filepath.EvalSymlinks(t.TempDir())
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, lib, data := filepath.Join(dir, "mysleep"), filepath.Join(dir, "libmapped.so"), filepath.Join(dir, "data.log")
	copyFile(sleepBin, exe)
	copyFile(dl.LibA, lib)
	if err := os.WriteFile(data, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	inDir := startIn(t, dir, "sleep", sleepBin, "30")
	runsCopy := startIn(t, elsewhere, "mysleep", exe, "30")
	mapper := strconv.Itoa(startMapper(t, dl.Loader, lib))
	reader := startIn(t, elsewhere, "sleep", "sh", "-c", `exec 7<"$1"; exec sleep 30`, "sh", data)
	writer := startIn(t, elsewhere, "sleep", "sh", "-c", `exec 7>>"$1"; exec sleep 30`, "sh", data)
	for _, c := range []struct {
		path string
		want map[string]string // pid -> ACCESS, of the test's processes
	}{
		{dir, map[string]string{inDir: "..c.."}},
		{exe, map[string]string{runsCopy: "...e."}},
		{lib, map[string]string{mapper: "....m"}},
		{data, map[string]string{reader: "f....", writer: "F...."}},
	} {
		out, errOut, code := runCaptureCLI("fuser", c.path)
		if code != 0 {
			t.Fatalf("inquest fuser %s: exit %d\n%s%s", c.path, code, out, errOut)
		}
		theirs := fuserV(t, fuserBin, c.path)
		t.Logf("inquest fuser %s:\n%s\nfuser -v: %v", c.path, out, theirs)
		ours := map[string]fuserUse{}
		handles := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			f := strings.Fields(l) // PID NAME ACCESS HANDLES DELETED PATH PROCESS_REF
			ours[f[0]] = fuserUse{f[2], f[1]}
			handles[f[0]] = f[3]
		}
		for pid, acc := range c.want {
			if theirs[pid].access != acc {
				t.Errorf("%s: fuser -v gives pid %s access %q, the test made it %q", c.path, pid, theirs[pid].access, acc)
			}
			want := "0"
			if strings.ContainsAny(acc, "fF") {
				want = "1"
			}
			if handles[pid] != want {
				t.Errorf("%s: pid %s HANDLES %s, want %s", c.path, pid, handles[pid], want)
			}
		}
		for pid, u := range theirs {
			if ours[pid] != u {
				t.Errorf("%s: pid %s: inquest %+v, fuser -v %+v", c.path, pid, ours[pid], u)
			}
		}
		for pid, u := range ours {
			if _, ok := theirs[pid]; !ok {
				t.Errorf("%s: inquest lists pid %s %+v, fuser -v does not", c.path, pid, u)
			}
		}
	}
}
