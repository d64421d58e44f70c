//go:build linux

package sample

import (
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

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
	defer c.Close() // its kept /proc fds
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

// bareStatStatm is the reference read: list /proc and read
// /proc/PID/stat and /proc/PID/statm of every process with raw syscalls
// and one reused buffer, parsing nothing (what any sampler must do at
// least: open, read and close both files). It returns the processes read.
func bareStatStatm(b *testing.B, buf []byte) int {
	read := func(path string) {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		// One read: the files are far smaller than buf.
		unix.Read(fd, buf)
		unix.Close(fd)
	}
	d, err := os.Open("/proc")
	if err != nil {
		b.Fatal(err)
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	n := 0
	for _, name := range names {
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		read("/proc/" + name + "/stat")
		read("/proc/" + name + "/statm")
		n++
	}
	return n
}

// BenchmarkBareStatStatmRead is the reference alone (bareStatStatm).
func BenchmarkBareStatStatmRead(b *testing.B) {
	startHerd(b)
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		n = bareStatStatm(b, buf)
	}
	b.ReportMetric(float64(n), "procs")
}

// BenchmarkTickVsBare interleaves one sampler tick (every metric of every
// process and the system files, as the host samples) with one bare
// stat+statm read of every process (bareStatStatm), pair by pair, over
// the same process table (1,000 extra sleepers), and reports each side's
// median in ms, the ratio of the medians (tick/bare), the median of the
// pair-by-pair wall ratios, the figure least moved by a machine whose load
// changes during the run, and the median of the pair-by-pair ratios of
// the thread's CPU time (cpu-pairs), which leaves out the time either side
// waited for a CPU. "kept" is the collector as the host runs it
// (each process's files kept open across ticks); "opens" opens every file
// each tick, as when RLIMIT_NOFILE leaves no room for kept files. Run
// with -benchtime=40x or more:
//
//	go test ./internal/sample -run '^$' -bench TickVsBare -benchtime 40x
func BenchmarkTickVsBare(b *testing.B) {
	startHerd(b)
	b.Run("kept", func(b *testing.B) { tickVsBare(b, true) })
	b.Run("opens", func(b *testing.B) { tickVsBare(b, false) })
}

func tickVsBare(b *testing.B, keep bool) {
	c, err := NewLinuxCollector("")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if !keep {
		c.kept.max = 0
	}
	buf := make([]byte, 4096)
	prev, _ := c.Collect(nil)
	for i := 0; i < 3; i++ { // warm: kept files, exe cache, buffers
		prev, _ = c.Collect(prev)
		bareStatStatm(b, buf)
	}
	var tick, bare, pair, cpuPair []float64
	var n int
	runtime.LockOSThread() // threadCPU measures this thread
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var a, r, ca, cr float64 // ms; the side that goes first alternates
		bareSide := func() {
			t0, c0 := time.Now(), threadCPU()
			bareStatStatm(b, buf)
			r, cr = time.Since(t0).Seconds()*1e3, threadCPU()-c0
		}
		if i%2 == 1 {
			bareSide()
		}
		t0, c0 := time.Now(), threadCPU()
		s, err := c.Collect(prev)
		if err != nil {
			b.Fatal(err)
		}
		a, ca = time.Since(t0).Seconds()*1e3, threadCPU()-c0
		if i%2 == 0 {
			bareSide()
		}
		prev, n = s, len(s.Procs)
		tick, bare, pair = append(tick, a), append(bare, r), append(pair, a/r)
		if cr > 0 {
			cpuPair = append(cpuPair, ca/cr)
		}
	}
	b.StopTimer()
	reportRatios(b, tick, bare, pair, cpuPair)
	b.ReportMetric(float64(n), "procs")
	b.ReportMetric(float64(len(c.kept.m)), "kept-procs")
}

// threadCPU is the calling thread's CPU time (user+system, RUSAGE_THREAD)
// in ms: with the goroutine locked to its thread, the difference across a
// call is the CPU the call spent on it, without the time the thread
// waited for a CPU on a loaded machine. Work the runtime does on other
// threads (background GC of the call's allocations) is not in it.
func threadCPU() float64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// reportRatios reports the medians of the tick and bare wall times (ms),
// the ratio of the medians, the median of the pair-by-pair
// wall ratios, and the median of the pair-by-pair thread-CPU ratios
// (threadCPU), the figure least moved by other work on the machine.
func reportRatios(b *testing.B, tick, bare, pair, cpuPair []float64) {
	med := func(x []float64) float64 {
		if len(x) == 0 {
			return 0
		}
		sort.Float64s(x)
		return x[len(x)/2]
	}
	mt, mb := med(tick), med(bare)
	b.ReportMetric(mt, "tick-ms")
	b.ReportMetric(mb, "bare-ms")
	b.ReportMetric(mt/mb, "tick/bare")
	b.ReportMetric(med(pair), "pairs-tick/bare")
	b.ReportMetric(med(cpuPair), "cpu-pairs-tick/bare")
}
