package testbuild

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// zleaderSrc: the worker thread opens argv[1] for appending (created),
// prints "ready" and blocks reading stdin; at EOF it exits the process.
// The main thread calls pthread_exit right after starting the worker, so
// the leader becomes a zombie while the worker lives on (ps: "Zl").
const zleaderSrc = `#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void *worker(void *arg) {
	int fd = open((const char *)arg, O_CREAT | O_WRONLY | O_APPEND, 0644);
	if (fd < 0) { printf("error open\n"); fflush(stdout); exit(2); }
	printf("ready\n");
	fflush(stdout);
	char b;
	while (read(0, &b, 1) > 0) {}
	exit(0);
}
int main(int argc, char **argv) {
	pthread_t t;
	if (argc < 2 || pthread_create(&t, 0, worker, argv[1]) != 0) return 1;
	pthread_exit(0);
}
`

// BuildZombieLeader builds (once per test binary) "zleader FILE": its
// main thread calls pthread_exit while a worker thread keeps FILE open,
// prints "ready" and runs until stdin closes. The process is then a
// zombie leader with a live thread (ps STAT "Zl", /proc/PID/stat state Z
// with num_threads 2).
func BuildZombieLeader(t testing.TB) string {
	return BuildC(t, "zleader", zleaderSrc, "-pthread")
}

// ZombieLeader is a running zleader: Cmd (stdin open; closing it ends the
// process), its PID and the TID of the live worker thread.
type ZombieLeader struct {
	Cmd      *exec.Cmd
	PID, TID int
}

// StartZombieLeader builds and starts zleader on file and waits (polling
// /proc, at most two minutes) until its leader is a zombie with the
// worker alive. The process is ended when t finishes.
func StartZombieLeader(t testing.TB, file string) ZombieLeader {
	t.Helper()
	bin := BuildZombieLeader(t)
	cmd := exec.Command(bin, file)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("zleader: %q %v", line, err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.LastIndexByte(b, ')')
		if i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zleader %d: leader not a zombie after 2 minutes: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := 0
	for _, e := range ents {
		if n, _ := strconv.Atoi(e.Name()); n != pid && n > 0 {
			tid = n
		}
	}
	if tid == 0 {
		t.Fatalf("zleader %d: no live task", pid)
	}
	return ZombieLeader{Cmd: cmd, PID: pid, TID: tid}
}
