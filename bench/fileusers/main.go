//go:build linux

// Command fileusers benchmarks inquest's file_users scan (capture.FileUsers,
// and the same scan through a jobs session with row encoding) beside two
// references measured in the same run: `lsof -n -P` (whole process, output
// discarded) and a bare readlink walk of /proc/*/fd/* (os.ReadDir +
// os.Readlink, no aggregation, no identity checks). It also times the scan
// `inquest fuser PATH` runs in the host (file_users with filter.path set to
// one held file: every fd link, root, cwd and exe link and maps read)
// beside its floor, bench/readlinks PATH run in-process (readlinkat of the
// same links and one read of maps per process, compared with PATH; no
// names, identity checks, modes or rows).
//
// It starts -children single-threaded holders (bench/holder.py, python3)
// that together hold -fds extra open fds on distinct files, so every tool resolves the same large fd set; then
// it runs the measurements interleaved -runs times and prints the median,
// min and max of each, the median CPU time (this process's and lsof's
// user + system time, less disturbed by other load than wall time), with
// the ratios the issue sets targets for
// (inquest >= 5x faster than lsof; within 2x of the bare walk).
//
//	go run ./bench/fileusers -fds 10000 -children 2 -runs 9
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/jobs"
	"golang.org/x/sys/unix"
)

func main() {
	fds := flag.Int("fds", 10000, "extra open fds held by the children in total")
	children := flag.Int("children", 2, "child processes sharing the extra fds")
	runs := flag.Int("runs", 9, "measured runs of each method")
	lsofPath := flag.String("lsof", "lsof", "lsof binary")
	flag.Parse()
	if err := run(*fds, *children, *runs, *lsofPath); err != nil {
		fmt.Fprintln(os.Stderr, "fileusers:", err)
		os.Exit(1)
	}
}

func run(fds, children, runs int, lsofPath string) error {
	// bench/holder.py: one thread per holder, so lsof lists each fd once
	// (a multi-threaded holder makes lsof print every fd once per thread).
	holder, err := filepath.Abs("bench/holder.py")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "inquest-fileusers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	for i := 0; i < children; i++ {
		dir := filepath.Join(tmp, strconv.Itoa(i))
		os.Mkdir(dir, 0o700)
		c := exec.Command("python3", holder, dir, strconv.Itoa(fds/children))
		out, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			return err
		}
		cmds = append(cmds, c)
		if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
			return fmt.Errorf("child %d: %q (raise ulimit -n?)", i, l)
		}
	}
	if _, err := exec.LookPath(lsofPath); err != nil {
		return fmt.Errorf("lsof not found: %w", err)
	}
	held := filepath.Join(tmp, "0", "held-000000.dat")
	m := jobs.NewManager(jobs.DefaultLimits(), nil)
	sess := m.NewSession()
	defer sess.Close()

	methods := []struct {
		name string
		fn   func() (int, error)
	}{
		{"inquest file_users (collector)", func() (int, error) {
			c, err := capture.FileUsers(context.Background())
			if err != nil {
				return 0, err
			}
			return c.Coverage["fds_examined"].(int), nil
		}},
		{"inquest file_users (job + encode)", func() (int, error) {
			j, err := sess.Start(jobs.Spec{Kind: capture.KindFileUsers, Exclusive: true, Run: capture.FileUsers})
			if err != nil {
				return 0, err
			}
			j, _ = sess.Wait(context.Background(), j.ID)
			if j.State != jobs.Succeeded {
				return 0, j.Err
			}
			c, _ := sess.Capture(j.CaptureID)
			sess.Release(j.CaptureID)
			return c.Coverage["fds_examined"].(int), nil
		}},
		{"bare readlink walk /proc/*/fd/*", bareWalk},
		{"inquest file_users PATH (fuser's scan)", func() (int, error) {
			c, err := capture.FileUsersFiltered(context.Background(), capture.Filter{Path: held})
			if err != nil {
				return 0, err
			}
			if len(c.Rows) == 0 {
				return 0, fmt.Errorf("%s: no holder found", held)
			}
			return c.Coverage["fds_examined"].(int), nil
		}},
		{"bare walk, all uses (bench/readlinks)", func() (int, error) { return allUsesWalk(held) }},
		{"lsof -n -P", func() (int, error) {
			c := exec.Command(lsofPath, "-n", "-P")
			c.Stdout, c.Stderr = nil, nil
			out, err := c.Output()
			if err != nil && len(out) == 0 {
				return 0, err
			}
			return strings.Count(string(out), "\n"), nil
		}},
	}
	times := make([][]time.Duration, len(methods))
	cpus := make([][]time.Duration, len(methods))
	counts := make([]int, len(methods))
	for r := -1; r < runs; r++ { // r == -1 is a warm-up
		for i, m := range methods {
			c0 := cpuTime()
			t0 := time.Now()
			n, err := m.fn()
			d := time.Since(t0)
			c := cpuTime() - c0
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if r >= 0 {
				times[i] = append(times[i], d)
				cpus[i] = append(cpus[i], c)
				counts[i] = n
			}
		}
	}
	fmt.Printf("file_users benchmark: %d children holding %d extra open fds (distinct files), %d runs each, interleaved; GOMAXPROCS=%d\n",
		children, fds, runs, runtime.GOMAXPROCS(0))
	med := make([]time.Duration, len(methods))
	cpuMed := make([]time.Duration, len(methods))
	for i, m := range methods {
		slices.Sort(times[i])
		slices.Sort(cpus[i])
		med[i] = times[i][len(times[i])/2]
		cpuMed[i] = cpus[i][len(cpus[i])/2]
		unit := "fds"
		if strings.HasPrefix(m.name, "lsof") {
			unit = "output lines"
		}
		fmt.Printf("  %-38s median %9.2f ms  (min %.2f, max %.2f)  cpu median %8.2f ms  %d %s\n", m.name,
			ms(med[i]), ms(times[i][0]), ms(times[i][len(times[i])-1]), ms(cpuMed[i]), counts[i], unit)
	}
	fmt.Printf("  lsof / inquest collector       = %.1fx  (target >= 5x)\n", float64(med[5])/float64(med[0]))
	fmt.Printf("  lsof / inquest job + encode    = %.1fx\n", float64(med[5])/float64(med[1]))
	fmt.Printf("  inquest collector / bare walk  = %.2fx (target <= 2x)\n", float64(med[0])/float64(med[2]))
	fmt.Printf("  inquest job+encode / bare walk = %.2fx\n", float64(med[1])/float64(med[2]))
	fmt.Printf("  inquest PATH scan / all-uses walk = %.2fx wall (target <= 1.3x), %.2fx cpu\n", float64(med[3])/float64(med[4]), float64(cpuMed[3])/float64(cpuMed[4]))
	return nil
}

