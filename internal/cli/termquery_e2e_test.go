//go:build linux

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Terminal queries that expect the terminal to answer: OSC 11 asks for the
// background colour, DSR 6 for the cursor position. A terminal that does
// not answer (tmux without passthrough, some SSH setups, CI ptys) left a
// command waiting for the reply.
var terminalQueries = []struct {
	name string
	seq  []byte
}{
	{"OSC 11 background-colour query", []byte("\x1b]11;?")},
	{"DSR cursor-position query", []byte("\x1b[6n")},
}

// ptySession is the built binary running on the slave side of a pty whose
// master nobody answers: everything the command writes is collected.
type ptySession struct {
	cmd    *exec.Cmd
	f      *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{} // closed when the master reads EOF or an error
	more   chan struct{} // signalled after each read
	exited chan struct{} // closed when the command has exited
}

// startOnSilentPty runs e's binary with args on a 100x40 pty, with TERM
// naming a terminal that supports queries (so nothing but the program
// itself decides whether to send them) and without CI (which would make
// terminal libraries treat the pty as no terminal).
func startOnSilentPty(t *testing.T, e *heEnv, args ...string) *ptySession {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	for _, kv := range e.env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TERM", "CI", "NO_COLOR", "COLORFGBG", "TMUX":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "TERM=xterm-256color")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	s := &ptySession{cmd: cmd, f: f, done: make(chan struct{}), more: make(chan struct{}, 1), exited: make(chan struct{})}
	go func() {
		defer close(s.exited)
		cmd.Wait()
	}()
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			select {
			case s.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.exited
		f.Close()
		<-s.done
	})
	return s
}

func (s *ptySession) output() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.out.Bytes())
}

// waitOutput waits until the output contains want; the bound only catches
// a hang.
func (s *ptySession) waitOutput(t *testing.T, want string) {
	t.Helper()
	hang := time.After(2 * time.Minute)
	for !bytes.Contains(s.output(), []byte(want)) {
		select {
		case <-s.more:
		case <-s.done:
			if !bytes.Contains(s.output(), []byte(want)) {
				t.Fatalf("output ended without %q:\n%q", want, s.output())
			}
		case <-hang:
			t.Fatalf("no %q within 2 minutes (hang):\n%q", want, s.output())
		}
	}
}

// wait waits for the command to exit and its output to end; the bound only
// catches a hang.
func (s *ptySession) wait(t *testing.T) {
	t.Helper()
	hang := time.After(2 * time.Minute)
	select {
	case <-s.exited:
	case <-hang:
		t.Fatalf("%v did not exit within 2 minutes (hang):\n%q", s.cmd.Args, s.output())
	}
	select {
	case <-s.done:
	case <-hang:
		t.Fatalf("%v exited but its terminal output did not end within 2 minutes:\n%q", s.cmd.Args, s.output())
	}
}

func assertNoTerminalQuery(t *testing.T, args []string, out []byte) {
	t.Helper()
	for _, q := range terminalQueries {
		if i := bytes.Index(out, q.seq); i >= 0 {
			t.Errorf("%v wrote a %s (%q) at byte %d of its output, which begins:\n%q", args, q.name, q.seq, i, head(out))
		}
	}
}

// Plain commands on a terminal write their output and exit without asking
// the terminal anything: a terminal that never answers must not make them
// wait.
func TestCommandsOnSilentTerminalSendNoQuery(t *testing.T) {
	e := newHeEnv(t)
	for _, tc := range []struct {
		args []string
		want string // in the output, so the command really ran
	}{
		{[]string{"--help"}, "Available Commands:"},
		{[]string{"version"}, "inquest"},
		{[]string{"ps"}, "PID"},
		{[]string{"bin", "inspect", "/bin/ls"}, "ELF"},
		{[]string{"no-such-command"}, "unknown command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			s := startOnSilentPty(t, e, tc.args...)
			s.wait(t)
			out := s.output()
			if !bytes.Contains(out, []byte(tc.want)) {
				t.Fatalf("%v output lacks %q; it begins:\n%q", tc.args, tc.want, head(out))
			}
			assertNoTerminalQuery(t, tc.args, out)
		})
	}
}

// The TUI on a terminal that never answers draws its table, quits on q and
// has asked the terminal nothing.
func TestTUIOnSilentTerminalSendsNoQuery(t *testing.T) {
	e := newHeEnv(t)
	s := startOnSilentPty(t, e)
	s.waitOutput(t, "PID USER")
	if _, err := s.f.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	assertNoTerminalQuery(t, []string{"inquest"}, s.output())
}

// head is the first 400 bytes of b, enough to show where a query sits.
func head(b []byte) []byte {
	if len(b) > 400 {
		return b[:400]
	}
	return b
}
