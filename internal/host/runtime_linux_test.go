package host

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/managed/jvmtest"
	"github.com/inquest-dev/inquest/internal/sample"
)

// runtimeState reads get_runtime_collection for ref.
func runtimeState(t *testing.T, h *Host, s *Session, ref string) map[string]any {
	t.Helper()
	d, _ := mustCall(t, h, s, "get_runtime_collection", map[string]any{"process_ref": ref})
	return d
}

// authorize enables collection for ref and confirms it from another local
// session, returning the operation's final state.
func authorize(t *testing.T, h *Host, s, console *Session, ref, opID string) map[string]any {
	t.Helper()
	d, res := mustCall(t, h, s, "set_runtime_collection", map[string]any{"process_ref": ref, "enabled": true, "operation_id": opID, "expected_revision": revision(t, h, s)})
	if d["state"] != "pending_confirmation" || res.NextAction != nil {
		t.Fatalf("enable is not pending a local confirmation: %v", d)
	}
	done, _ := mustCall(t, h, console, ConfirmMethod, map[string]any{"operation_id": opID, "decision": "confirm"})
	if done["state"] != "succeeded" {
		t.Fatalf("confirmed enable: %v", done)
	}
	return done
}

// jstatGC runs `jstat -gc PID` once: column name -> value.
func jstatGC(t *testing.T, jdk jvmtest.JDK, pid int) map[string]string {
	t.Helper()
	jstat := filepath.Join(filepath.Dir(jdk.Java), "jstat")
	out, err := exec.Command(jstat, "-gc", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("jstat: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("jstat -gc printed %q", out)
	}
	names, vals := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(names) != len(vals) {
		t.Fatalf("jstat -gc printed %q", out)
	}
	m := map[string]string{}
	for i := range names {
		m[names[i]] = vals[i]
	}
	return m
}

// jcmdPerf runs `jcmd PID PerfCounter.print`: name -> value.
func jcmdPerf(t *testing.T, jdk jvmtest.JDK, pid int) map[string]string {
	t.Helper()
	jcmd := filepath.Join(filepath.Dir(jdk.Java), "jcmd")
	out, err := exec.Command(jcmd, strconv.Itoa(pid), "PerfCounter.print").Output()
	if err != nil {
		t.Fatalf("jcmd: %v", err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m
}

var comparedSlots = []int{sample.PJVMHeapUsed, sample.PJVMEdenUsed, sample.PJVMSurvivorUsed, sample.PJVMOldUsed, sample.PJVMOldCommitted,
	sample.PJVMMetaspaceUsed, sample.PJVMMetaspaceCommitted, sample.PJVMYoungGCCount, sample.PJVMYoungGCTime, sample.PJVMOldGCCount,
	sample.PJVMOldGCTime, sample.PJVMThreadsLive, sample.PJVMClassesLoaded, sample.PJVMClassesUnloaded}

// settledSample waits for a published snapshot whose JVM values are
// those of the next one too, taken after the reference tools ran, and
// returns it with the reference output taken in between: the JVM is idle
// between commands, so the same counters read by inquest, jstat and jcmd
// are equal.
func settledSample(t *testing.T, h *Host, jdk jvmtest.JDK, id sample.Identity) ([sample.NumProcessMetrics]uint64, map[string]string, map[string]string) {
	t.Helper()
	next := func(after uint64) *sample.Process {
		var p *sample.Process
		waitFor(t, 2*time.Minute, "a snapshot with the JVM's values", func() bool {
			sn := h.Sampler().Latest()
			if sn.Seq <= after {
				return false
			}
			p = sn.Lookup(id)
			return p != nil && p.Has(sample.PJVMHeapUsed)
		})
		return p
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		seq := h.Sampler().Latest().Seq
		a := next(seq + 1) // collected wholly after this point
		gc := jstatGC(t, jdk, int(id.PID))
		perf := jcmdPerf(t, jdk, int(id.PID))
		b := next(h.Sampler().Latest().Seq + 1)
		same := true
		for _, i := range comparedSlots {
			if a.Has(i) != b.Has(i) || a.Vals[i] != b.Vals[i] {
				same = false
			}
		}
		if same {
			return a.Vals, gc, perf
		}
		if time.Now().After(deadline) {
			t.Fatal("the JVM's counters never stood still across a jstat run")
		}
	}
}

func kb(v uint64) string { return strconv.FormatFloat(float64(v)/1024, 'f', 1, 64) }
func secs(ns uint64) string {
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64)
}

// TestRuntimeCollectionMatchesJstat: after a confirmed authorization the
// JVM family's values equal jstat -gc and jcmd PerfCounter.print taken in
// the same run, for each installed JDK, through several rounds of
// allocation and collections; history keeps them per lifetime; revoking
// stops the reads.
func TestRuntimeCollectionMatchesJstat(t *testing.T) {
	jdks := jvmtest.JDKs()
	if len(jdks) == 0 {
		t.Skip("no JDK installed")
	}
	for _, jdk := range jdks {
		if _, err := os.Stat(filepath.Join(filepath.Dir(jdk.Java), "jstat")); err != nil {
			continue
		}
		t.Run(jdk.Name, func(t *testing.T) {
			h := testHost(t, 100*time.Millisecond, nil)
			s, console := h.NewSession(), h.NewSession()
			p := jvmtest.Start(t, jdk)
			p.Do(t, "alloc 32")
			ref := refOfPID(t, h, s, p.PID)
			id, _ := h.ParseRef(ref)

			st := runtimeState(t, h, s, ref)
			perf := jcmdPerf(t, jdk, p.PID)
			if st["runtime"] != "jvm" || st["supported"] != true || st["enabled"] != false || st["state"] != "disabled" {
				t.Fatalf("before authorization: %v", st)
			}
			if want := strings.Trim(perf["java.property.java.version"], `"`); st["version"] != want {
				t.Fatalf("version %v, jcmd %s", st["version"], want)
			}
			if _, ok := st["values"]; ok {
				t.Fatal("values reported without authorization")
			}
			// No value before authorization, in the snapshot or get_metrics.
			m, _ := mustCall(t, h, s, "get_metrics", map[string]any{"metric_ids": []string{"jvm_heap_used_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
			if fmt.Sprint(m["samples"].([]any)[0].(map[string]any)["unavailable"]) != "map[jvm_heap_used_bytes:unknown]" {
				t.Fatalf("get_metrics before authorization: %v", m)
			}

			// Confirmation required: the requester cannot confirm; a denial
			// leaves collection off.
			d, _ := mustCall(t, h, s, "set_runtime_collection", map[string]any{"process_ref": ref, "enabled": true, "operation_id": "deny-1", "expected_revision": revision(t, h, s)})
			if d["state"] != "pending_confirmation" {
				t.Fatalf("enable: %v", d)
			}
			_, _, err := call(t, h, s, ConfirmMethod, map[string]any{"operation_id": "deny-1", "decision": "confirm"})
			wantCode(t, err, contract.CodePermissionDenied)
			denied, _ := mustCall(t, h, console, ConfirmMethod, map[string]any{"operation_id": "deny-1", "decision": "deny"})
			if denied["state"] != "failed" || denied["error"].(map[string]any)["code"] != "CANCELLED" {
				t.Fatalf("deny: %v", denied)
			}
			if st := runtimeState(t, h, s, ref); st["enabled"] != false || st["state"] != "disabled" || len(h.RuntimeAuthorized()) != 0 {
				t.Fatalf("after denial: %v", st)
			}

			rev0 := revision(t, h, s)
			authorize(t, h, s, console, ref, "enable-1")
			if revision(t, h, s) == rev0 {
				t.Fatal("the authorization did not change the revision")
			}
			waitFor(t, 2*time.Minute, "collecting", func() bool { return runtimeState(t, h, s, ref)["state"] == "collecting" })

			for round := 0; round < 3; round++ {
				p.Do(t, "alloc 48")
				p.Do(t, "gc")
				v, gc, perf := settledSample(t, h, jdk, id)
				checks := []struct {
					name, got, want string
				}{
					{"EU", kb(v[sample.PJVMEdenUsed]), gc["EU"]},
					{"S0U+S1U", kb(v[sample.PJVMSurvivorUsed]), sumKB(t, gc["S0U"], gc["S1U"])},
					{"OU", kb(v[sample.PJVMOldUsed]), gc["OU"]},
					{"OC", kb(v[sample.PJVMOldCommitted]), gc["OC"]},
					{"heap used (EU+S0U+S1U+OU)", kb(v[sample.PJVMHeapUsed]), sumKB(t, gc["EU"], gc["S0U"], gc["S1U"], gc["OU"])},
					{"MU", kb(v[sample.PJVMMetaspaceUsed]), gc["MU"]},
					{"MC", kb(v[sample.PJVMMetaspaceCommitted]), gc["MC"]},
					{"YGC", strconv.FormatUint(v[sample.PJVMYoungGCCount], 10), gc["YGC"]},
					{"YGCT", secs(v[sample.PJVMYoungGCTime]), gc["YGCT"]},
					{"FGC", strconv.FormatUint(v[sample.PJVMOldGCCount], 10), gc["FGC"]},
					{"FGCT", secs(v[sample.PJVMOldGCTime]), gc["FGCT"]},
					{"java.threads.live", strconv.FormatUint(v[sample.PJVMThreadsLive], 10), perf["java.threads.live"]},
					{"java.cls.loadedClasses+sharedLoadedClasses", strconv.FormatUint(v[sample.PJVMClassesLoaded], 10), sumInt(t, perf["java.cls.loadedClasses"], perf["java.cls.sharedLoadedClasses"])},
					{"java.cls.unloadedClasses+sharedUnloadedClasses", strconv.FormatUint(v[sample.PJVMClassesUnloaded], 10), sumInt(t, perf["java.cls.unloadedClasses"], perf["java.cls.sharedUnloadedClasses"])},
				}
				for _, c := range checks {
					if c.got != c.want {
						t.Errorf("round %d: %s: inquest %s, reference %s", round, c.name, c.got, c.want)
					}
				}
				if round == 2 {
					t.Logf("%s: heap used %s KiB (jstat %s), YGC %s (jstat %s), FGC %s (jstat %s), FGCT %s s (jstat %s), threads %s (jcmd %s)",
						jdk.Name, kb(v[sample.PJVMHeapUsed]), sumKB(t, gc["EU"], gc["S0U"], gc["S1U"], gc["OU"]), checks[7].got, gc["YGC"], checks[9].got, gc["FGC"], checks[10].got, gc["FGCT"], checks[11].got, checks[11].want)
					if v[sample.PJVMOldGCCount] < 3 {
						t.Errorf("three System.gc() calls, %d full collections", v[sample.PJVMOldGCCount])
					}
					// History keeps the lifetime's values: the last settled
					// count is its maximum, reached by the retained series.
					sum, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"jvm_old_gc_count", "jvm_heap_used_bytes"}, "mode": "summary"})
					og := sum["metrics"].(map[string]any)["jvm_old_gc_count"].(map[string]any)
					if og["max"] != strconv.FormatUint(v[sample.PJVMOldGCCount], 10) || og["available_value_count"].(float64) < 3 {
						t.Errorf("history of jvm_old_gc_count: %v", og)
					}
					st := runtimeState(t, h, s, ref)
					vals := st["values"].(map[string]any)
					if len(vals["spaces"].([]any)) < 5 || len(vals["collectors"].([]any)) < 2 {
						t.Errorf("values: %v", vals)
					}
				}
			}

			// Revocation stops new reads at once.
			d, _ = mustCall(t, h, s, "set_runtime_collection", map[string]any{"process_ref": ref, "enabled": false, "operation_id": "disable-1", "expected_revision": revision(t, h, s)})
			if d["state"] != "succeeded" {
				t.Fatalf("disable: %v", d)
			}
			if len(h.RuntimeAuthorized()) != 0 {
				t.Fatal("still authorized after revocation")
			}
			seq := h.Sampler().Latest().Seq
			waitFor(t, 2*time.Minute, "a snapshot after revocation", func() bool { return h.Sampler().Latest().Seq > seq+1 })
			if q := h.Sampler().Latest().Lookup(id); q == nil || q.Has(sample.PJVMHeapUsed) {
				t.Fatal("a JVM value was read after revocation")
			}
			if st := runtimeState(t, h, s, ref); st["state"] != "disabled" || st["enabled"] != false {
				t.Fatalf("after revocation: %v", st)
			}
			// Re-enabling works (the previous reader has stopped).
			authorize(t, h, s, console, ref, "enable-2")
			waitFor(t, 2*time.Minute, "collecting again", func() bool { return runtimeState(t, h, s, ref)["state"] == "collecting" })
		})
	}
}

func sumKB(t *testing.T, vs ...string) string {
	var s float64
	for _, v := range vs {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("jstat value %q", v)
		}
		s += f
	}
	return strconv.FormatFloat(s, 'f', 1, 64)
}

func sumInt(t *testing.T, vs ...string) string {
	var s int64
	for _, v := range vs {
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("jcmd value %q", v)
		}
		s += n
	}
	return strconv.FormatInt(s, 10)
}

