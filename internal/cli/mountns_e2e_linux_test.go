//go:build linux

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestModulesOtherMountNamespace is case 2 of the container issue: the
// host file DIR/libtarget.so is build B; inside unshare -m a tmpfs on DIR
// holds build A, which the loader dlopens. The modules row carries A's
// build id and the maps device/inode lsof reports (lsof flags the path's
// device/inode mismatch); the offered inspect_binary action names
// /proc/PID/root/DIR/libtarget.so, and following it in the same run gives
// A's build id, while the plain path would have inspected B. After the
// tmpfs copy is unlinked, the row offers no action and says why.
func TestModulesOtherMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare -m and mount need root")
	}
	for _, tool := range []string{"unshare", "lsof"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required under CI: %v", tool, err)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	dl := testbuild.BuildDLOpen(t)
	base := t.TempDir()
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, filepath.Join(base, k))
	}
	t.Setenv("INQUEST_CONFIG", filepath.Join(base, "inquest.toml"))
	t.Setenv("INQUEST_DATA_DIR", "")
	dir := filepath.Join(t.TempDir(), "priv")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libtarget.so")
	b, err := os.ReadFile(dl.LibB)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// the loader blocks reading stdin; "rm" on stdin first unlinks A in
	// its namespace (the shell reads one line), then EOF ends it
	// (the loader's own stdin is fd 3, a pipe the test closes at the end)
	script := "mount -t tmpfs tmpfs " + dir + " && cp " + dl.LibA + " " + lib + " && { " + dl.Loader + " " + lib + " <&3 3<&- & read x; rm " + lib + "; echo removed; wait; }"
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	hold, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{hold}
	t.Cleanup(func() { release.Close() })
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hold.Close()
	t.Cleanup(func() { release.Close(); in.Close(); cmd.Wait() })
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		if strings.Contains(stderr.String(), "Operation not permitted") {
			t.Skipf("the kernel refuses a mount namespace: %s", stderr.String())
		}
		t.Fatalf("loader: %q %v %s", line, err, stderr.String())
	}
	// the loader is the shell's child that maps the library
	pid := 0
	for pid == 0 {
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		for _, f := range strings.Fields(string(kids)) {
			n, _ := strconv.Atoi(f)
			if m, _ := os.ReadFile("/proc/" + f + "/maps"); strings.Contains(string(m), lib) {
				pid = n
			}
		}
	}

	rt, err := newRuntime(context.Background(), runtimeOptions{MCP: true, InProcess: true, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	call := func(name string, args any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(args)
		res, err := rt.Registry.Call(context.Background(), name, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var d map[string]any
		raw, _ := json.Marshal(res.Data)
		json.Unmarshal(raw, &d)
		return d
	}
	moduleRow := func() map[string]any {
		t.Helper()
		d := call("start_capture", map[string]any{"kind": "modules", "pid": pid})
		rows, _ := d["rows"].([]any)
		for _, x := range rows {
			if r := x.(map[string]any); r["path"] == lib {
				return r
			}
		}
		t.Fatalf("no modules row for %s: %v", lib, d)
		return nil
	}
	r := moduleRow()
	alt := "/proc/" + strconv.Itoa(pid) + "/root" + lib
	acts, _ := r["actions"].([]any)
	if r["build_id"] != testbuild.BuildIDA || r["inspect_path"] != alt || len(acts) != 1 || acts[0] != "inspect_binary" || r["action_withheld"] != nil {
		t.Fatalf("modules row: %v (want build A %s, inspect_path %s, action inspect_binary)", r, testbuild.BuildIDA, alt)
	}
	// lsof: the mem line has the mapping's device and inode and flags
	// that the path here is another file
	lo, err := exec.Command("lsof", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("lsof: %v", err)
	}
	flagged := false
	for _, l := range strings.Split(string(lo), "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || f[3] != "mem" || !strings.Contains(l, lib) {
			continue
		}
		var maj, mnr int
		if _, err := fmt.Sscanf(f[5], "%d,%d", &maj, &mnr); err != nil {
			t.Fatalf("lsof device %q: %v", f[5], err)
		}
		if !strings.Contains(l, "(path dev=") {
			t.Fatalf("lsof does not flag the mismatch: %s", l)
		}
		flagged = true
		if want := r["inode"]; f[6] != want && f[7] != want {
			t.Fatalf("lsof inode in %q, row inode %v", l, want)
		}
		if want := fmt.Sprintf("%02x:%02x", maj, mnr); r["device"] != want {
			t.Fatalf("lsof device %s (%s), row device %v", f[5], want, r["device"])
		}
	}
	if !flagged {
		t.Fatalf("lsof has no mem line for %s:\n%s", lib, lo)
	}
	// following the action inspects A; the plain path here is B
	gnu := func(path string) any {
		d := call("inspect_binary", map[string]any{"path": path})
		ins, _ := d["inspection"].(map[string]any)
		id, _ := ins["build_id"].(map[string]any)
		return id["gnu_build_id"]
	}
	if got := gnu(r["inspect_path"].(string)); got != testbuild.BuildIDA {
		t.Fatalf("inspect_binary %s: build id %v, want A %s", r["inspect_path"], got, testbuild.BuildIDA)
	}
	if got := gnu(lib); got != testbuild.BuildIDB {
		t.Fatalf("inspect_binary %s (our view): build id %v, want B", lib, got)
	}

	// A unlinked in the loader's namespace: no action, and why
	io.WriteString(in, "rm\n")
	if l, err := rd.ReadString('\n'); err != nil || l != "removed\n" {
		t.Fatalf("rm: %q %v", l, err)
	}
	r = moduleRow()
	if acts, _ := r["actions"].([]any); len(acts) != 0 || r["inspect_path"] != nil || r["action_withheld"] != "deleted" || r["deleted"] != true {
		t.Fatalf("after unlink: %v", r)
	}
}
