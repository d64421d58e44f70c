//go:build linux

package history

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// herd is 1,000 extra sleeping processes shared by the benchmarks of one
// run, so the tick and the bare read see the same process table.
var (
	herdOnce sync.Once
	herd     []*exec.Cmd
)

func startHerd(b *testing.B) {
	herdOnce.Do(func() {
		for i := 0; i < 1000; i++ {
			c := exec.Command("sleep", "600")
			if err := c.Start(); err != nil {
				b.Logf("started %d sleepers: %v", i, err)
				break
			}
			herd = append(herd, c)
		}
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range herd {
		c.Process.Kill()
		c.Wait()
	}
	os.Exit(code)
}

// BenchmarkTickWithHistory is one sampler tick as the host runs it: a
// full snapshot (sample.LinuxCollector.Collect: stat with the
// reaped-children time, statm, status, io, fd count, names with argv[0]
// once per lifetime, /proc/stat's CPU time) applied to the retained
// history (Store.Apply: rings, name spans, reaped-children steps,
// tracking by the name rule) with 1,000 extra sleepers. Compare with
// BenchmarkBareStatStatmRead in the same run:
//
//	go test ./internal/history -run '^$' -bench 'TickWithHistory|BareStatStatm' -benchmem -count 5
func BenchmarkTickWithHistory(b *testing.B) {
	startHerd(b)
	c, err := sample.NewLinuxCollector("")
	if err != nil {
		b.Fatal(err)
	}
	st := NewStore()
	st.SetTracking([]string{"sleep"})
	prev, _ := c.Collect(nil)
	prev.Seq = 1
	st.Apply(prev)
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		s, err := c.Collect(prev)
		if err != nil {
			b.Fatal(err)
		}
		s.Seq = prev.Seq + 1
		st.Apply(s)
		prev = s
		n = len(s.Procs)
	}
	b.ReportMetric(float64(n), "procs")
}

// BenchmarkBareStatStatmRead is the reference: list /proc and read
// /proc/PID/stat and /proc/PID/statm of every process with raw syscalls and
// one reused buffer, parsing nothing.
func BenchmarkBareStatStatmRead(b *testing.B) {
	startHerd(b)
	buf := make([]byte, 4096)
	read := func(path string) {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		unix.Read(fd, buf)
		unix.Close(fd)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		d, err := os.Open("/proc")
		if err != nil {
			b.Fatal(err)
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		n = 0
		for _, name := range names {
			if _, err := strconv.Atoi(name); err != nil {
				continue
			}
			read("/proc/" + name + "/stat")
			read("/proc/" + name + "/statm")
			n++
		}
	}
	b.ReportMetric(float64(n), "procs")
}
