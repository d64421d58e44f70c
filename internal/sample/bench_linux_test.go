//go:build linux

package sample

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// herd is 1,000 extra sleeping processes shared by the benchmarks of one
// run, so the sampler tick and the bare read see the same process table.
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

// BenchmarkSamplerTick is one full snapshot (every process: stat, statm, status,
// io, fd count, exe cache; plus the system files) with 1,000 extra sleepers.
// Compare with BenchmarkBareStatStatmRead in the same run:
//
//	go test ./internal/sample -run '^$' -bench 'SamplerTick|BareStatStatm' -benchmem
func BenchmarkSamplerTick(b *testing.B) {
	startHerd(b)
	c, err := NewLinuxCollector("")
	if err != nil {
		b.Fatal(err)
	}
	prev, _ := c.Collect(nil)
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		s, err := c.Collect(prev)
		if err != nil {
			b.Fatal(err)
		}
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
		// One read: the files are far smaller than buf.
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
