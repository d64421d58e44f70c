package bin

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// arm64ObjdumpText returns aarch64-linux-gnu-objdump -d's instruction text
// by address for section sec of p (without raw bytes), and the addresses
// where it prints no instruction (a literal pool's .word, .inst of an
// undefined encoding).
func arm64ObjdumpText(t *testing.T, p, sec string) map[uint64]string {
	t.Helper()
	out := run(t, "aarch64-linux-gnu-objdump", "-d", "-z", "--no-show-raw-insn", "-j", sec, p)
	m := map[uint64]string{}
	for _, l := range strings.Split(out, "\n") {
		if g := objdumpInsn.FindStringSubmatch(l); g != nil {
			a, _ := strconv.ParseUint(g[1], 16, 64)
			m[a] = g[2]
		}
	}
	return m
}

var reARM64Target = regexp.MustCompile(`\b([0-9a-f]+) <[^>]*>$`)

// normARM64 makes objdump's text comparable with ours: objdump's
// "<symbol+off>" annotation and "// #imm" comment go (ours are the
// target_symbol field, not text), the bare hex target objdump prints
// before an annotation gains the 0x our text (and target field) carry,
// and the tab after the mnemonic is a space.
func normARM64(s string) string {
	if i := strings.Index(s, "//"); i >= 0 {
		s = s[:i]
	}
	s = reARM64Target.ReplaceAllString(strings.TrimRight(s, " \t"), "0x$1")
	return strings.Join(strings.Fields(s), " ")
}

// arm64TextDiffs disassembles section sec of the arm64 ELF file p whole
// and returns the instructions whose text differs from aarch64 objdump's
// (as "address: ours | objdump"), the number compared and the rows that
// came back undecodable.
func arm64TextDiffs(t *testing.T, p, sec string) ([]string, int, int) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(sec)
	if s == nil {
		t.Fatalf("no %s in %s", sec, p)
	}
	code, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	in, err := inspect(context.Background(), data, false)
	if err != nil {
		t.Fatal(err)
	}
	idx := newSymIndex(loadSymbols(in, data))
	ref := arm64ObjdumpText(t, p, sec)
	rows, _ := disassemble(x86Decoder{}, ArchARM64, "gnu", code[:len(code):len(code)], s.Addr, 0, len(code)/4+1, idx, nil)
	var diffs []string
	undecodable, n := 0, 0
	for _, r := range rows {
		a, _ := strconv.ParseUint(strings.TrimPrefix(r.Address, "0x"), 16, 64)
		want, ok := ref[a]
		if r.Error != "" {
			undecodable++
			if ok && !strings.HasPrefix(want, ".inst") && !strings.HasPrefix(want, ".word") {
				diffs = append(diffs, r.Address+": "+r.Error+" | "+want)
			}
			continue
		}
		n++
		if !ok {
			diffs = append(diffs, r.Address+": "+r.Text+" | (no objdump instruction)")
		} else if normARM64(r.Text) != normARM64(want) {
			diffs = append(diffs, r.Address+": "+r.Text+" | "+normARM64(want))
		}
	}
	return diffs, n, undecodable
}

// TestARM64TextMatchesObjdump (issue 36 case 7): the whole .text of the
// Go toolchain's linux/arm64 build and of an aarch64-linux-gnu-gcc build
// (LSE atomics, udf, adrp) is disassembled and every instruction's text
// compared with Debian's aarch64-linux-gnu-objdump in the same run: the
// count of differing instructions is 0.
func TestARM64TextMatchesObjdump(t *testing.T) {
	needReference(t, "aarch64-linux-gnu-objdump", "binutils-aarch64-linux-gnu")
	buildCorpus(t)
	files := map[string]string{"go-linux-arm64": corpus["go-linux-arm64"]}
	if gcc, err := exec.LookPath("aarch64-linux-gnu-gcc"); err == nil {
		files["gcc"] = buildARM64C(t, gcc)
	}
	for _, name := range sortedKeys(files) {
		t.Run(name, func(t *testing.T) {
			diffs, n, und := arm64TextDiffs(t, files[name], ".text")
			t.Logf("%d instructions compared, %d differ from aarch64 objdump, %d undecodable rows", n, len(diffs), und)
			if p := os.Getenv("ARM64_DIFFS"); p != "" {
				os.WriteFile(p+"."+name, []byte(strings.Join(diffs, "\n")), 0o644)
			}
			for i, d := range diffs {
				if i == 200 {
					break
				}
				t.Error(d)
			}
		})
	}
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// buildARM64C builds a small C program for aarch64 with LSE atomics
// (-march=armv8.1-a: ldaddal, casal, swp), __builtin_trap (udf on arm64
// is brk; udf is written with .inst) and a global reached through adrp.
func buildARM64C(t *testing.T, gcc string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "a.c")
	os.WriteFile(src, []byte(`
#include <stdatomic.h>
long counter; int flag; long table[4096];
long add(long v) { return atomic_fetch_add(&counter, v); }
int cas(int a, int b) { return __sync_val_compare_and_swap(&flag, a, b); }
long xchg(long v) { return atomic_exchange(&counter, v); }
long get(int i) { return table[i] + table[i+100]; }
void trap(void) { __asm__ volatile(".inst 0x00000000"); __builtin_trap(); }
int main(int argc, char **argv) { return (int)add(argc) + cas(1, 2) + (int)xchg(3) + (int)get(argc); }
`), 0o644)
	p := filepath.Join(dir, "a")
	if out, err := exec.Command(gcc, "-O2", "-march=armv8.1-a", "-o", p, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", gcc, err, out)
	}
	return p
}