// TestRuntimeRestartStartsDisabled: the authorization belongs to one
// lifetime; the JVM started again (a new lifetime) is not collected, and
// the old authorization ends with its process.
func TestRuntimeRestartStartsDisabled(t *testing.T) {
	jdk := jvmtest.Default(t)
	h := testHost(t, 100*time.Millisecond, nil)
	s, console := h.NewSession(), h.NewSession()
	p := jvmtest.Start(t, jdk)
	ref := refOfPID(t, h, s, p.PID)
	authorize(t, h, s, console, ref, "r-1")
	waitFor(t, 2*time.Minute, "collecting", func() bool { return runtimeState(t, h, s, ref)["state"] == "collecting" })
	p.Stop()
	waitFor(t, 2*time.Minute, "the old lifetime's authorization to end", func() bool { return len(h.RuntimeAuthorized()) == 0 })
	_, _, err := call(t, h, s, "get_runtime_collection", map[string]any{"process_ref": ref})
	wantCode(t, err, contract.CodeProcessExited)
	q := jvmtest.Start(t, jdk)
	ref2 := refOfPID(t, h, s, q.PID)
	if st := runtimeState(t, h, s, ref2); st["state"] != "disabled" || st["enabled"] != false {
		t.Fatalf("restarted JVM: %v", st)
	}
	id2, _ := h.ParseRef(ref2)
	seq := h.Sampler().Latest().Seq
	waitFor(t, 2*time.Minute, "two more snapshots", func() bool { return h.Sampler().Latest().Seq > seq+1 })
	if pr := h.Sampler().Latest().Lookup(id2); pr == nil || pr.Has(sample.PJVMHeapUsed) {
		t.Fatal("the restarted JVM was collected without authorization")
	}
}

