//go:build linux

// Command readlinks is the floor of "which processes use PATH": it lists
// /proc and, per process, reads every /proc/PID/fd/N link with
// readlinkat(2) on the fd directory, the root, cwd and exe links, and
// /proc/PID/maps once (the uses lsof -n -P PATH and psmisc's fuser check
// too), and prints "PID USE" for each use whose target is PATH (USE an fd
// number, root, cwd, exe or mem). No names, users, modes, identity checks
// or deduplication: the least work any such answer needs. -fds-only reads
// the fd links alone (the floor of "who holds PATH open").
//
//	go run ./bench/readlinks [-fds-only] PATH
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func main() {
	fdsOnly := flag.Bool("fds-only", false, "read only the fd links (not root, cwd, exe and maps)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: readlinks [-fds-only] PATH")
		os.Exit(2)
	}
	want := flag.Arg(0)
	d, err := os.Open("/proc")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pids, _ := d.Readdirnames(-1)
	d.Close()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	buf := make([]byte, 4096)
	maps := make([]byte, 0, 64<<10)
	suffix := []byte(" " + want)
	for _, p := range pids {
		if _, err := strconv.Atoi(p); err != nil {
			continue
		}
		fd, err := unix.Open("/proc/"+p+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			f := os.NewFile(uintptr(fd), p)
			names, _ := f.Readdirnames(-1)
			for _, n := range names {
				k, err := unix.Readlinkat(fd, n, buf)
				if err == nil && string(buf[:k]) == want {
					fmt.Fprintln(out, p, n)
				}
			}
			f.Close()
		}
		if *fdsOnly {
			continue
		}
		dir, err := unix.Open("/proc/"+p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		for _, use := range []string{"root", "cwd", "exe"} {
			k, err := unix.Readlinkat(dir, use, buf)
			if err == nil && string(buf[:k]) == want {
				fmt.Fprintln(out, p, use)
			}
		}
		if mfd, err := unix.Openat(dir, "maps", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			maps = maps[:0]
			for {
				if len(maps) == cap(maps) {
					maps = append(maps, 0)[:len(maps)]
				}
				n, err := unix.Read(mfd, maps[len(maps):cap(maps)])
				if n <= 0 || err != nil {
					break
				}
				maps = maps[:len(maps)+n]
			}
			unix.Close(mfd)
			for _, line := range bytes.Split(maps, []byte("\n")) {
				if bytes.HasSuffix(line, suffix) {
					fmt.Fprintln(out, p, "mem")
					break
				}
			}
		}
		unix.Close(dir)
	}
}