// cpuTime is the user and system CPU time of this process and its
// waited-for children (lsof) so far.
func cpuTime() time.Duration {
	var t time.Duration
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		if unix.Getrusage(who, &ru) == nil {
			t += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// bareWalk is the reference: list /proc, list each fd directory, readlink
// each entry. No identity checks, no aggregation, no rows.
func bareWalk() (int, error) {
	names, err := readdirnames("/proc")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if c := name[0]; c < '0' || c > '9' {
			continue
		}
		dir := "/proc/" + name + "/fd/"
		fds, err := readdirnames(dir)
		if err != nil {
			continue
		}
		for _, f := range fds {
			if _, err := os.Readlink(dir + f); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// readdirnames lists dir without sorting (cheaper than os.ReadDir).
func readdirnames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// allUsesWalk is bench/readlinks PATH in-process (the floor of the scan
// `inquest fuser PATH` runs): per process, readlinkat of every fd link on
// the fd directory, of root, cwd and exe, and one read of maps, each
// compared with want. It returns the number of fd links read.
func allUsesWalk(want string) (int, error) {
	pids, err := readdirnames("/proc")
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	maps := make([]byte, 0, 64<<10)
	suffix := []byte(" " + want)
	n, hits := 0, 0
	for _, p := range pids {
		if c := p[0]; c < '0' || c > '9' {
			continue
		}
		if fd, err := unix.Open("/proc/"+p+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			f := os.NewFile(uintptr(fd), p)
			names, _ := f.Readdirnames(-1)
			for _, name := range names {
				k, err := unix.Readlinkat(fd, name, buf)
				if err == nil {
					n++
					if string(buf[:k]) == want {
						hits++
					}
				}
			}
			f.Close()
		}
		dir, err := unix.Open("/proc/"+p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		for _, use := range []string{"root", "cwd", "exe"} {
			if k, err := unix.Readlinkat(dir, use, buf); err == nil && string(buf[:k]) == want {
				hits++
			}
		}
		if mfd, err := unix.Openat(dir, "maps", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			maps = maps[:0]
			for {
				if len(maps) == cap(maps) {
					maps = append(maps, 0)[:len(maps)]
				}
				k, err := unix.Read(mfd, maps[len(maps):cap(maps)])
				if k <= 0 || err != nil {
					break
				}
				maps = maps[:len(maps)+k]
			}
			unix.Close(mfd)
			for _, line := range bytes.Split(maps, []byte("\n")) {
				if bytes.HasSuffix(line, suffix) {
					hits++
					break
				}
			}
		}
		unix.Close(dir)
	}
	if hits == 0 {
		return 0, fmt.Errorf("%s: no holder found", want)
	}
	return n, nil
}
