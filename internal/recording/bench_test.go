//go:build linux

package recording

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
)

// workload produces snapshots of n processes whose values move the way
// long-running processes' do: CPU time advances in ticks, cpu_percent
// follows it, RSS moves by pages now and then, faults and context
// switches count up, I/O grows in bursts. It is deterministic (seeded).
type workload struct {
	n    int
	rng  *rand.Rand
	st   []sample.Process
	sys  sample.System
	k    int
	base time.Time
}

func newWorkload(n int, seed uint64) *workload {
	w := &workload{n: n, rng: rand.New(rand.NewPCG(seed, 1)), base: t0}
	for i := 0; i < n; i++ {
		p := sample.Process{PID: int32(100 + i*7), PPID: 1, StartTicks: uint64(5000 + i), StartTime: t0.Add(-time.Hour),
			Name: fmt.Sprintf("svc-%d", i%40), Exe: "/usr/lib/svc/svc-" + strconv.Itoa(i%40), UID: 1000, UIDKnown: true}
		p.Set(sample.PRSS, uint64(20<<20+w.rng.IntN(200<<20))&^4095)
		p.Set(sample.PVirtual, uint64(1<<30+w.rng.IntN(1<<30))&^4095)
		p.Set(sample.PSwap, 0)
		p.Set(sample.PThreads, uint64(1+w.rng.IntN(30)))
		p.Set(sample.PFDs, uint64(5+w.rng.IntN(60)))
		p.Set(sample.PCPUTime, uint64(w.rng.IntN(1e6))*1e7)
		for _, s := range []int{sample.PMinorFaults, sample.PMajorFaults, sample.PReadBytes, sample.PWriteBytes, sample.PVolCtx, sample.PInvolCtx} {
			p.Set(s, uint64(w.rng.IntN(1e6)))
		}
		w.st = append(w.st, p)
	}
	w.sys.Set(sample.SMemTotal, 16<<30)
	return w
}

// next returns the next snapshot (1 s later).
func (w *workload) next() *sample.Snapshot {
	r := w.rng
	s := &sample.Snapshot{Seq: uint64(w.k + 1), Time: w.base.Add(time.Duration(w.k) * time.Second)}
	for i := range w.st {
		p := &w.st[i]
		busy := r.IntN(10) < 3
		ticks := 0
		if busy {
			ticks = 1 + r.IntN(20)
		}
		p.Vals[sample.PCPUTime] += uint64(ticks) * 1e7
		p.Set(sample.PCPUPercent, sample.F(float64(ticks)/2)) // 2 CPUs, 100 ticks/s
		if r.IntN(4) == 0 {
			p.Vals[sample.PRSS] += uint64(r.IntN(65)-32) * 4096
		}
		if busy {
			p.Vals[sample.PMinorFaults] += uint64(r.IntN(50))
			p.Vals[sample.PVolCtx] += uint64(r.IntN(40))
			p.Vals[sample.PInvolCtx] += uint64(r.IntN(3))
		}
		if r.IntN(20) == 0 {
			p.Vals[sample.PReadBytes] += uint64(r.IntN(64)) * 4096
			p.Vals[sample.PWriteBytes] += uint64(r.IntN(64)) * 4096
		}
		if r.IntN(50) == 0 {
			p.Vals[sample.PFDs] += uint64(r.IntN(3))
		}
		s.Procs = append(s.Procs, *p)
	}
	w.sys.Set(sample.SCPUPercent, sample.F(float64(r.IntN(1000))/10))
	w.sys.Set(sample.SMemAvailable, uint64(8<<30+r.IntN(1<<28))&^4095)
	w.sys.Set(sample.SLoad1, sample.F(float64(r.IntN(400))/100))
	w.sys.Set(sample.SUptime, sample.F(float64(w.k)+1e5))
	s.System = w.sys
	w.k++
	return s
}

