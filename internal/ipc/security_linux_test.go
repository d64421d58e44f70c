package ipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// helperEnv selects a helper mode of this test binary when it runs as
// another user: "listen:PATH" binds PATH and accepts forever; "dial:PATH"
// connects, sends hello and prints what came back.
const helperEnv = "INQUEST_IPC_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

func runHelper(mode string) int {
	kind, path, _ := strings.Cut(mode, ":")
	switch kind {
	case "listen":
		ln, err := net.Listen("unix", path)
		if err != nil {
			os.Stdout.WriteString("err:" + err.Error() + "\n")
			return 1
		}
		os.Chmod(path, 0o666)
		os.Stdout.WriteString("ready\n")
		for {
			c, err := ln.Accept()
			if err != nil {
				return 0
			}
			go func() { io.Copy(io.Discard, c) }()
		}
	case "connect":
		// Connect as this (foreign) user with XDG_RUNTIME_DIR=path; print
		// the error's code, retryable and whether a host launch was tried.
		os.Setenv("XDG_RUNTIME_DIR", path)
		launched := false
		_, err := Connect(context.Background(), ConnectOptions{Start: true, Deadline: 3 * time.Second,
			Launch: func(context.Context) error { launched = true; return errors.New("no launch in tests") }})
		e := contract.AsError(err)
		if e == nil {
			os.Stdout.WriteString("connected\n")
			return 0
		}
		fmt.Fprintf(os.Stdout, "%s retryable=%v launched=%v %s\n", e.Code, e.Retryable, launched, e.Message)
		return 0
	case "dial":
		c, err := net.Dial("unix", path)
		if err != nil {
			os.Stdout.WriteString("dial-err:" + err.Error() + "\n")
			return 0
		}
		WriteFrame(c, encode(Hello{Kind: KindHello, IPCMajor: Major, BridgeVersion: "nobody"}))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		p, err := ReadFrame(c)
		if err != nil {
			os.Stdout.WriteString("closed:" + err.Error() + "\n")
			return 0
		}
		k, _ := kindOf(p)
		os.Stdout.WriteString("got:" + k + "\n")
		return 0
	}
	return 2
}

// asNobody prepares to run this test binary as uid 65534 (nobody); it
// skips unless the test runs as root with setpriv available.
type nobody struct {
	t     *testing.T
	stage string // a world-writable directory
	bin   string // a copy of this test binary nobody can execute
}

func newNobody(t *testing.T) *nobody {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to act as another user (setpriv --reuid=65534)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed")
	}
	_ = setpriv
	stage, err := os.MkdirTemp("", "inquest-squat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stage) })
	os.Chmod(stage, 0o777)
	self, _ := os.Executable()
	bin := filepath.Join(stage, "helper")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return &nobody{t: t, stage: stage, bin: bin}
}

func (n *nobody) cmd(args ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
}

// listen starts a socket listener running as nobody at path.
func (n *nobody) listen(path string) {
	n.t.Helper()
	c := n.cmd(n.bin)
	c.Env = append(os.Environ(), helperEnv+"=listen:"+path)
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		n.t.Fatalf("squatter: %q", line)
	}
}

