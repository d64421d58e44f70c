//go:build linux

package capture

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func lines(b []byte) [][]byte { return bytes.Split(b, []byte("\n")) }

func TestParsersOnTestdata(t *testing.T) {
	st, err := parseStatLine(readTestdata(t, "stat.txt"))
	if err != nil || st.startTicks == 0 || st.name == "" {
		t.Fatalf("stat: %+v %v", st, err)
	}
	var mods, deleted int
	for _, l := range lines(readTestdata(t, "maps.txt")) {
		if m, ok := parseMapsLine(l); ok {
			mods++
			if m.path == "/opt/my lib/libx.so (deleted)" && m.inode == 4242 && m.perms == "r-xp" {
				deleted++
			}
		}
	}
	if mods == 0 || deleted != 1 {
		t.Fatalf("maps: %d lines, deleted-with-space %d", mods, deleted)
	}
	var unixPaths, unixStates []string
	for _, l := range lines(readTestdata(t, "unix.txt"))[1:] {
		if e, ok := parseUnixLine(l); ok {
			unixStates = append(unixStates, e.stateName())
			if e.path != "" {
				unixPaths = append(unixPaths, e.path)
			}
		}
	}
	// listening sockets (Flags __SO_ACCEPTCON, St 01) are LISTEN, not UNCONNECTED
	if want := []string{"CONNECTED", "CONNECTED", "LISTEN", "LISTEN"}; strings.Join(unixStates, ",") != strings.Join(want, ",") {
		t.Fatalf("unix states %q, want %q", unixStates, want)
	}
	if len(unixPaths) != 2 || unixPaths[0] != "/run/my app/sock et" || unixPaths[1] != "@abstract" {
		t.Fatalf("unix paths %q", unixPaths)
	}
	for _, f := range []string{"tcp.txt", "tcp6.txt"} {
		n := 0
		for _, l := range lines(readTestdata(t, f))[1:] {
			if _, ok := parseInetLine(l); ok {
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s: no entries parsed", f)
		}
	}
	// field 9 is the task flags; PF_EXITING (0x4) marks a process in exit()
	for _, c := range []struct {
		line    string
		exiting bool
	}{
		{"7 (a) R 1 7 7 0 -1 4194308 1 0 0 0 0 0 0 0 20 0 1 0 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", true},
		{"7 (a) R 1 7 7 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", false},
	} {
		st, err := parseStatLine([]byte(c.line))
		if err != nil || (st.flags&pfExiting != 0) != c.exiting || st.startTicks != 99 {
			t.Errorf("%q: flags %#x start %d err %v, want exiting %v", c.line, st.flags, st.startTicks, err, c.exiting)
		}
	}
	fi := parseFdinfo([]byte("pos:\t42\nflags:\t0100002\nmnt_id:\t5\n"))
	if !fi.hasPos || fi.pos != 42 || fi.flags != "0100002" {
		t.Fatalf("fdinfo %+v", fi)
	}
	if fi := parseFdinfo([]byte("pos:\tx\nflags:\t9\n")); fi.hasPos || fi.hasFlags {
		t.Fatalf("bad fdinfo accepted: %+v", fi)
	}
	if m := parseStatusFile(readTestdata(t, "status.txt")); m["Name"] == "" || m["Cpus_allowed_list"] == "" {
		t.Fatalf("status %v", m)
	}
	for _, l := range lines(readTestdata(t, "broken.txt")) {
		if _, err := parseStatLine(l); err == nil {
			t.Errorf("broken stat accepted: %q", l)
		}
		if _, ok := parseMapsLine(l); ok {
			t.Errorf("broken maps accepted: %q", l)
		}
		if _, ok := parseInetLine(l); ok {
			t.Errorf("broken inet accepted: %q", l)
		}
	}
}

func TestBuildIDOfTestBinary(t *testing.T) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if id := buildID(f); len(id) < 16 {
		t.Fatalf("build id %q", id)
	}
	if id := buildID(bytes.NewReader([]byte("\x7fELF garbage"))); id != "" {
		t.Fatalf("garbage build id %q", id)
	}
}

// FuzzParsers feeds arbitrary lines to every /proc parser: they may reject
// input but must never panic.
func FuzzParsers(f *testing.F) {
	for _, name := range []string{"stat.txt", "maps.txt", "tcp.txt", "tcp6.txt", "unix.txt", "fdinfo.txt", "status.txt", "broken.txt"} {
		for _, l := range lines(readTestdata(f, name)) {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStatLine(b)
		parseMapsLine(b)
		parseInetLine(b)
		parseUnixLine(b)
		parseFdinfo(b)
		parseStatusFile(b)
		parseHexAddr(b)
		buildID(bytes.NewReader(b))
		for _, l := range cgroupLines(b) {
			if l == "" || strings.Contains(l, "\n") {
				t.Fatalf("cgroup line %q", l)
			}
		}
		fdNumber(b)
		m := newPathMatcher(Filter{Path: "a B", Extension: ".Log"})
		if got, want := m.match(b, newScratch()), len(b) > 0 && m.matchString(string(b)); got != want {
			t.Fatalf("path match of %q: bytes %v, string %v", b, got, want)
		}
	})
}