// TestRuntimeNoPerfData: a JVM with -XX:-UsePerfData is detected and
// unavailable with its reason; enabling is UNSUPPORTED.
func TestRuntimeNoPerfData(t *testing.T) {
	jdk := jvmtest.Default(t)
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	p := jvmtest.Start(t, jdk, "-XX:-UsePerfData")
	ref := refOfPID(t, h, s, p.PID)
	st := runtimeState(t, h, s, ref)
	if st["runtime"] != "jvm" || st["supported"] != false || st["state"] != "unavailable" || st["reason"] != "perf_data_disabled" || !strings.Contains(st["detail"].(string), "-XX:-UsePerfData") {
		t.Fatalf("-XX:-UsePerfData: %v", st)
	}
	_, _, err := call(t, h, s, "set_runtime_collection", map[string]any{"process_ref": ref, "enabled": true, "operation_id": "np-1", "expected_revision": revision(t, h, s)})
	wantCode(t, err, contract.CodeUnsupported)
}

// TestRuntimeBadPerfFiles: a truncated, oversized or corrupted
// performance-data file (written by the test for a live process) is
// unavailable with its reason, never a value.
func TestRuntimeBadPerfFiles(t *testing.T) {
	real, err := os.ReadFile("../managed/hsperf/testdata/jdk17-g1.hsperfdata")
	if err != nil {
		t.Fatal(err)
	}
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	child := exec.Command("sleep", "300")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	ref := refOfPID(t, h, s, child.Process.Pid)
	dir, err := os.MkdirTemp("/tmp", "hsperfdata_inquest-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, strconv.Itoa(child.Process.Pid))
	edit := func(f func(b []byte)) []byte { b := bytes.Clone(real); f(b); return b }
	cases := []struct {
		name   string
		in     []byte
		reason string
	}{
		{"truncated", real[:100], "truncated"},
		{"empty", nil, "truncated"},
		{"oversized", make([]byte, 17<<20), "oversized"},
		{"bad magic", edit(func(b []byte) { b[1] = 0 }), "corrupt"},
		{"entry out of bounds", edit(func(b []byte) { b[32] = 0xff; b[33] = 0xff }), "corrupt"},
		{"stale (earlier JVM)", real, "stale_file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(file, c.in, 0o600); err != nil {
				t.Fatal(err)
			}
			st := runtimeState(t, h, s, ref)
			if st["runtime"] != "jvm" || st["state"] != "unavailable" || st["reason"] != c.reason || st["supported"] != false || st["version"] != nil {
				t.Fatalf("%s: %v", c.name, st)
			}
		})
	}
	os.Remove(file)
	if st := runtimeState(t, h, s, ref); st["runtime"] != "none" || st["state"] != "disabled" {
		t.Fatalf("sleep without a file: %v", st)
	}
}

