// Package testbuild builds, with the system C compiler, the native
// fixtures that tests of several packages share: two builds of one shared
// library with different GNU build ids and sizes, and a loader that
// dlopens a library. Only tests import it.
package testbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Build ids given to the two builds of libtarget (ld --build-id=0x...).
const (
	BuildIDA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	BuildIDB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

const (
	libSrcA   = "int target_value(void) { return 1; }\n"
	libSrcB   = "static const char pad[65536] = {1};\nint target_value(void) { return 2 + pad[0]; }\n"
	loaderSrc = `#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) { printf("error %s\n", dlerror()); return 1; }
	int (*f)(void) = (int (*)(void))dlsym(h, "target_value");
	printf("ready %d\n", f ? f() : -1);
	fflush(stdout);
	char b;
	while (read(0, &b, 1) > 0) {}
	return 0;
}
`
)

// DLOpen is the built fixture: Loader dlopens argv[1] with RTLD_NOW,
// prints "ready N" (N = the library's target_value(): 1 for A, 2 for B)
// and blocks until stdin closes; LibA and LibB are the two builds.
type DLOpen struct {
	Dir, Loader, LibA, LibB string
}

var (
	once  sync.Once
	built DLOpen
	err   string
)

// BuildDLOpen builds the fixture once per test binary (t is skipped when
// gcc is missing; .ci/run installs it). Cleanup removes Dir.
func BuildDLOpen(t testing.TB) DLOpen {
	t.Helper()
	if _, e := exec.LookPath("gcc"); e != nil {
		t.Skip("gcc not installed (.ci/run installs it)")
	}
	once.Do(func() {
		dir, e := os.MkdirTemp("", "inquest-dlopen")
		if e != nil {
			err = e.Error()
			return
		}
		built = DLOpen{Dir: dir, Loader: filepath.Join(dir, "loader"), LibA: filepath.Join(dir, "libtarget-a.so"), LibB: filepath.Join(dir, "libtarget-b.so")}
		build := func(src, out string, args ...string) {
			if err != "" {
				return
			}
			c := out + ".c"
			if e := os.WriteFile(c, []byte(src), 0o600); e != nil {
				err = e.Error()
				return
			}
			cmd := exec.Command("gcc", append(append([]string{"-O1", "-o", out, c}, args...), "-ldl")...)
			if b, e := cmd.CombinedOutput(); e != nil {
				err = string(b) + e.Error()
			}
		}
		build(libSrcA, built.LibA, "-shared", "-fPIC", "-Wl,--build-id=0x"+BuildIDA)
		build(libSrcB, built.LibB, "-shared", "-fPIC", "-Wl,--build-id=0x"+BuildIDB)
		build(loaderSrc, built.Loader)
	})
	if err != "" {
		t.Fatal(err)
	}
	return built
}

// Cleanup removes the fixture directory (call from TestMain after m.Run).
func Cleanup() {
	if built.Dir != "" {
		os.RemoveAll(built.Dir)
	}
	cMu.Lock()
	if cDir != "" {
		os.RemoveAll(cDir)
	}
	cMu.Unlock()
}
