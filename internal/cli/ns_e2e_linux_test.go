package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needE2ETool skips when a tool is absent outside CI (.ci/run installs
// it); under CI=true a missing tool fails.
func needE2ETool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (.ci/run installs it)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}

// TestPSHidePIDPartial runs the built binary as nobody in a mount
// namespace whose /proc is mounted hidepid=2: `inquest ps --json`
// (host in process) lists as many processes as ps -e run right after by
// the same user there, says partial, and its coverage.proc_view names
// hidepid with listed + not listed tasks = the kernel's task count.
func TestPSHidePIDPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting proc in a mount namespace needs root")
	}
	for _, tool := range []string{"unshare", "setpriv", "ps"} {
		needE2ETool(t, tool)
	}
	e := newHeEnv(t)
	bin := filepath.Join(e.base, "inquest-other")
	b, err := os.ReadFile(e.bin)
	if err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copy the binary: %v", err)
	}
	for _, d := range []string{filepath.Dir(e.base), e.base} {
		os.Chmod(d, 0o711)
	}
	for _, d := range []string{"run", "config", "state", "data", "tmp"} {
		os.Chown(filepath.Join(e.base, d), 65534, 65534)
	}
	out := filepath.Join(e.base, "tmp")
	as := "setpriv --reuid=65534 --regid=65534 --clear-groups "
	script := "mount -t proc -o hidepid=2 proc /proc && cd / && " +
		as + "env INQUEST_IN_PROCESS=1 " + bin + " ps --json > " + out + "/ps.json && " +
		as + "ps -e -o pid= > " + out + "/ps.txt && " +
		as + "env INQUEST_IN_PROCESS=1 " + bin + " fuser --json / > " + out + "/fuser.json; true"
	cmd := exec.Command("unshare", "-m", "sh", "-c", script)
	cmd.Env = e.env
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("the kernel refused the hidepid view (unshare -m, mount -o hidepid=2, setpriv): %v\n%s", err, o)
	}
	raw, _ := os.ReadFile(filepath.Join(out, "ps.json"))
	psTxt, _ := os.ReadFile(filepath.Join(out, "ps.txt"))
	var env struct {
		Status   string `json:"status"`
		Coverage struct {
			ProcView struct {
				Restricted     bool     `json:"restricted"`
				Evidence       []string `json:"evidence"`
				HidePID        *string  `json:"hidepid"`
				KernelTasks    *int64   `json:"kernel_tasks"`
				TasksListed    int64    `json:"tasks_listed"`
				TasksNotListed *int64   `json:"tasks_not_listed"`
			} `json:"proc_view"`
		} `json:"coverage"`
		Data struct {
			Rows []map[string]any `json:"rows"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, raw)
	}
	pv := env.Coverage.ProcView
	// ps -e lists itself where inquest listed itself: the same count
	if n := len(strings.Fields(string(psTxt))); n != len(env.Data.Rows) {
		t.Fatalf("inquest listed %d processes, ps -e %d (%q)", len(env.Data.Rows), n, psTxt)
	}
	if env.Status != "partial" || !pv.Restricted || pv.HidePID == nil || !strings.Contains(strings.Join(pv.Evidence, " "), "hidepid") {
		t.Fatalf("status %s, proc_view %+v", env.Status, pv)
	}
	if pv.KernelTasks == nil || pv.TasksNotListed == nil || pv.TasksListed+*pv.TasksNotListed != *pv.KernelTasks || *pv.TasksNotListed == 0 {
		t.Fatalf("counts do not add up: %+v", pv)
	}
	t.Logf("hidepid=%s: inquest %d processes, ps -e %d; tasks %d listed + %d not listed = %d (/proc/loadavg)", *pv.HidePID, len(env.Data.Rows), len(strings.Fields(string(psTxt))), pv.TasksListed, *pv.TasksNotListed, *pv.KernelTasks)
	// The file-user scan under the same view says so too.
	raw, _ = os.ReadFile(filepath.Join(out, "fuser.json"))
	var fu struct {
		Status   string `json:"status"`
		Coverage struct {
			ProcView struct {
				Restricted bool     `json:"restricted"`
				Evidence   []string `json:"evidence"`
			} `json:"proc_view"`
		} `json:"coverage"`
	}
	if err := json.Unmarshal(raw, &fu); err != nil {
		t.Fatalf("fuser --json: %v\n%s", err, raw)
	}
	if fu.Status != "partial" || !fu.Coverage.ProcView.Restricted || !strings.Contains(strings.Join(fu.Coverage.ProcView.Evidence, " "), "hidepid") {
		t.Fatalf("fuser under hidepid: status %s, proc_view %+v", fu.Status, fu.Coverage.ProcView)
	}
}

// TestPSContainerColumn: with a podman container running (an image the
// test imports from a root file system of one static binary it builds),
// `inquest ps` shows a CONTAINER column with podman:<the 12-digit id
// podman ps prints> on the container's process, `--container
// podman:<id>` lists exactly that process, and -o pid,container,nspid
// shows its PID inside (1).
func TestPSContainerColumn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("podman here runs as root")
	}
	podman := needE2ETool(t, "podman")
	needE2ETool(t, "runc")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	// It listens in the container's own network namespace, so the
	// host-wide network capture must find it there.
	os.WriteFile(src, []byte("package main\nimport (\"net\"; \"time\")\nfunc main() { l, err := net.Listen(\"tcp4\", \"127.0.0.1:45679\"); if err != nil { panic(err) }; defer l.Close(); time.Sleep(time.Hour) }\n"), 0o644)
	root := filepath.Join(dir, "root")
	os.Mkdir(root, 0o755)
	build := exec.Command(goTool, "build", "-o", filepath.Join(root, "sleeper"), src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	build.Dir = dir
	if o, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, o)
	}
	tar := filepath.Join(dir, "root.tar")
	if o, err := exec.Command("tar", "-C", root, "-cf", tar, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, o)
	}
	pm := func(args ...string) (string, error) {
		o, err := exec.Command(podman, append([]string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(o)), err
	}
	image := "localhost/inquest-cli-sleeper:" + strconv.Itoa(os.Getpid())
	if o, err := pm("import", tar, image); err != nil {
		t.Skipf("podman import cannot run here: %v: %s", err, o)
	}
	t.Cleanup(func() { pm("rmi", "-f", image) })
	o, err := pm("run", "-d", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "/sleeper")
	if err != nil {
		t.Skipf("podman cannot run a container here: %v: %s", err, o)
	}
	lines := strings.Split(o, "\n")
	cid := lines[len(lines)-1]
	t.Cleanup(func() { pm("rm", "-f", "-t", "0", cid) })
	pidS, err := pm("inspect", "-f", "{{.State.Pid}}", cid)
	if err != nil {
		t.Fatal(err, pidS)
	}
	short, err := pm("ps", "--filter", "id="+cid, "--format", "{{.ID}}")
	if err != nil || len(short) != 12 {
		t.Fatalf("podman ps: %v %q", err, short)
	}
	e := newHeEnv(t)
	e.env = append(e.env, "INQUEST_IN_PROCESS=1")
	out, code := e.run("ps")
	if code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "CONTAINER") {
		t.Fatalf("ps: exit %d\n%s", code, out)
	}
	found := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == pidS {
			found = strings.Contains(l, "podman:"+short)
		}
	}
	if !found {
		t.Fatalf("no row of pid %s with podman:%s in\n%s", pidS, short, out)
	}
	out, code = e.run("ps", "--container", "podman:"+short, "-o", "pid,container,nspid")
	want := []string{"PID CONTAINER NSPID", pidS + " podman:" + short + " 1"}
	got := strings.Split(strings.TrimSpace(out), "\n")
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if code != 0 || len(got) != 2 || norm(got[0]) != want[0] || norm(got[1]) != want[1] {
		t.Fatalf("ps --container podman:%s: exit %d\n%s\nwant %q", short, code, out, want)
	}
	// Its listener is in the host-wide network capture, labelled with the
	// container's network namespace (as /proc/PID/ns/net names it) and
	// its container.
	nsLink, err := os.Readlink("/proc/" + pidS + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var sockets struct {
		Data struct {
			Rows []map[string]any `json:"rows"`
		} `json:"data"`
	}
	waitFact(t, "the container's listener in the host-wide network capture", func() bool {
		out, code := e.run("sockets", "--listen", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &sockets) != nil {
			return false
		}
		for _, r := range sockets.Data.Rows {
			local, _ := r["local"].(map[string]any)
			if local["port"] == 45679.0 && fmt.Sprint(r["pid"]) == pidS {
				if ns := fmt.Sprintf("net:[%.0f]", r["net_ns"]); ns != nsLink || r["container"] != "podman:"+short {
					t.Fatalf("the container's listener row: net_ns %v (want %s), container %v (want podman:%s)", r["net_ns"], nsLink, r["container"], short)
				}
				return true
			}
		}
		return false
	})
	out, code = e.run("ps", "--container", "rkt:abcd")
	if code == 0 || !strings.Contains(out, "--container") {
		t.Fatalf("an unknown runtime: exit %d\n%s", code, out)
	}
}
