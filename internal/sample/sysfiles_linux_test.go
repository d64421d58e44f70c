//go:build linux

package sample

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// statField returns the value of the /proc/stat line starting with key.
func statField(t *testing.T, b []byte, key string) uint64 {
	t.Helper()
	var v uint64
	found := false
	lines(b, func(line []byte) {
		if f := bytes.Fields(line); len(f) == 2 && string(f[0]) == key {
			v, _ = strconv.ParseUint(string(f[1]), 10, 64)
			found = true
		}
	})
	if !found {
		t.Fatalf("no %s line in %q", key, b)
	}
	return v
}

// A kept system file re-read with pread returns the file generated anew:
// /proc/stat's "processes" (forks since boot) and /proc/loadavg's last
// PID grow after a process is spawned, /proc/uptime moves on; the fd is
// the one opened by the first read.
func TestSysFilesPreadFresh(t *testing.T) {
	c, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spawn := func() {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	lastPID := func(b []byte) string {
		f := bytes.Fields(b)
		if len(f) != 5 {
			t.Fatalf("loadavg %q", b)
		}
		return string(f[4])
	}
	cases := []struct {
		name   string
		f      *sysFile
		value  func(b []byte) string
		change func(t *testing.T, read func() string, before string)
	}{
		{"stat processes", c.kept.sys.stat, func(b []byte) string { return strconv.FormatUint(statField(t, b, "processes"), 10) },
			func(t *testing.T, read func() string, before string) { spawn() }},
		{"loadavg last pid", c.kept.sys.loadavg, lastPID,
			func(t *testing.T, read func() string, before string) { spawn() }},
		{"uptime", c.kept.sys.uptime, func(b []byte) string { return string(bytes.Fields(b)[0]) },
			func(t *testing.T, read func() string, before string) {
				// wait for the kernel's clock to move on (10 ms steps),
				// bounded only to catch a hang
				for deadline := time.Now().Add(30 * time.Second); read() == before; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("uptime did not change in 30 s")
					}
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			read := func() string {
				b, err := tc.f.read(c)
				if err != nil {
					t.Fatal(err)
				}
				return tc.value(b)
			}
			before := read()
			fd := tc.f.fd
			if fd < 0 {
				t.Fatal("a procfs system file was not kept open")
			}
			tc.change(t, read, before)
			if after := read(); after == before {
				t.Fatalf("pread of the kept fd returned the old content %q", after)
			}
			if tc.f.fd != fd {
				t.Fatalf("fd changed %d -> %d: pread failed and the file was re-opened", fd, tc.f.fd)
			}
		})
	}
}

// On a fixture tree the system files are opened per read, so a file
// replaced (rename over it) or rewritten between ticks is seen.
func TestSysFilesFixtureNotKept(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "loadavg")
	if err := os.WriteFile(path, []byte("1.00 2.00 3.00 1/10 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := NewLinuxCollectorFS(filepath.Join("testdata", "proc"), filepath.Join("testdata", "sys"))
	if err != nil {
		t.Fatal(err)
	}
	f := newSysFile(path, c.kept.sys.loadavg.keep, c.kept.sys.loadavg.single)
	if f.keep {
		t.Fatal("a fixture tree's system files are kept open")
	}
	read := func() [3]float64 {
		b, err := f.read(c)
		if err != nil {
			t.Fatal(err)
		}
		la, ok := parseLoadavg(b)
		if !ok {
			t.Fatalf("loadavg %q", b)
		}
		return la
	}
	if la := read(); la[0] != 1 {
		t.Fatal(la)
	}
	tmp := filepath.Join(root, "new")
	os.WriteFile(tmp, []byte("4.00 5.00 6.00 1/10 100\n"), 0o644)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if la := read(); la[0] != 4 {
		t.Fatalf("replaced fixture file not seen: %v", la)
	}
	if f.fd >= 0 {
		t.Fatal("fixture file kept open")
	}
}

// The collector's parsers of /proc/stat, meminfo, loadavg, diskstats and
// net/dev read what procfs reads from the same bytes (this machine's
// files, copied once into a tree procfs parses).
func TestSysParsersMatchProcfs(t *testing.T) {
	root := t.TempDir()
	read := func(name string) []byte {
		b, err := os.ReadFile("/proc/" + name)
		if err != nil {
			t.Skip(err)
		}
		dst := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return b
	}
	stat, mem, load, disk, net := read("stat"), read("meminfo"), read("loadavg"), read("diskstats"), read("net/dev")
	fs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	// /proc/stat
	st, err := fs.Stat()
	if err != nil {
		t.Fatal(err)
	}
	total, cpus, ok := parseProcStat(stat)
	if !ok || total != st.CPUTotal || len(cpus) != len(st.CPU) {
		t.Fatalf("stat: %+v %d, procfs %+v %d", total, len(cpus), st.CPUTotal, len(st.CPU))
	}
	for id, v := range st.CPU {
		if cpus[id] != v {
			t.Fatalf("cpu%d: %+v, procfs %+v", id, cpus[id], v)
		}
	}
	// meminfo
	mi, err := fs.Meminfo()
	if err != nil {
		t.Fatal(err)
	}
	m := parseMeminfo(mem)
	for i, pair := range []struct {
		got  uint64
		want *uint64
	}{{m.total, mi.MemTotalBytes}, {m.avail, mi.MemAvailableBytes}, {m.committed, mi.CommittedASBytes}, {m.swapTotal, mi.SwapTotalBytes}, {m.swapFree, mi.SwapFreeBytes}} {
		if (pair.want != nil) != m.has[i] || (pair.want != nil && *pair.want != pair.got) {
			t.Fatalf("meminfo field %d: %d %v, procfs %v", i, pair.got, m.has[i], pair.want)
		}
	}
	// loadavg
	la, err := fs.LoadAvg()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := parseLoadavg(load); !ok || got != [3]float64{la.Load1, la.Load5, la.Load15} {
		t.Fatalf("loadavg %v, procfs %+v", got, la)
	}
	// diskstats
	os.MkdirAll(filepath.Join(root, "sys"), 0o755)
	bfs, err := blockdevice.NewFS(root, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := bfs.ProcDiskstats()
	if err != nil {
		t.Fatal(err)
	}
	var gotDisks []string
	parseDiskstats(disk, func(name string, rd, wr uint64) {
		gotDisks = append(gotDisks, name+" "+strconv.FormatUint(rd, 10)+" "+strconv.FormatUint(wr, 10))
	})
	var wantDisks []string
	for _, d := range ds {
		wantDisks = append(wantDisks, d.DeviceName+" "+strconv.FormatUint(d.ReadSectors, 10)+" "+strconv.FormatUint(d.WriteSectors, 10))
	}
	if len(gotDisks) != len(wantDisks) {
		t.Fatalf("diskstats %v, procfs %v", gotDisks, wantDisks)
	}
	for i := range gotDisks {
		if gotDisks[i] != wantDisks[i] {
			t.Fatalf("diskstats %v, procfs %v", gotDisks, wantDisks)
		}
	}
	// net/dev
	nd, err := fs.NetDev()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	parseNetDev(net, func(name []byte, rx, tx uint64) {
		n++
		l, ok := nd[string(name)]
		if !ok || l.RxBytes != rx || l.TxBytes != tx {
			t.Fatalf("net/dev %s %d %d, procfs %+v", name, rx, tx, l)
		}
	})
	if n != len(nd) {
		t.Fatalf("net/dev: %d interfaces, procfs %d", n, len(nd))
	}
}
