//go:build linux

// Command readlinks is the floor of "who holds PATH open": it lists /proc,
// reads every /proc/PID/fd/N link with readlinkat(2) on the fd directory
// and prints the PIDs and fds whose link is PATH, one "PID FD" line each.
// No names, users or modes: the least work any such answer needs.
//
//	go run ./bench/readlinks PATH
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: readlinks PATH")
		os.Exit(2)
	}
	want := os.Args[1]
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
	for _, p := range pids {
		if _, err := strconv.Atoi(p); err != nil {
			continue
		}
		fd, err := unix.Open("/proc/"+p+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
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
}
