//go:build linux

package capture

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// bindUnix binds and listens on a unix stream socket named name (a
// leading "@" makes it abstract) and returns its fd, closed at cleanup.
func bindUnix(t *testing.T, name string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: name}); err != nil {
		t.Fatalf("bind %q: %v", name, err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
}

// TestNetworkUnixNamesCannotForgeRows binds a socket whose path holds a
// newline and an abstract socket whose name prints a forged
// /proc/net/unix record crediting the child's listener inode to a fake
// path. Through sock_diag the forged row must not appear and the real
// path must be exact; through the /proc/net/unix fallback the ambiguous
// rows must be dropped with a warning, never attributed.
func TestNetworkUnixNamesCannotForgeRows(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "v.sock")
	c := startChild(t, "CAPTURE_NET=1", "CAPTURE_UNIX="+sock)
	first, err := Network(context.Background(), &c.id)
	if err != nil {
		t.Fatal(err)
	}
	victim := ""
	for _, r := range first.Rows {
		if r.Path == sock {
			victim = field(t, r, "inode").(string)
		}
	}
	if victim == "" {
		t.Fatalf("child's socket %s not found in %d rows", sock, len(first.Rows))
	}
	newline := filepath.Join(t.TempDir(), "a\nb.sock")
	bindUnix(t, newline)
	const forgedPath = "/tmp/FORGED.sock"
	bindUnix(t, "@f\n000000003e8ba437: 00000002 00000000 00010000 0001 01 "+victim+" "+forgedPath)
	// a forged record may also claim a socket of a family the capture
	// does not list (here a netlink socket of this process)
	nl, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(nl) })
	if err := unix.Bind(nl, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	var nlStat unix.Stat_t
	if err := unix.Fstat(nl, &nlStat); err != nil {
		t.Fatal(err)
	}
	const forgedPath2 = "/tmp/FORGED2.sock"
	bindUnix(t, fmt.Sprintf("@g\n000000003e8ba438: 00000002 00000000 00010000 0001 01 %d %s", nlStat.Ino, forgedPath2))

	check := func(t *testing.T, fallback bool) {
		cap, err := Network(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var sawNewline, sawVictim bool
		for _, r := range cap.Rows {
			if field(t, r, "protocol") != "unix" {
				continue
			}
			if r.Path == forgedPath || r.Path == forgedPath2 {
				t.Fatalf("forged row present: %+v", r.Fields)
			}
			if r.Path == newline {
				sawNewline = true
			}
			if field(t, r, "inode") == victim {
				sawVictim = true
				if r.Path != sock {
					t.Fatalf("victim inode %s shown with path %q", victim, r.Path)
				}
			}
		}
		if !fallback {
			if !sawNewline || !sawVictim || cap.Coverage["unix_rows_ambiguous"] != 0 || cap.Coverage["unix_source"] != "sock_diag" {
				t.Fatalf("sock_diag: newline path %v victim %v coverage %v", sawNewline, sawVictim, cap.Coverage)
			}
			return
		}
		if sawVictim || !cap.Partial || len(cap.Warnings) == 0 || cap.Coverage["unix_source"] != "proc_net_unix" {
			t.Fatalf("fallback: victim row kept %v partial %v warnings %v coverage %v", sawVictim, cap.Partial, cap.Warnings, cap.Coverage)
		}
		if n := cap.Coverage["unix_rows_ambiguous"].(int); n < 3 {
			t.Fatalf("fallback dropped %d ambiguous rows, want >= 3 (two forged and the victim)", n)
		}
		if n := cap.Coverage["unix_lines_unparsable"].(int); n < 1 {
			t.Fatalf("fallback counted %d unparsable lines, want the tail of %q", n, newline)
		}
	}
	t.Run("sock_diag", func(t *testing.T) {
		if _, err := unixDiagDump(); err != nil {
			t.Skipf("sock_diag unavailable here: %v", err)
		}
		check(t, false)
	})
	t.Run("proc_fallback", func(t *testing.T) {
		saved := unixDiag
		unixDiag = func() ([]unixDiagEntry, error) { return nil, fmt.Errorf("%w: test", errNoUnixDiag) }
		t.Cleanup(func() { unixDiag = saved })
		check(t, true)
	})
}

// FuzzParseUnixDiagMsg feeds arbitrary unix_diag_msg payloads and
// netlink datagrams to the decoders: they must never panic.
func FuzzParseUnixDiagMsg(f *testing.F) {
	f.Add([]byte{1, 1, 10, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, '/', 'a', '\n', 0})
	f.Add([]byte{20, 0, 0, 0, 20, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		parseUnixDiagMsg(b)
		splitNetlink(b)
	})
}
