//go:build linux

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
