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
