//go:build linux

package sample

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestCollectFixture samples testdata/proc, a tree laid out as /proc by
// hand (with testdata/sys as sysfs): init named by its executable, a comm
// holding a space, a newline and parentheses, a cut 15-byte comm that is
// not UTF-8 and named from argv[0], a process listed but vanished (a
// dangling link), a kernel thread with only stat readable (so rss_bytes,
// from statm, is unknown), and a zombie (statm all zeros: rss_bytes 0);
// system files for CPU, memory, load, disks (one whole disk, one
// partition), network (lo excluded) and uptime. Two ticks, so carried
// fields and CPU percent are exercised.
func TestCollectFixture(t *testing.T) {
	c, err := NewLinuxCollectorFS(filepath.Join("testdata", "proc"), filepath.Join("testdata", "sys"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Collect(first)
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		PID, PPID  int32
		Name, Comm string // Go-quoted exact bytes
		Exe        string
		ExeDeleted bool
		State      string
		UID        *uint32
		StartTime  string
		Metrics    map[string]any
	}
	out := struct {
		BootID string
		Denied int
		Procs  []proc
		System map[string]any
	}{BootID: snap.BootID, Denied: snap.Denied, System: map[string]any{}}
	for _, p := range snap.Procs {
		q := proc{PID: p.PID, PPID: p.PPID, Name: strconv.Quote(p.Name), Comm: strconv.Quote(p.Comm), Exe: p.Exe, ExeDeleted: p.ExeDeleted,
			State: string(p.State), StartTime: p.StartTime.UTC().Format("2006-01-02T15:04:05Z"), Metrics: map[string]any{}}
		if p.UIDKnown {
			u := p.UID
			q.UID = &u
		}
		for i, m := range ProcessMetrics {
			if p.Has(i) {
				q.Metrics[m.ID] = value(m, p.Vals[i])
			}
		}
		out.Procs = append(out.Procs, q)
	}
	for i, m := range SystemMetrics {
		if snap.System.Has(i) {
			out.System[m.ID] = value(m, snap.System.Vals[i])
		}
	}
	got, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "collect.json")
	if *update {
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("snapshot differs from %s:\n%s", golden, got)
	}
}

func value(m Metric, v uint64) any {
	if m.Repr == ReprNumber {
		return AsFloat(v)
	}
	return strconv.FormatUint(v, 10)
}
