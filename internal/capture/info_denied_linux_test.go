//go:build linux

package capture

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
)

// processInfoMain: CAPTURE_INFO_OF=PID runs ProcessInfo of that process's
// current lifetime with the default fields plus namespaces and prints
// {"partial", "warnings", "coverage", "fields"} as JSON.
func processInfoMain() {
	pid, _ := strconv.Atoi(os.Getenv("CAPTURE_INFO_OF"))
	id, _, err := sample.IdentityOf(int32(pid))
	if err != nil {
		json.NewEncoder(os.Stdout).Encode(map[string]any{"error": err.Error()})
		os.Exit(2)
	}
	c, err := ProcessInfo(context.Background(), id, append(append([]string{}, DefaultInfoFields...), "namespaces"))
	if err != nil {
		json.NewEncoder(os.Stdout).Encode(map[string]any{"error": err.Error()})
		os.Exit(2)
	}
	fields := map[string]any{}
	for _, f := range c.Rows[0].Fields {
		fields[f.Key] = f.Value
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"partial": c.Partial, "warnings": c.Warnings, "coverage": c.Coverage, "fields": fields})
}

// get_process_info of another user's process: run as an unprivileged
// uid (nobody) against a root child, exe, cwd and the namespace links are
// refused, as readlink(1) run as that uid in the same test is refused; the
// capture is partial and coverage.fields_unavailable names each denied
// facet. Run as the owner, the same call is complete.
func TestProcessInfoOtherUserIsPartial(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a helper as another uid")
	}
	const nobody = 65534
	// The test binary, where the unprivileged uid may run it.
	dir, err := os.MkdirTemp("", "inquest-info-denied")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "capture.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(dst, src)
	src.Close()
	dst.Close()

	target := exec.Command("sleep", "60")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	pid := strconv.Itoa(target.Process.Pid)
	as := func(uid uint32, name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		}
		return cmd
	}
	// The reference: readlink as each uid.
	if out, err := as(nobody, "readlink", "/proc/"+pid+"/exe").CombinedOutput(); err == nil {
		t.Skipf("uid %d may read another user's /proc/PID/exe here (%s): nothing is denied", nobody, out)
	}
	if _, err := as(nobody, "readlink", "/proc/"+pid+"/ns/net").CombinedOutput(); err == nil {
		t.Skipf("uid %d may read another user's namespace links here", nobody)
	}
	exe, err := as(0, "readlink", "/proc/"+pid+"/exe").Output()
	if err != nil {
		t.Fatal(err)
	}

	info := func(uid uint32) map[string]any {
		cmd := as(uid, bin)
		cmd.Env = append(os.Environ(), "CAPTURE_INFO_OF="+pid)
		out, err := cmd.Output()
		var m map[string]any
		if jerr := json.Unmarshal(out, &m); jerr != nil || err != nil {
			t.Fatalf("helper as uid %d: %v %v %s", uid, err, jerr, out)
		}
		return m
	}
	denied := info(nobody)
	fields := denied["fields"].(map[string]any)
	cov, _ := denied["coverage"].(map[string]any)
	missing, _ := cov["fields_unavailable"].(map[string]any)
	for _, f := range []string{"exe", "cwd", "namespaces"} {
		v, _ := fields[f].(map[string]any)
		if v["unavailable"] != "access_denied" || missing[f] != "access_denied" {
			t.Errorf("%s as another user: %v (coverage %v)", f, v, missing)
		}
	}
	if denied["partial"] != true || len(denied["warnings"].([]any)) == 0 {
		t.Fatalf("another user's process reported complete: %v", denied)
	}
	if _, ok := missing["parent"]; ok {
		t.Fatalf("a readable field listed unavailable: %v", missing)
	}

	own := info(0)
	if own["partial"] != false {
		t.Fatalf("own process partial: %v", own)
	}
	if v := own["fields"].(map[string]any)["exe"].(map[string]any)["value"]; v != string(exe[:len(exe)-1]) {
		t.Fatalf("exe %v, readlink says %q", v, exe)
	}
	if ns := own["fields"].(map[string]any)["namespaces"].(map[string]any)["value"].(map[string]any); ns["net"] == nil {
		t.Fatalf("namespaces %v", ns)
	}
}
