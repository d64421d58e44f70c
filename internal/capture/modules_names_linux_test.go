//go:build linux

package capture

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Two builds of one shared library with different GNU build ids and
// sizes, and a loader that dlopens its argument, prints "ready" and
// blocks until stdin closes: built once per package run with gcc.
const (
	libBuildA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	libBuildB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
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

var (
	dlOnce             sync.Once
	dlDir, dlErr       string
	dlLoader, dlA, dlB string
)

// dlFixture builds libtarget A and B and the loader (skips without gcc).
func dlFixture(t *testing.T) (loader, libA, libB string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (.ci/run installs it)")
	}
	dlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inquest-dlopen")
		if err != nil {
			dlErr = err.Error()
			return
		}
		dlDir = dir
		build := func(src, out string, args ...string) {
			if dlErr != "" {
				return
			}
			c := filepath.Join(dir, filepath.Base(out)+".c")
			os.WriteFile(c, []byte(src), 0o600)
			cmd := exec.Command("gcc", append(append([]string{"-O1", "-o", out, c}, args...), "-ldl")...)
			if b, err := cmd.CombinedOutput(); err != nil {
				dlErr = string(b) + err.Error()
			}
		}
		dlA, dlB, dlLoader = filepath.Join(dir, "libtarget-a.so"), filepath.Join(dir, "libtarget-b.so"), filepath.Join(dir, "loader")
		build(libSrcA, dlA, "-shared", "-fPIC", "-Wl,--build-id=0x"+libBuildA)
		build(libSrcB, dlB, "-shared", "-fPIC", "-Wl,--build-id=0x"+libBuildB)
		build(loaderSrc, dlLoader)
	})
	if dlErr != "" {
		t.Fatal(dlErr)
	}
	return dlLoader, dlA, dlB
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestModulesReplacedLibrary: a process dlopens libtarget.so (build A);
// the file is removed and build B copied to the same path. The modules
// row is the mapped object: path without the suffix, deleted and replaced
// true, build id, size and device/inode of A (read through map_files),
// not B's; readelf -n on A, run here, gives the same build id.
func TestModulesReplacedLibrary(t *testing.T) {
	loader, libA, libB := dlFixture(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "libtarget.so")
	copyFile(t, libA, lib)
	var stA os.FileInfo
	stA, _ = os.Stat(lib)
	cmd := exec.Command(loader, lib)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready 1\n" {
		t.Fatalf("loader: %q", line)
	}
	id := identityOf(t, cmd.Process.Pid)
	check := func(wantDeleted, wantReplaced bool, wantSize int64) {
		t.Helper()
		c, err := Modules(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var rows []*Row
		for i := range c.Rows {
			if c.Rows[i].Path == lib {
				rows = append(rows, &c.Rows[i])
			}
		}
		if len(rows) != 1 {
			t.Fatalf("%d rows for %s", len(rows), lib)
		}
		r := rows[0]
		get := func(k string) any { v, _ := r.Get(k); return v }
		if get("path") != lib || get("deleted") != wantDeleted || get("replaced") != wantReplaced {
			t.Fatalf("row: %v", r.Fields)
		}
		if get("build_id") != libBuildA || get("size_bytes") != strconv.FormatInt(wantSize, 10) || get("metadata_unavailable") != nil {
			t.Fatalf("facts are not the mapped object's: %v", r.Fields)
		}
	}
	check(false, false, stA.Size())
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	copyFile(t, libB, lib)
	check(true, true, stA.Size())
	if _, err := exec.LookPath("readelf"); err == nil {
		b, _ := exec.Command("readelf", "-n", libA).Output()
		if !strings.Contains(string(b), "Build ID: "+libBuildA) {
			t.Fatalf("readelf -n: %s", b)
		}
	}
}
