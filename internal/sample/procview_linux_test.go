package sample

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// procViewReport is what TestProcViewHelper prints: the collector's
// listing, its assessment, and ps -e's PIDs under the same /proc.
type procViewReport struct {
	View    ProcView
	Cov     ViewCoverage
	Listed  []int32
	PS      []int32
	PSPID   int32
	EUID    int
	Problem string
}

// TestProcViewHelper is not a test of its own: TestHidePIDView runs this
// binary as an unprivileged user under a hidepid=2 /proc, where it
// reports its view as JSON on stdout.
func TestProcViewHelper(t *testing.T) {
	if os.Getenv("INQUEST_PROCVIEW_HELPER") != "1" {
		t.Skip("helper of TestHidePIDView")
	}
	var r procViewReport
	r.EUID = os.Geteuid()
	c, err := NewLinuxCollector("/proc")
	if err == nil {
		var snap *Snapshot
		if snap, err = c.Collect(nil); err == nil {
			var tasks int64
			for _, p := range snap.Procs {
				r.Listed = append(r.Listed, p.PID)
				tasks += int64(p.Vals[PThreads])
			}
			r.View = ReadProcView("")
			r.Cov = r.View.Assess(tasks, snap.Denied)
		}
	}
	if err != nil {
		r.Problem = err.Error()
	}
	ps := exec.Command("ps", "-e", "-o", "pid=")
	out, _ := ps.StdoutPipe()
	if err := ps.Start(); err == nil {
		r.PSPID = int32(ps.Process.Pid)
		b, _ := io.ReadAll(out)
		ps.Wait()
		for _, f := range strings.Fields(string(b)) {
			v, _ := strconv.Atoi(f)
			r.PS = append(r.PS, int32(v))
		}
	} else {
		r.Problem += " ps: " + err.Error()
	}
	b, _ := json.Marshal(r)
	fmt.Println("REPORT " + string(b))
}

// TestHidePIDView: run as nobody in a mount namespace whose /proc is
// mounted with hidepid=2, the collector lists exactly the PIDs ps -e
// lists there (but ps itself), and the view is restricted with hidepid
// as its evidence and the kernel's task count above the listed tasks
// (listed + not listed = the kernel's count).
func TestHidePIDView(t *testing.T) {
	needRoot(t)
	needTool(t, "unshare")
	needTool(t, "setpriv")
	needTool(t, "ps")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// a copy nobody can execute
	dir, err := os.MkdirTemp("", "inquest-hidepid")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sample.test")
	src, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "mount -t proc -o hidepid=2 proc /proc && cd / && exec setpriv --reuid=65534 --regid=65534 --clear-groups env INQUEST_PROCVIEW_HELPER=1 " + bin + " -test.run=^TestProcViewHelper$ -test.v"
	out, err := exec.Command("unshare", "-m", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Skipf("the kernel refused the hidepid view (unshare -m, mount -o hidepid=2, setpriv): %v\n%s", err, out)
	}
	var r procViewReport
	for _, l := range strings.Split(string(out), "\n") {
		if j, ok := strings.CutPrefix(l, "REPORT "); ok {
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r.EUID != 65534 || r.Problem != "" {
		t.Fatalf("helper: euid %d problem %q\n%s", r.EUID, r.Problem, out)
	}
	ps := slices.DeleteFunc(slices.Clone(r.PS), func(p int32) bool { return p == r.PSPID })
	slices.Sort(ps)
	slices.Sort(r.Listed)
	if !slices.Equal(ps, r.Listed) {
		t.Fatalf("listed %v, ps -e lists %v (ps itself %d)", r.Listed, r.PS, r.PSPID)
	}
	if r.View.HidePID == "" || !r.View.HidePIDApplies || !r.Cov.Restricted {
		t.Fatalf("view not restricted: %+v %+v", r.View, r.Cov)
	}
	if r.Cov.KernelTasks <= r.Cov.TasksListed || r.Cov.TasksListed+r.Cov.TasksNotListed != r.Cov.KernelTasks {
		t.Fatalf("counts: %+v", r.Cov)
	}
	t.Logf("hidepid=%s: listed %d processes (%d tasks), ps -e %d, kernel tasks %d, not listed %d", r.View.HidePID, len(r.Listed), r.Cov.TasksListed, len(ps), r.Cov.KernelTasks, r.Cov.TasksNotListed)
}
