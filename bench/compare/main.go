//go:build linux

// Command compare runs pairs of commands interleaved (warm-up A, B, then
// A, B, A, B … -n times each) and prints, per pair, the minimum, median
// and 90th percentile (nearest rank) wall time, the median CPU time (user+sys of the finished process, from
// wait4's rusage) and the median peak RSS of both sides, with the ratios
// A/B of the medians and the median of the pair-by-pair wall ratios.
//
// Pairs come from a tab-separated file, one a line:
//
//	NAME<TAB>COMMAND A<TAB>COMMAND B
//
// Each row ends with the 1-minute load average read before and after the
// pair ran (/proc/loadavg), so every figure carries the load it ran under.
//
// A command is split on blanks (no shell; leading NAME=VALUE words set its
// environment); its output is discarded. A run that exits non-zero is
// reported and the pair marked FAILED, never timed as if it had worked.
//
//	go run ./bench/compare -n 5 pairs.tsv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

type run struct {
	wall, cpu time.Duration
	rssKiB    int64
}

type side struct {
	label string
	argv  []string
	env   []string
	runs  []run
	fail  string
}

func main() {
	n := flag.Int("n", 5, "counted runs of each command (interleaved)")
	warm := flag.Int("warmup", 1, "uncounted runs of each command first")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compare [-n RUNS] [-warmup N] PAIRS.tsv")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	fmt.Printf("%-44s %9s %9s %9s %9s %9s %9s %7s %7s %7s %8s %8s %11s\n", "pair (A vs B)", "A min s", "A med s", "A p90 s", "B min s", "B med s", "B p90 s", "wall", "pairs", "cpu", "A MiB", "B MiB", "load1")
	fmt.Printf("%-44s %9s %9s %9s %9s %9s %9s %7s %7s %7s %8s %8s %11s\n", "", "", "", "", "", "", "", "A/B", "A/B", "A/B", "med", "med", "before-after")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			fmt.Fprintf(os.Stderr, "bad pair line (want NAME<TAB>A<TAB>B): %q\n", line)
			os.Exit(2)
		}
		a, b := newSide(parts[1]), newSide(parts[2])
		load0 := load1()
		for i := 0; i < *warm; i++ {
			a.once(false)
			b.once(false)
		}
		pairRatios := make([]float64, 0, *n)
		for i := 0; i < *n; i++ {
			ra, oka := a.once(true)
			rb, okb := b.once(true)
			if oka && okb && rb.wall > 0 {
				pairRatios = append(pairRatios, float64(ra.wall)/float64(rb.wall))
			}
		}
		report(parts[0], a, b, pairRatios, load0+"-"+load1())
	}
}

// load1 is the 1-minute load average from /proc/loadavg ("?" unreadable).
func load1() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func newSide(cmd string) *side {
	s := &side{label: cmd}
	for _, w := range strings.Fields(cmd) {
		if len(s.argv) == 0 && strings.Contains(w, "=") && !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, ".") {
			s.env = append(s.env, w)
			continue
		}
		s.argv = append(s.argv, w)
	}
	return s
}

// once runs the command; counted runs are kept.
func (s *side) once(count bool) (run, bool) {
	if s.fail != "" || len(s.argv) == 0 {
		return run{}, false
	}
	c := exec.Command(s.argv[0], s.argv[1:]...)
	c.Env = append(os.Environ(), s.env...)
	c.Stdout, c.Stderr = nil, nil // to /dev/null
	var errBuf strings.Builder
	c.Stderr = &limited{w: &errBuf, n: 300}
	t0 := time.Now()
	err := c.Run()
	wall := time.Since(t0)
	if err != nil {
		s.fail = fmt.Sprintf("%v: %s", err, strings.TrimSpace(errBuf.String()))
		return run{}, false
	}
	ru, _ := c.ProcessState.SysUsage().(*syscall.Rusage)
	r := run{wall: wall}
	if ru != nil {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		r.rssKiB = ru.Maxrss
	}
	if count {
		s.runs = append(s.runs, r)
	}
	return r, true
}

type limited struct {
	w *strings.Builder
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if rem := l.n - l.w.Len(); rem > 0 {
		l.w.Write(p[:min(len(p), rem)])
	}
	return len(p), nil
}

func report(name string, a, b *side, pairs []float64, load string) {
	for _, s := range []*side{a, b} {
		if s.fail != "" {
			fmt.Printf("%-44s FAILED: %s: %s\n", name, s.label, s.fail)
			return
		}
	}
	aw, bw := field(a.runs, func(r run) float64 { return r.wall.Seconds() }), field(b.runs, func(r run) float64 { return r.wall.Seconds() })
	ac, bc := field(a.runs, func(r run) float64 { return r.cpu.Seconds() }), field(b.runs, func(r run) float64 { return r.cpu.Seconds() })
	am, bm := field(a.runs, func(r run) float64 { return float64(r.rssKiB) / 1024 }), field(b.runs, func(r run) float64 { return float64(r.rssKiB) / 1024 })
	fmt.Printf("%-44s %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %7.2f %7.2f %7.2f %8.1f %8.1f %11s\n", name,
		aw[0], median(aw), p90(aw), bw[0], median(bw), p90(bw), ratio(median(aw), median(bw)), median(pairs), ratio(median(ac), median(bc)), median(am), median(bm), load)
}

func field(rs []run, f func(run) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	slices.Sort(out)
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// p90 is the nearest-rank 90th percentile of v (0 when v is empty): the
// smallest value that at least 90% of the values do not exceed.
func p90(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[(9*len(v)+9)/10-1]
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
