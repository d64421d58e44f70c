//go:build linux

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/managed/jvmtest"
)

// jvmUser is the unprivileged user the other-user test runs its JVM as
// (created with useradd when absent); the caller runs as nobody.
const jvmUser = "inquest-jvm"

// TestRuntimeOtherUsersJVM: a JVM run by one unprivileged user, asked
// about by another unprivileged user (nobody, running the built binary),
// is a JVM whose collection is unavailable for the permission reason (its
// hsperfdata file is the owner's alone); root, which reads every file,
// sees the same JVM as supported and disabled, with the version jcmd
// reports.
func TestRuntimeOtherUsersJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as two other users")
	}
	jdk := jvmtest.Default(t)
	if out, err := exec.Command("id", "-u", jvmUser).CombinedOutput(); err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", jvmUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v\n%s", jvmUser, err, out)
		}
	} else if string(bytes.TrimSpace(out)) == "65534" {
		t.Fatalf("%s is nobody", jvmUser)
	}
	p := jvmtest.StartAs(t, jdk, jvmUser)
	pid := strconv.Itoa(p.PID)
	st, err := os.Stat("/proc/" + pid)
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid == 0 || uid == 65534 {
		t.Fatalf("the JVM runs as uid %d", uid)
	}

	// The caller: nobody, with its own world-writable directories and a
	// copy of the binary it can execute.
	bin := heBinary(t)
	dir, err := os.MkdirTemp("", "inquest-caller-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "inquest")
	if err := os.WriteFile(other, b, 0o755); err != nil {
		t.Fatal(err)
	}
	runtime := func(asNobody bool) map[string]any {
		t.Helper()
		home := filepath.Join(dir, map[bool]string{true: "nobody", false: "root"}[asNobody])
		os.MkdirAll(home, 0o700)
		if asNobody {
			os.Chown(home, 65534, 65534)
		}
		cmd := exec.Command(other, "runtime", pid, "--json")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "INQUEST_IN_PROCESS=1",
			"INQUEST_CONFIG=" + filepath.Join(home, "inquest.toml"), "XDG_RUNTIME_DIR=" + home,
			"XDG_STATE_HOME=" + home, "XDG_DATA_HOME=" + home, "XDG_CACHE_HOME=" + home, "TMPDIR=" + home}
		if asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("inquest runtime %s --json (nobody %v): %v\n%s%s", pid, asNobody, err, out.String(), errb.String())
		}
		var env struct {
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(out.Bytes(), &env); err != nil {
			t.Fatalf("runtime --json: %v\n%s", err, out.String())
		}
		return env.Data
	}
	d := runtime(true)
	t.Logf("as nobody: runtime %v state %v reason %v detail %v", d["runtime"], d["state"], d["reason"], d["detail"])
	if d["runtime"] != "jvm" || d["state"] != "unavailable" || d["reason"] != "permission" || d["supported"] != false || d["enabled"] != false {
		t.Fatalf("another user's JVM as nobody: %v", d)
	}
	if _, ok := d["values"]; ok {
		t.Fatalf("values reported for another user's JVM: %v", d)
	}
	d = runtime(false)
	t.Logf("as root: runtime %v state %v version %v supported %v", d["runtime"], d["state"], d["version"], d["supported"])
	if d["runtime"] != "jvm" || d["state"] != "disabled" || d["supported"] != true || d["reason"] != "not_authorized" && d["reason"] != nil {
		t.Fatalf("the same JVM as root: %v", d)
	}
	jcmd := filepath.Join(filepath.Dir(jdk.Java), "jcmd")
	out, err := exec.Command(jcmd, pid, "VM.version").Output()
	if err != nil {
		t.Fatalf("jcmd VM.version: %v", err)
	}
	if v, _ := d["version"].(string); v == "" || !bytes.Contains(out, []byte(v)) {
		t.Fatalf("version %q not in jcmd VM.version:\n%s", v, out)
	}
}
