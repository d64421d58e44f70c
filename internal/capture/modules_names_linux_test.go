//go:build linux

package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestModulesReplacedLibrary: a process dlopens libtarget.so (build A);
// the file is removed and build B copied to the same path. The modules
// row is the mapped object: path without the suffix, deleted and replaced
// true, build id, size and device/inode of A (read through map_files),
// not B's; readelf -n on A, run here, gives the same build id.
func TestModulesReplacedLibrary(t *testing.T) {
	fx := testbuild.BuildDLOpen(t)
	loader, libA, libB := fx.Loader, fx.LibA, fx.LibB
	dir := t.TempDir()
	lib := filepath.Join(dir, "libtarget.so")
	copyFile(t, libA, lib)
	var stA os.FileInfo
	stA, _ = os.Stat(lib)
	cmd := exec.Command(loader, lib)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready 1\n" {
		t.Fatalf("loader: %q", line)
	}
	id := identityOf(t, cmd.Process.Pid)
	check := func(wantDeleted, wantReplaced bool, wantSize int64) {
		t.Helper()
		c, err := Modules(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var rows []*Row
		for i := range c.Rows {
			if c.Rows[i].Path == lib {
				rows = append(rows, &c.Rows[i])
			}
		}
		if len(rows) != 1 {
			t.Fatalf("%d rows for %s", len(rows), lib)
		}
		r := rows[0]
		get := func(k string) any { v, _ := r.Get(k); return v }
		if get("path") != lib || get("deleted") != wantDeleted || get("replaced") != wantReplaced {
			t.Fatalf("row: %v", r.Fields)
		}
		if get("build_id") != testbuild.BuildIDA || get("size_bytes") != strconv.FormatInt(wantSize, 10) || get("metadata_unavailable") != nil {
			t.Fatalf("facts are not the mapped object's: %v", r.Fields)
		}
	}
	check(false, false, stA.Size())
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	copyFile(t, libB, lib)
	check(true, true, stA.Size())
	if _, err := exec.LookPath("readelf"); err == nil {
		b, _ := exec.Command("readelf", "-n", libA).Output()
		if !strings.Contains(string(b), "Build ID: "+testbuild.BuildIDA) {
			t.Fatalf("readelf -n: %s", b)
		}
	}
}

// TestModulesWithoutMapFiles: collecting as an unprivileged user (nobody,
// through setpriv), map_files cannot be opened; the file at the path is
// used only while it is the mapped object, and once the library is
// replaced the facts are null with metadata_unavailable "access_denied",
// never B's.
func TestModulesWithoutMapFiles(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the collector as another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed (.ci/run installs util-linux)")
	}
	fx := testbuild.BuildDLOpen(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir()'s parent
	os.Chmod(fx.Dir, 0o755)
	self := filepath.Join(dir, "capture.test")
	copyFile(t, os.Args[0], self)
	lib := filepath.Join(dir, "libtarget.so")
	copyFile(t, fx.LibA, lib)
	asNobody := func(args ...string) *exec.Cmd {
		return exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
	}
	cmd := asNobody(fx.Loader, lib)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready 1\n" {
		t.Fatalf("loader: %q", line)
	}
	// setpriv execs the loader: same pid
	id := identityOf(t, cmd.Process.Pid)
	collect := func() map[string]any {
		t.Helper()
		c := asNobody(self, "-test.run=^$")
		c.Env = append(os.Environ(), "CAPTURE_MODULES_OF="+strconv.Itoa(int(id.PID))+" "+strconv.FormatUint(id.StartTicks, 10))
		b, err := c.Output()
		if err != nil {
			t.Fatalf("collector as nobody: %v %s", err, b)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(l), &r) == nil && r["path"] == lib {
				return r
			}
		}
		t.Fatalf("no row for %s in:\n%s", lib, b)
		return nil
	}
	r := collect()
	if r["build_id"] != testbuild.BuildIDA || r["metadata_unavailable"] != nil || r["deleted"] != false || r["replaced"] != false {
		t.Fatalf("before the replacement: %v", r)
	}
	os.Remove(lib)
	copyFile(t, fx.LibB, lib)
	r = collect()
	if r["build_id"] != nil || r["size_bytes"] != nil || r["modified_at"] != nil || r["metadata_unavailable"] != "access_denied" ||
		r["deleted"] != true || r["replaced"] != true {
		t.Fatalf("after the replacement: %v", r)
	}
}