// TestRuntimeLogViewRejected: in Log view both runtime tools are
// ACTIVITY_CONFLICT.
func TestRuntimeLogViewRejected(t *testing.T) {
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	ref := refOfPID(t, h, s, os.Getpid())
	viewer := h.NewSession()
	h.holdLogView(viewer)
	_, _, err := call(t, h, s, "get_runtime_collection", map[string]any{"process_ref": ref})
	wantCode(t, err, contract.CodeActivityConflict)
	_, _, err = call(t, h, s, "set_runtime_collection", map[string]any{"process_ref": ref, "enabled": true, "operation_id": "lv-1", "expected_revision": revision(t, h, s)})
	wantCode(t, err, contract.CodeActivityConflict)
}

// TestRuntimeOtherMountNamespace: a JVM whose /tmp is private to its own
// mount namespace is found through /proc/PID/root and collected.
func TestRuntimeOtherMountNamespace(t *testing.T) {
	jdk := jvmtest.Default(t)
	if err := exec.Command("unshare", "-m", "sh", "-c", "mount -t tmpfs none /tmp").Run(); err != nil {
		t.Skipf("cannot make a mount namespace here: %v", err)
	}
	h := testHost(t, 100*time.Millisecond, nil)
	s, console := h.NewSession(), h.NewSession()
	p := jvmtest.StartWrapped(t, jdk, []string{"unshare", "-m", "--propagation", "private", "sh", "-c", `mount -t tmpfs none /tmp && exec "$0" "$@"`})
	matches, _ := filepath.Glob(filepath.Join("/tmp", "hsperfdata_*", strconv.Itoa(p.PID)))
	if len(matches) != 0 {
		t.Fatalf("the JVM's file is visible in this namespace: %v", matches)
	}
	ref := refOfPID(t, h, s, p.PID)
	if st := runtimeState(t, h, s, ref); st["runtime"] != "jvm" || st["supported"] != true {
		t.Fatalf("JVM in another mount namespace: %v", st)
	}
	authorize(t, h, s, console, ref, "ns-1")
	waitFor(t, 2*time.Minute, "collecting", func() bool { return runtimeState(t, h, s, ref)["state"] == "collecting" })
	perf := jcmdPerfNS(t, p.PID)
	id, _ := h.ParseRef(ref)
	waitFor(t, 2*time.Minute, "threads", func() bool {
		q := h.Sampler().Latest().Lookup(id)
		return q != nil && q.Has(sample.PJVMThreadsLive) && strconv.FormatUint(q.Vals[sample.PJVMThreadsLive], 10) == perf
	})
}

