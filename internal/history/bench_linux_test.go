//go:build linux

package history

import (
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

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
	defer c.Close() // its kept /proc fds count against one budget per process
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

// bareStatStatm is the reference read: list /proc and read
// /proc/PID/stat and /proc/PID/statm of every process with raw syscalls
// and one reused buffer, parsing nothing. It returns the processes read.
func bareStatStatm(b *testing.B, buf []byte) int {
	read := func(path string) {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
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

// BenchmarkTickWithHistoryVsBare interleaves one host tick (Collect and
// Store.Apply, as BenchmarkTickWithHistory) with one bare stat+statm read
// of every process (bareStatStatm), pair by pair over the same process
// table (1,000 extra sleepers; the side that goes first alternates), and
// reports each side's median in ms, the ratio of the medians, the median
// of the pair-by-pair wall ratios and that of the pair-by-pair ratios of
// the thread's CPU time (cpu-pairs: without the time either side waited
// for a CPU). Run with -benchtime=40x or more:
//
//	go test ./internal/history -run '^$' -bench TickWithHistoryVsBare -benchtime 40x
func BenchmarkTickWithHistoryVsBare(b *testing.B) {
	startHerd(b)
	c, err := sample.NewLinuxCollector("")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	st := NewStore()
	st.SetTracking([]string{"sleep"})
	buf := make([]byte, 4096)
	prev, _ := c.Collect(nil)
	prev.Seq = 1
	st.Apply(prev)
	tick := func() {
		s, err := c.Collect(prev)
		if err != nil {
			b.Fatal(err)
		}
		s.Seq = prev.Seq + 1
		st.Apply(s)
		prev = s
	}
	for i := 0; i < 3; i++ { // warm: kept files, caches, rings
		tick()
		bareStatStatm(b, buf)
	}
	var ticks, bare, pair, cpuPair []float64
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
		tick()
		a, ca = time.Since(t0).Seconds()*1e3, threadCPU()-c0
		if i%2 == 0 {
			bareSide()
		}
		ticks, bare, pair = append(ticks, a), append(bare, r), append(pair, a/r)
		if cr > 0 {
			cpuPair = append(cpuPair, ca/cr)
		}
	}
	b.StopTimer()
	med := func(x []float64) float64 {
		if len(x) == 0 {
			return 0
		}
		sort.Float64s(x)
		return x[len(x)/2]
	}
	mt, mb := med(ticks), med(bare)
	b.ReportMetric(mt, "tick-ms")
	b.ReportMetric(mb, "bare-ms")
	b.ReportMetric(mt/mb, "tick/bare")
	b.ReportMetric(med(pair), "pairs-tick/bare")
	b.ReportMetric(med(cpuPair), "cpu-pairs-tick/bare")
	b.ReportMetric(float64(len(prev.Procs)), "procs")
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
