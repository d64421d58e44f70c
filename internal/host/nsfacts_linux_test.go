package host

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// sampledAs waits (bounded by minutes) until the latest snapshot holds
// pid with comm.
func sampledAs(t *testing.T, h *Host, pid int, comm string) *sample.Process {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if p := h.Sampler().Latest().Find(int32(pid)); p != nil && p.Comm == comm {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pid %d (%s) never sampled", pid, comm)
	return nil
}

// TestNamespacePIDTargets: a sleep in a new PID namespace (unshare -p -f
// --mount-proc) is found by list_processes filter {pid_ns, pid: 1} as
// its host PID (filter.pid read inside filter.pid_ns), its row carries ns_pid [host, 1] and namespaces.pid the
// inode lsns reports, resolve_pid {pid: 1, pid_ns} answers its host PID,
// and a PID the namespace lacks is PROCESS_EXITED at /pid_ns; pid_ns
// alone lists the namespace's processes. The listing's proc_view
// coverage adds up.
func TestNamespacePIDTargets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare -p needs root")
	}
	for _, tool := range []string{"unshare", "lsns"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool, "is not installed")
		}
	}
	h, s := captureHost(t)
	// --kill-child: the sleep (PID 1 of its namespace) dies with unshare
	cmd := exec.Command("unshare", "-p", "-f", "--kill-child", "--mount-proc", "sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var pid int
	deadline := time.Now().Add(2 * time.Minute)
	for pid == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			pid, _ = strconv.Atoi(f[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("unshare started no child")
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	sampledAs(t, h, pid, "sleep")
	out, err := exec.Command("lsns", "-t", "pid", "-p", strconv.Itoa(pid), "-n", "-o", "NS").Output()
	if err != nil {
		t.Fatal(err)
	}
	pidNS, _ := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	d, res, err := dispatch(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"pid_ns": pidNS, "pid": 1}, "projection": []string{"pid", "namespaces", "ns_pid", "container"}})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := d["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("rows %v (data %v, res %+v)", d["rows"], d, res)
	}
	r := rows[0].(map[string]any)
	nsp, _ := r["ns_pid"].(map[string]any)["value"].([]any)
	if int(r["pid"].(float64)) != pid || len(nsp) != 2 || int(nsp[0].(float64)) != pid || nsp[1].(float64) != 1 {
		t.Fatalf("row %v, want host pid %d with ns_pid [%d 1]", r, pid, pid)
	}
	if got := uint64(r["namespaces"].(map[string]any)["pid"].(float64)); got != pidNS {
		t.Fatalf("namespaces.pid %d, lsns %d", got, pidNS)
	}
	if c := r["container"].(map[string]any); c["runtime"] == nil || c["runtime"] == "" {
		t.Fatalf("container %v", c)
	}
	cov, _ := d["coverage"].(map[string]any)
	if cov == nil {
		cm, _ := res.Coverage.(map[string]any)
		cov = cm
	}
	pv, _ := cov["proc_view"].(map[string]any)
	if pv == nil {
		t.Fatalf("no proc_view in coverage %v / %v", d["coverage"], res.Coverage)
	}
	if k, ok := pv["kernel_tasks"].(float64); ok {
		if pv["tasks_listed"].(float64)+pv["tasks_not_listed"].(float64) != k && pv["tasks_not_listed"].(float64) != 0 {
			t.Fatalf("proc_view does not add up: %v", pv)
		}
	}
	rd, _, err := dispatch(t, h, s, ResolvePIDMethod, map[string]any{"pid": 1, "pid_ns": pidNS})
	if err != nil || int(rd["pid"].(float64)) != pid || rd["pid_ns"].(float64) != float64(pidNS) {
		t.Fatalf("resolve_pid {1, %d}: %v %v, want host pid %d", pidNS, rd, err, pid)
	}
	_, _, err = dispatch(t, h, s, ResolvePIDMethod, map[string]any{"pid": 4000000, "pid_ns": pidNS})
	if e := contract.AsError(err); err == nil || e.Code != contract.CodeProcessExited || e.Field != "/pid_ns" {
		t.Fatalf("a pid the namespace lacks: %v", err)
	}
	// pid_ns alone lists the namespace's processes: the sleep only
	d, _, err = dispatch(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"pid_ns": pidNS}})
	if rows, _ := d["rows"].([]any); err != nil || len(rows) != 1 {
		t.Fatalf("pid_ns alone: %v %v", d["rows"], err)
	}
}

// TestContainerFilter: a process that moved itself into a nested cgroup
// docker/<id> the test creates (before exec, so the facts read at exec
// see it) is listed by filter.container {runtime: docker, id: <prefix>}
// and {runtime: any}, with that id and raw path; another runtime and
// another id list nothing of it.
func TestContainerFilter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	h, s := captureHost(t)
	self, _ := os.ReadFile("/proc/self/cgroup")
	base, line := "", ""
	for _, l := range strings.Split(string(self), "\n") {
		if p := strings.SplitN(l, ":", 3); len(p) == 3 && p[1] == "pids" {
			base, line = "/sys/fs/cgroup/pids", p[2]
		}
	}
	if base == "" {
		for _, l := range strings.Split(string(self), "\n") {
			if p := strings.SplitN(l, ":", 3); len(p) == 3 && p[0] == "0" {
				base, line = "/sys/fs/cgroup", p[2]
				if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.procs"); err == nil {
					base = "/sys/fs/cgroup/unified"
				}
			}
		}
	}
	var rb [32]byte
	rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	top := filepath.Join(base, line, "inquest-hosttest-"+id[:8])
	dir := filepath.Join(top, "docker", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Minute)
		for _, d := range []string{dir, filepath.Join(top, "docker"), top} {
			for os.Remove(d) != nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	cmd := exec.Command("sh", "-c", "echo $$ > "+filepath.Join(dir, "cgroup.procs")+" && exec sleep 1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sampledAs(t, h, cmd.Process.Pid, "sleep")
	list := func(f map[string]any) []any {
		t.Helper()
		d, _, err := dispatch(t, h, s, "list_processes", map[string]any{"filter": f, "projection": []string{"pid", "container"}})
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := d["rows"].([]any)
		return rows
	}
	has := func(rows []any) bool {
		for _, r := range rows {
			m := r.(map[string]any)
			if int(m["pid"].(float64)) == cmd.Process.Pid {
				c := m["container"].(map[string]any)
				if c["runtime"] != "docker" || c["id"] != id || !strings.HasSuffix(c["cgroup"].(string), "/docker/"+id) {
					t.Fatalf("container %v", c)
				}
				return true
			}
		}
		return false
	}
	for _, f := range []map[string]any{{"container": "docker:" + id[:12]}, {"container": "any"}, {"container": id}, {"container": "docker"}} {
		if !has(list(f)) {
			t.Fatalf("filter %v does not list the process", f)
		}
	}
	for _, f := range []map[string]any{{"container": "podman"}, {"container": "ffff" + id[4:12]}, {"container": "none"}} {
		if has(list(f)) {
			t.Fatalf("filter %v lists the process", f)
		}
	}
	_, _, err := dispatch(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"container": "ab"}})
	if e := contract.AsError(err); err == nil || e.Code != contract.CodeInvalidArgument || e.Field != "/filter/container" {
		t.Fatalf("a 2-character id: %v", err)
	}
	_, _, err = dispatch(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"container": "rkt:abcdef"}})
	if e := contract.AsError(err); err == nil || e.Code != contract.CodeInvalidArgument || !strings.Contains(e.Message, "rkt") {
		t.Fatalf("an unknown runtime: %v", err)
	}
}