// jcmdPerfNS reads java.threads.live of a JVM in another mount namespace
// from its file through /proc/PID/root (jcmd cannot attach across the
// private /tmp), with nsenter's cat as the independent reader.
func jcmdPerfNS(t *testing.T, pid int) string {
	t.Helper()
	// The thread count of the idle program is stable: 3 idle threads plus
	// the JVM's own; read it with jcmd inside the namespace.
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-m", "sh", "-c", "ls /tmp/hsperfdata_*/").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("nsenter ls: %v %q", err, out)
	}
	jcmd := "jcmd"
	o, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-m", jcmd, strconv.Itoa(pid), "PerfCounter.print").Output()
	if err != nil {
		t.Fatalf("jcmd inside the namespace: %v", err)
	}
	for _, l := range strings.Split(string(o), "\n") {
		if v, ok := strings.CutPrefix(l, "java.threads.live="); ok {
			return v
		}
	}
	t.Fatal("no java.threads.live")
	return ""
}

// TestRuntimeDotnetDetectedUnsupported: a process with a .NET diagnostic
// socket (dotnet-diagnostic-PID-*-socket in its TMPDIR) is reported as
// dotnet, supported false with the reason, and enabling is UNSUPPORTED: no
// .NET runtime runs here to read counters from, so none are reported.
func TestRuntimeDotnetDetectedUnsupported(t *testing.T) {
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	tmp, err := os.MkdirTemp("", "inquest-dotnet-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	child := exec.Command("sleep", "300")
	child.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	ln, err := net.Listen("unix", filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-%d-12345-socket", child.Process.Pid)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ref := refOfPID(t, h, s, child.Process.Pid)
	st := runtimeState(t, h, s, ref)
	if st["runtime"] != "dotnet" || st["supported"] != false || st["state"] != "unavailable" || st["reason"] != "dotnet_unsupported" {
		t.Fatalf(".NET process: %v", st)
	}
	_, _, err = call(t, h, s, "set_runtime_collection", map[string]any{"process_ref": ref, "enabled": true, "operation_id": "dn-1", "expected_revision": revision(t, h, s)})
	wantCode(t, err, contract.CodeUnsupported)
}
