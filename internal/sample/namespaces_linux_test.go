package sample

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needTool skips when name is absent outside CI (.ci/run installs it);
// under CI=true a missing tool fails.
func needTool(t *testing.T, name string) string {
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

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating namespaces and mounting proc needs root")
	}
}

// childOf polls /proc/PID/task/PID/children for pid's first child.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			c, _ := strconv.Atoi(f[0])
			// wait for the exec (its comm is no longer unshare's)
			if comm, _ := os.ReadFile("/proc/" + f[0] + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
				return c
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no child of %d appeared", pid)
	return 0
}

func lsnsInode(t *testing.T, kind string, pid int) uint64 {
	t.Helper()
	out, err := exec.Command("lsns", "-t", kind, "-p", strconv.Itoa(pid), "-n", "-o", "NS").Output()
	if err != nil {
		t.Fatalf("lsns -t %s -p %d: %v", kind, pid, err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("lsns output %q", out)
	}
	return v
}

// TestNamespacesOfUnshared: a sleep the test starts in new PID, mount and
// network namespaces (unshare -p -f --mount-proc -n) has the namespace
// inodes lsns reports for it, others equal to this process's, and the
// NSpid chain [host PID, PID inside] where ps run inside its namespaces
// (nsenter) shows sleep at that inner PID; the collector's snapshot
// carries the same facts, and a running process's facts are never 0.
func TestNamespacesOfUnshared(t *testing.T) {
	needRoot(t)
	needTool(t, "unshare")
	needTool(t, "nsenter")
	needTool(t, "lsns")
	needTool(t, "ps")
	// --kill-child: the sleep (PID 1 of its namespace) dies with unshare
	cmd := exec.Command("unshare", "-p", "-f", "--kill-child", "--mount-proc", "-n", "sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := childOf(t, cmd.Process.Pid)
	defer syscall.Kill(pid, syscall.SIGKILL)
	ns := Namespaces(pid)
	self := Namespaces(os.Getpid())
	for i, k := range NamespaceKinds {
		if !ns.Known(i) || !self.Known(i) {
			t.Fatalf("%s unknown: %q / %q", k, ns.Reason[i], self.Reason[i])
		}
		if want := lsnsInode(t, k, pid); ns.Inode[i] != want {
			t.Fatalf("%s inode %d, lsns says %d", k, ns.Inode[i], want)
		}
		changed := k == "pid" || k == "net" || k == "mnt"
		if (ns.Inode[i] != self.Inode[i]) != changed {
			t.Fatalf("%s: child %d, self %d (changed should be %v)", k, ns.Inode[i], self.Inode[i], changed)
		}
	}
	if len(ns.NSpid) != 2 || ns.NSpid[0] != int32(pid) {
		t.Fatalf("NSpid %v, host pid %d", ns.NSpid, pid)
	}
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-p", "-m", "ps", "-e", "-o", "pid=,comm=").Output()
	if err != nil {
		t.Fatal(err)
	}
	inner, _ := ns.InnerPID()
	found := false
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[1] == "sleep" && f[0] == strconv.Itoa(int(inner)) {
			found = true
		}
	}
	if !found {
		t.Fatalf("ps inside the namespace:\n%s\nhas no sleep at pid %d", out, inner)
	}
	c, err := NewLinuxCollector("/proc")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := snap.Find(int32(pid))
	if p == nil || p.Facts == nil || p.Facts.Namespaces.Inode != ns.Inode || len(p.Facts.Namespaces.NSpid) != 2 {
		t.Fatalf("snapshot facts of %d: %+v", pid, p)
	}
	for i := range snap.Procs {
		q := &snap.Procs[i]
		if q.Facts == nil {
			t.Fatalf("pid %d has no facts", q.PID)
		}
		for k := range NamespaceKinds {
			if !q.Facts.Namespaces.Known(k) && q.Facts.Namespaces.Reason[k] == "" {
				t.Fatalf("pid %d: %s unknown without a reason", q.PID, NamespaceKinds[k])
			}
		}
	}
}

// TestContainerOfRealCgroups: this process's own cgroup file parses to a
// known answer with its raw path kept (on this hybrid host: a v1
// hierarchy at a path no rule fits is unknown, never a guess), and
// processes the test moves into nested cgroups it creates get the rule
// of their path: docker/<id> is docker with that id, a plain name is
// unknown with that path.
func TestContainerOfRealCgroups(t *testing.T) {
	selfFile, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip("no /proc/self/cgroup:", err)
	}
	self := ContainerOf(os.Getpid())
	if self.Runtime == "" || (self.Runtime == RuntimeUnknown && self.Cgroup == "") {
		t.Fatalf("self: %+v from %q", self, selfFile)
	}
	if !strings.Contains(string(selfFile), self.Cgroup) {
		t.Fatalf("raw path %q not in %q", self.Cgroup, selfFile)
	}
	needRoot(t)
	// a writable v1 hierarchy (pids) or the unified one
	var base, line string
	for _, cand := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(cand, "cgroup.procs")); err == nil {
			base = cand
			break
		}
	}
	if base == "" {
		t.Skip("no cgroup hierarchy with cgroup.procs is mounted")
	}
	// the test's cgroups sit under this process's cgroup in that hierarchy
	for _, l := range strings.Split(string(selfFile), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && ((base == "/sys/fs/cgroup/pids" && parts[1] == "pids") || (base != "/sys/fs/cgroup/pids" && parts[1] == "")) {
			line = parts[2]
		}
	}
	var rb [32]byte
	rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	top := filepath.Join(base, line, "inquest-test-"+id[:8])
	cases := []struct {
		rel, runtime, id string
	}{
		{"docker/" + id, RuntimeDocker, id},
		{"plain-group", RuntimeUnknown, ""},
	}
	for _, c := range cases {
		dir := filepath.Join(top, c.rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Skipf("cannot create a cgroup in %s: %v", base, err)
		}
		sl := exec.Command("sleep", "1000")
		if err := sl.Start(); err != nil {
			t.Fatal(err)
		}
		err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sl.Process.Pid)), 0)
		if err != nil {
			sl.Process.Kill()
			sl.Wait()
			t.Skipf("cannot move a process into %s: %v", dir, err)
		}
		got := ContainerOf(sl.Process.Pid)
		sl.Process.Kill()
		sl.Wait()
		wantPath := filepath.Join(line, "inquest-test-"+id[:8], c.rel)
		if got.Runtime != c.runtime || got.ID != c.id || got.Cgroup != wantPath {
			t.Errorf("%s: %+v, want runtime %s id %q cgroup %s", c.rel, got, c.runtime, c.id, wantPath)
		}
	}
	// remove the test's cgroups (their processes were reaped)
	deadline := time.Now().Add(2 * time.Minute)
	for _, d := range []string{filepath.Join(top, "docker", id), filepath.Join(top, "docker"), filepath.Join(top, "plain-group"), top} {
		for os.Remove(d) != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestContainerOfPodman: a container podman runs (an image imported from
// a root file system of one static binary the test builds) is podman
// with the id `podman inspect` prints, and its PID namespace puts it at
// PID 1 inside.
func TestContainerOfPodman(t *testing.T) {
	needRoot(t)
	podman := needTool(t, "podman")
	needTool(t, "runc")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH to build the container's binary")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\nimport \"time\"\nfunc main() { time.Sleep(time.Hour) }\n"), 0o644)
	root := filepath.Join(dir, "root")
	os.Mkdir(root, 0o755)
	build := exec.Command(goTool, "build", "-o", filepath.Join(root, "sleeper"), src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	tar := filepath.Join(dir, "root.tar")
	if out, err := exec.Command("tar", "-C", root, "-cf", tar, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	// runc and the cgroupfs manager: crun refuses a hybrid cgroup host,
	// and the sandbox's hard RLIMIT_NOFILE is below podman's default
	pm := func(args ...string) (string, error) {
		all := append([]string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}, args...)
		out, err := exec.Command(podman, all...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	image := "localhost/inquest-test-sleeper:" + strconv.Itoa(os.Getpid())
	if out, err := pm("import", tar, image); err != nil {
		t.Skipf("podman import cannot run here: %v: %s", err, out)
	}
	defer pm("rmi", "-f", image)
	out, err := pm("run", "-d", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "/sleeper")
	if err != nil {
		t.Skipf("podman cannot run a container here: %v: %s", err, out)
	}
	lines := strings.Split(out, "\n")
	cid := lines[len(lines)-1]
	defer pm("rm", "-f", "-t", "0", cid)
	js, err := pm("inspect", cid)
	if err != nil {
		t.Fatalf("podman inspect: %v: %s", err, js)
	}
	var info []struct {
		ID    string `json:"Id"`
		State struct{ Pid int }
	}
	if err := json.Unmarshal([]byte(js), &info); err != nil || len(info) != 1 || info[0].State.Pid == 0 {
		t.Fatalf("podman inspect output: %v %s", err, js)
	}
	got := ContainerOf(info[0].State.Pid)
	if got.Runtime != RuntimePodman || got.ID != info[0].ID {
		t.Fatalf("ContainerOf(%d) = %+v; podman inspect says id %s", info[0].State.Pid, got, info[0].ID)
	}
	ns := Namespaces(info[0].State.Pid)
	if in, ok := ns.InnerPID(); !ok || in != 1 || len(ns.NSpid) != 2 {
		t.Fatalf("NSpid of the container's process: %v", ns.NSpid)
	}
}