// BenchmarkWriteFrame1000 is the write cost of one frame of 1,000
// tracked processes (encode + one write to io.Discard).
func BenchmarkWriteFrame1000(b *testing.B) {
	wl := newWorkload(1000, 1)
	snaps := make([]*sample.Snapshot, 64)
	for i := range snaps {
		snaps[i] = wl.next()
	}
	ps := make([][]*sample.Process, len(snaps))
	for i, s := range snaps {
		ps[i] = procsOf(s)
	}
	cw := &countWriter{}
	w, err := NewWriter(cw, Header{IntervalMs: 1000})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.WriteSnapshot(snaps[i%len(snaps)], ps[i%len(snaps)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cw.n)/float64(b.N), "file-bytes/frame")
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkBytesPerSample compares the file's bytes per process-sample
// with the in-memory history codec's on the same samples, in the same
// run: the same snapshots go to a recording and to one history.Series per
// process. It uses real snapshots of this machine's processes taken
// 100 ms apart when the platform collector works, else the synthetic
// workload (named in the metric unit).
func BenchmarkBytesPerSample(b *testing.B) {
	for _, src := range []string{"synthetic", "live"} {
		b.Run(src, func(b *testing.B) {
			var snaps []*sample.Snapshot
			if src == "live" {
				c, err := sample.NewCollector()
				if err != nil {
					b.Skip("no collector:", err)
				}
				var prev *sample.Snapshot
				for i := 0; i < 40; i++ {
					s, err := c.Collect(prev)
					if err != nil {
						b.Skip("collect:", err)
					}
					snaps = append(snaps, s)
					prev = s
					time.Sleep(100 * time.Millisecond)
				}
			} else {
				wl := newWorkload(200, 2)
				for i := 0; i < 600; i++ {
					snaps = append(snaps, wl.next())
				}
			}
			var fileBytes, histBytes, samples int64
			for i := 0; i < b.N; i++ {
				cw := &countWriter{}
				w, _ := NewWriter(cw, Header{IntervalMs: 1000})
				hdr := cw.n
				series := map[sample.Identity]*history.Series{}
				samples = 0
				for _, s := range snaps {
					w.WriteSnapshot(s, procsOf(s))
					for j := range s.Procs {
						p := &s.Procs[j]
						se := series[p.ID()]
						if se == nil {
							se = history.NewSeries(sample.NumProcessMetrics, catalogFloat(sample.ProcessMetrics[:]), history.TrackedCapacity)
							series[p.ID()] = se
						}
						se.Append(s.Time, p.Avail, p.Vals[:])
						samples++
					}
				}
				w.Close("stopped")
				fileBytes = cw.n - hdr
				histBytes = 0
				for _, se := range series {
					histBytes += int64(histEncoded(se))
				}
			}
			b.ReportMetric(float64(fileBytes)/float64(samples), "file-B/proc-sample")
			b.ReportMetric(float64(histBytes)/float64(samples), "history-B/proc-sample")
			b.ReportMetric(float64(fileBytes)/float64(histBytes), "file/history")
		})
	}
}

// histEncoded is the exact encoded size of a series in the history
// codec (internal/history): per sample the zigzag varint of the ms delta,
// the uvarint availability, then per available slot a zigzag varint of
// the integer difference or a uvarint of the bit-reversed float XOR; the
// chain restarts every history.BlockSamples samples. (Series.Bytes
// reports allocated capacity, which includes slack.)
func histEncoded(s *history.Series) int {
	n, k := 0, 0
	var prevMs int64
	prev := make([]uint64, sample.NumProcessMetrics)
	fmask := catalogFloat(sample.ProcessMetrics[:])
	var buf [binary.MaxVarintLen64]byte
	s.View().Each(func(ms int64, avail uint32, vals []uint64) bool {
		if k%history.BlockSamples == 0 {
			prevMs = ms
			clear(prev)
		}
		k++
		n += binary.PutVarint(buf[:], ms-prevMs)
		prevMs = ms
		n += binary.PutUvarint(buf[:], uint64(avail))
		for i := range prev {
			if avail&(1<<uint(i)) == 0 {
				continue
			}
			if fmask&(1<<uint(i)) != 0 {
				n += binary.PutUvarint(buf[:], bits.Reverse64(vals[i]^prev[i]))
			} else {
				n += binary.PutVarint(buf[:], int64(vals[i]-prev[i]))
			}
			prev[i] = vals[i]
		}
		return true
	})
	return n
}

// dayFile writes a generated 24 h, 1 s recording of 50 processes to a
// temporary directory removed when tb ends.
func dayFile(tb testing.TB) string {
	path := filepath.Join(tb.TempDir(), "day.log")
	w, err := Create(path, Header{CreatedAt: t0, IntervalMs: 1000, Tracked: []string{"svc"}})
	if err != nil {
		tb.Fatal(err)
	}
	wl := newWorkload(50, 3)
	for i := 0; i < 86400; i++ {
		s := wl.next()
		if err := w.WriteSnapshot(s, procsOf(s)); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := w.Close("stopped"); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestLoadHelper is run by BenchmarkOpenDay in a child process so the
// child's peak RSS measures one load alone.
func TestLoadHelper(t *testing.T) {
	path := os.Getenv("INQUEST_RECORDING_LOAD")
	if path == "" {
		t.Skip("helper for BenchmarkOpenDay")
	}
	start := time.Now()
	l, err := Load(path, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("LOAD frames=%d procs=%d ns=%d maxrss_kib=%d cpu_ns=%d\n", l.Info.Frames, len(l.Procs), el.Nanoseconds(), ru.Maxrss, cpu.Nanoseconds())
}

// BenchmarkOpenDay opens a generated 24 h, 1 s recording of 50 processes
// in a fresh child process per iteration and reports the load's wall time,
// the child's whole CPU time (process start and test framework included;
// the wall time is inflated on a loaded machine, the CPU time much less)
// and its peak RSS against the file size.
func BenchmarkOpenDay(b *testing.B) {
	path := dayFile(b)
	st, _ := os.Stat(path)
	var ns, rss, cpu int64
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoadHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "INQUEST_RECORDING_LOAD="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		i := bytes.Index(out, []byte("LOAD "))
		if i < 0 {
			b.Fatalf("no LOAD line:\n%s", out)
		}
		var frames, procs, n, kib, c int64
		fmt.Sscanf(strings.TrimSpace(string(out[i:])), "LOAD frames=%d procs=%d ns=%d maxrss_kib=%d cpu_ns=%d", &frames, &procs, &n, &kib, &c)
		cpu += c
		if frames != 86400 || procs != 50 {
			b.Fatalf("loaded %d frames, %d procs", frames, procs)
		}
		ns += n
		rss += kib << 10
	}
	b.ReportMetric(float64(st.Size()), "file-bytes")
	b.ReportMetric(float64(ns)/float64(b.N)/1e6, "open-ms")
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "child-cpu-ms")
	b.ReportMetric(float64(rss)/float64(b.N), "peak-rss-bytes")
	b.ReportMetric(float64(rss)/float64(b.N)/float64(st.Size()), "rss/file")
	b.ReportMetric(float64(st.Size())/float64(86400*50), "file-B/proc-sample")
}

var _ = io.Discard
