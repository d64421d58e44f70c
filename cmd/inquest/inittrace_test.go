package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// initLine is one line of GODEBUG=inittrace=1: "init PKG @T ms, C ms clock,
// N bytes, M allocs".
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

// maxInitBytes bounds what one of inquest's own packages may allocate in
// its package initialisation. Every command (`inquest ps`, `inquest
// version`) pays for every package's init, so tables only one tool uses
// (the hardening symbol names, schemas that splice catalogs) are built on
// first use instead.
const maxInitBytes = 8 << 10

// TestStartupInitAllocations runs `inquest version` with the runtime's
// init trace and holds each of inquest's own packages to maxInitBytes of
// allocation during initialisation (bytes, not time: the same build
// allocates the same at init on any machine).
func TestStartupInitAllocations(t *testing.T) {
	cmd := exec.Command(binary, "version")
	cmd.Env = append(isolatedEnv(t), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inquest version: %v\n%s", err, out)
	}
	ours := 0
	for _, line := range strings.Split(string(out), "\n") {
		m := initLine.FindStringSubmatch(line)
		// third_party/ holds unmodified library code (Bubble Tea's
		// key tables), whose init is the library's, as upstream's was.
		if m == nil || !strings.HasPrefix(m[1], "github.com/inquest-dev/inquest/") || strings.HasPrefix(m[1], "github.com/inquest-dev/inquest/third_party/") {
			continue
		}
		ours++
		if n, _ := strconv.Atoi(m[2]); n > maxInitBytes {
			t.Errorf("package %s allocates %d bytes (%s allocs) at initialisation, over %d: build it on first use", m[1], n, m[3], maxInitBytes)
		}
	}
	if ours == 0 {
		t.Fatalf("no init trace line of an inquest package in:\n%s", out)
	}
}
