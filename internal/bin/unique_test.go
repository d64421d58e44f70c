package bin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGNUUniqueAndIFuncSymbols: STB_GNU_UNIQUE definitions are exports
// (readelf "UNIQUE", nm "u") and both OS-specific codes carry their GNU
// names, on a library the test builds and, when installed, libstdc++
// (which defines over a hundred unique objects); crossCheckELF compares
// sections, symbols, imports and exports with readelf in the same run.
func TestGNUUniqueAndIFuncSymbols(t *testing.T) {
	needReadelf(t)
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "u.c")
	os.WriteFile(src, []byte(`
__asm__(".globl uniq\n.type uniq, @gnu_unique_object\n.section .bss.uniq,\"aw\",@nobits\n.align 4\n.size uniq, 4\nuniq: .zero 4\n.text\n");
static int impl(void) { return 7; }
static int (*resolve(void))(void) { return impl; }
int chosen(void) __attribute__((ifunc("resolve")));
int plain(void) { return 1; }
`), 0o644)
	lib := filepath.Join(dir, "libu.so")
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, in := inspectPath(t, lib)
	crossCheckELF(t, lib, f, in)
	found := map[string]bool{}
	for _, e := range in.Exports {
		found[e.Name] = true
	}
	for _, want := range []string{"uniq", "chosen", "plain"} {
		if !found[want] {
			t.Errorf("export %s missing: %+v", want, in.Exports)
		}
	}
	for _, s := range loadSymbols(in, f.Data).syms {
		switch s.Name {
		case "uniq":
			if s.Binding != "STB_GNU_UNIQUE" {
				t.Errorf("uniq binding %q, want STB_GNU_UNIQUE", s.Binding)
			}
		case "chosen":
			if s.Type != "STT_GNU_IFUNC" {
				t.Errorf("chosen type %q, want STT_GNU_IFUNC", s.Type)
			}
		}
	}
	const libstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
	if _, err := os.Stat(libstdcxx); err == nil {
		f, in := inspectPath(t, libstdcxx)
		crossCheckELF(t, libstdcxx, f, in)
	}
}
