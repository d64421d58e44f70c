//go:build linux

package capture

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestMain lets the test binary act as the child process the tests
// inspect: with CAPTURE_HELPER set it opens what it is told, prints
// "ready" and blocks until stdin closes.
func TestMain(m *testing.M) {
	if os.Getenv("CAPTURE_HELPER") != "" {
		helperMain()
		return
	}
	if os.Getenv("CAPTURE_MODULES_OF") != "" {
		modulesMain()
		return
	}
	if os.Getenv("CAPTURE_INFO_OF") != "" {
		processInfoMain()
		return
	}
	if os.Getenv("CAPTURE_NETWORK_COVERAGE") != "" {
		networkCoverageMain()
		return
	}
	code := m.Run()
	testbuild.Cleanup()
	os.Exit(code)
}

// helperMain: CAPTURE_FILE (path to open), CAPTURE_EXTRA (number of extra
// fds on that file), CAPTURE_THREADS (locked OS threads), CAPTURE_NET=1
// (TCP listener on 127.0.0.1:0 and a unix listener at CAPTURE_UNIX),
// CAPTURE_DIR with CAPTURE_DISTINCT=N (N distinct files created there).
func helperMain() {
	var keep []any
	if p := os.Getenv("CAPTURE_FILE"); p != "" {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		f.Seek(3, 0)
		keep = append(keep, f)
		n, _ := strconv.Atoi(os.Getenv("CAPTURE_EXTRA"))
		for i := 0; i < n; i++ {
			fd, err := syscall.Dup(int(f.Fd()))
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			keep = append(keep, fd)
		}
	}
	if list := os.Getenv("CAPTURE_FILES_B64"); list != "" {
		// comma-separated base64 paths (any bytes), each opened once
		for _, e := range strings.Split(list, ",") {
			name, err := base64.StdEncoding.DecodeString(e)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			f, err := os.Open(string(name))
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			keep = append(keep, f)
		}
	}
	if d := os.Getenv("CAPTURE_DIR"); d != "" {
		n, _ := strconv.Atoi(os.Getenv("CAPTURE_DISTINCT"))
		for i := 0; i < n; i++ {
			f, err := os.Create(filepath.Join(d, "held-"+strconv.Itoa(i)+".dat"))
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			keep = append(keep, f)
		}
	}
	extra := ""
	if os.Getenv("CAPTURE_NET") == "1" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		u, err := net.Listen("unix", os.Getenv("CAPTURE_UNIX"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		keep = append(keep, l, u)
		extra = " " + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	n, _ := strconv.Atoi(os.Getenv("CAPTURE_THREADS"))
	var wg sync.WaitGroup
	block := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			runtime.LockOSThread()
			wg.Done()
			<-block
		}()
	}
	wg.Wait()
	fmt.Println("ready" + extra)
	buf := make([]byte, 1)
	os.Stdin.Read(buf)
	runtime.KeepAlive(keep)
}

// child is a running helper process.
type child struct {
	cmd   *exec.Cmd
	id    sample.Identity
	extra string
	stdin interface{ Close() error }
}

// startChild runs the helper with env and waits for "ready".
func startChild(t testing.TB, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"CAPTURE_HELPER=1"}, env...)...)
	in, err := cmd.StdinPipe()
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
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper did not start: %q %v", line, err)
	}
	c := &child{cmd: cmd, stdin: in, extra: strings.TrimSpace(strings.TrimPrefix(line, "ready"))}
	c.id = identityOf(t, cmd.Process.Pid)
	t.Cleanup(c.stop)
	return c
}

func (c *child) stop() {
	c.stdin.Close()
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

func identityOf(t testing.TB, pid int) sample.Identity {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStatLine(b)
	if err != nil {
		t.Fatal(err)
	}
	return sample.Identity{PID: int32(pid), StartTicks: st.startTicks}
}

func tempFile(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("inquest capture test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// modulesMain runs the modules collector on CAPTURE_MODULES_OF ("PID
// START_TICKS") and prints each row as JSON, one per line (used to collect
// as another user).
func modulesMain() {
	f := strings.Fields(os.Getenv("CAPTURE_MODULES_OF"))
	pid, _ := strconv.Atoi(f[0])
	ticks, _ := strconv.ParseUint(f[1], 10, 64)
	c, err := Modules(context.Background(), sample.Identity{PID: int32(pid), StartTicks: ticks})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for i := range c.Rows {
		fmt.Println(string(c.Rows[i].AppendJSON(nil, nil)))
	}
}