func (n *nobody) dial(path string) string {
	n.t.Helper()
	c := n.cmd(n.bin)
	c.Env = append(os.Environ(), helperEnv+"=dial:"+path)
	out, err := c.Output()
	if err != nil {
		n.t.Fatalf("dialer: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// expectFailClosed checks that the host side (Listen), the bridge side
// (Dial) and the connect-or-start sequence all refuse, and that nothing is
// launched.
func expectFailClosed(t *testing.T, path string) {
	t.Helper()
	if ln, err := Listen(path); !errors.Is(err, ErrUntrusted) {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("Listen: %v, want ErrUntrusted", err)
	}
	if c, _, err := Dial(context.Background(), path); !errors.Is(err, ErrUntrusted) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial: %v, want ErrUntrusted", err)
	}
	launched := false
	_, err := Connect(context.Background(), ConnectOptions{Path: path, Start: true, Deadline: 3 * time.Second,
		Launch: func(context.Context) error { launched = true; return nil }})
	if contract.CodeOf(err) != contract.CodeBackendUnavailable || launched {
		t.Fatalf("Connect: %v (launched %v), want BACKEND_UNAVAILABLE without launch", err, launched)
	}
}

func TestSquattedDirectoryFailsClosed(t *testing.T) {
	n := newNobody(t)
	t.Setenv("XDG_RUNTIME_DIR", n.stage)
	if out, err := n.cmd("mkdir", "-m", "0700", Dir()).CombinedOutput(); err != nil {
		t.Fatalf("mkdir as nobody: %v %s", err, out)
	}
	expectFailClosed(t, Path())
	if _, err := AcquireHostLock(Dir(), 0); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("host lock in a squatted dir: %v", err)
	}
}

func TestSquattedSocketFailsClosed(t *testing.T) {
	n := newNobody(t)
	isolate(t)
	if err := PrepareDir(Dir(), true); err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(n.stage, "s.sock")
	n.listen(staged)
	// Move nobody's live socket into our private directory: the file is
	// nobody's, so both sides refuse it and it is left in place.
	if err := os.Rename(staged, Path()); err != nil {
		t.Fatal(err)
	}
	expectFailClosed(t, Path())
	if _, err := os.Lstat(Path()); err != nil {
		t.Fatalf("the squatter's socket was removed: %v", err)
	}
	// Same socket chowned to us: the file check passes, SO_PEERCRED on
	// connect shows the listener runs as uid 65534, and the bridge refuses.
	if err := os.Lchown(Path(), os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	_, p, err := Dial(context.Background(), Path())
	if !errors.Is(err, ErrUntrusted) || p.UID != 65534 {
		t.Fatalf("Dial to a foreign listener: %v (peer %+v)", err, p)
	}
	if _, err := Listen(Path()); err == nil {
		t.Fatal("Listen replaced a live socket")
	}
}

func TestNonSocketAndLoosePermissionsFailClosed(t *testing.T) {
	isolate(t)
	if err := PrepareDir(Dir(), true); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectFailClosed(t, Path())
	os.Remove(Path())
	if err := os.Symlink("/tmp", Path()); err != nil {
		t.Fatal(err)
	}
	expectFailClosed(t, Path())
	os.Remove(Path())
	os.Chmod(Dir(), 0o755)
	expectFailClosed(t, Path())
}

func TestForeignUIDConnectionRejected(t *testing.T) {
	n := newNobody(t)
	// A server on a socket everyone may reach (only the peer check stands
	// between nobody and the host).
	path := filepath.Join(n.stage, "open.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	f := newFake()
	srv := NewServer(f, nil)
	go srv.Serve(ln)
	t.Cleanup(srv.Close)
	if got := n.dial(path); !strings.HasPrefix(got, "closed:") {
		t.Fatalf("nobody's connection: %q, want closed before welcome", got)
	}
	if f.opened.Load() != 0 {
		t.Fatal("a session was opened for another uid")
	}
	// Control: this user's connection on the same socket is welcomed.
	c, p, err := dialRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := Handshake(c, p, "t", time.Minute) // the bound only ends a hang
	if err != nil {
		t.Fatalf("same-uid connection: %v", err)
	}
	cl.Close()
	// The real endpoint (0700 dir, 0600 socket) denies nobody at the file
	// system already.
	isolate(t)
	ln2, err := Listen(Path())
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	if got := n.dial(Path()); !strings.Contains(got, "permission denied") {
		t.Fatalf("nobody dialing the private endpoint: %q", got)
	}
}

func dialRaw(path string) (net.Conn, Peer, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, Peer{}, err
	}
	p, err := peerOf(c)
	return c, p, err
}

// TestForeignUserConnectNotRetryable: a user (nobody) whose runtime
// directory it may not enter (EACCES), or whose endpoint directory belongs
// to another user, gets BACKEND_UNAVAILABLE with retryable false (the same
// call fails until a path or a permission changes) and no host launch.
func TestForeignUserConnectNotRetryable(t *testing.T) {
	n := newNobody(t)
	for _, tc := range []struct {
		name string
		prep func(rt string)
		want string
	}{
		{"runtime dir not searchable", func(rt string) {
			os.Chmod(rt, 0o700) // root's: nobody gets EACCES on rt/inquest
			os.Mkdir(filepath.Join(rt, "inquest"), 0o700)
		}, "permission denied"},
		{"endpoint dir of another user", func(rt string) {
			os.Chmod(rt, 0o755)
			os.Mkdir(filepath.Join(rt, "inquest"), 0o700) // owned by root
		}, "owned by uid 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := filepath.Join(n.stage, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.Mkdir(rt, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.prep(rt)
			c := n.cmd(n.bin)
			c.Env = append(os.Environ(), helperEnv+"=connect:"+rt)
			out, err := c.Output()
			if err != nil {
				t.Fatalf("connect as nobody: %v %s", err, out)
			}
			got := string(out)
			if !strings.HasPrefix(got, "BACKEND_UNAVAILABLE retryable=false launched=false ") || !strings.Contains(got, tc.want) {
				t.Fatalf("connect as nobody: %q, want BACKEND_UNAVAILABLE, not retryable, no launch, mentioning %q", got, tc.want)
			}
		})
	}
}

// TestRuntimeDirRecreatedPrivate: a removed $XDG_RUNTIME_DIR is recreated
// 0700 with the endpoint directory inside it, and a runtime directory
// that is a symbolic link or 0755 is refused (never repaired).
func TestRuntimeDirRecreatedPrivate(t *testing.T) {
	base := t.TempDir()
	xdg := filepath.Join(base, "run-user")
	dir := filepath.Join(xdg, "inquest")
	if err := PrepareDir(dir, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{xdg, dir} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: mode %v, %v; want 0700", p, fi.Mode().Perm(), err)
		}
	}
	link := filepath.Join(base, "link")
	os.Symlink(dir, link)
	shared := filepath.Join(base, "shared")
	os.Mkdir(shared, 0o700)
	os.Chmod(shared, 0o755)
	for _, bad := range []string{link, shared} {
		if err := PrepareDir(bad, true); !errors.Is(err, ErrUntrusted) {
			t.Errorf("%s: %v, want ErrUntrusted", bad, err)
		}
	}
}
