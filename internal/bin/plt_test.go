package bin

import (
	"bufio"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// pltSource calls two imported functions, printf (__printf_chk with
// _FORTIFY_SOURCE) and puts, through the PLT.
const pltSource = `#include <stdio.h>
int main(int argc, char **argv) {
	printf("hello %d %s\n", argc, argv[0]);
	puts(argv[argc - 1]);
	return 0;
}
`

// pltIfuncSource also calls two ifuncs of its own: in a PIE their
// PLT slots are bound by R_X86_64_IRELATIVE relocations (no symbol),
// which objdump names *ABS*+0xADDEND@plt (the resolver's address).
const pltIfuncSource = `#include <stdio.h>
#include <stdlib.h>
static int impl_a(int x) { return x + 1; }
static int impl_b(int x) { return x + 2; }
static void *resolve_f(void) { return getenv("X") ? (void *)impl_a : (void *)impl_b; }
int f(int) __attribute__((ifunc("resolve_f")));
static void *resolve_g(void) { return (void *)impl_b; }
int g(int) __attribute__((ifunc("resolve_g")));
int main(int argc, char **argv) {
	printf("hello %d\n", f(argc) + g(argc));
	puts(argv[argc - 1]);
	return 0;
}
`

// absPLT matches objdump's name of a PLT slot an IRELATIVE relocation binds.
var absPLT = regexp.MustCompile(`^\*ABS\*\+0x[0-9a-f]+@plt$`)

var objdumpPLTLabel = regexp.MustCompile(`^([0-9a-f]+) <([^>]+@plt)>:$`)

// objdumpPLTSymbols returns the name@plt labels objdump -d -w prints for
// p's PLT entries (its synthetic symbols), by address.
func objdumpPLTSymbols(t *testing.T, p string) map[uint64]string {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "-w", p).Output()
	if err != nil {
		t.Fatalf("objdump -d %s: %v", p, err)
	}
	labels := map[uint64]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := objdumpPLTLabel.FindStringSubmatch(sc.Text()); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			labels[a] = m[2]
		}
	}
	return labels
}

// TestDisassemblePLTMatchesObjdump: on executables gcc builds in this run
// with every x86 PLT layout (x86-64 lazy .plt with .plt.got; x86-64 IBT
// .plt.sec with 16-byte .plt.got entries;
// i386 PIE .plt whose entries jump through %ebx, whose sh_entsize is 4;
// i386 non-PIE .plt with absolute GOT slots; i386 IBT .plt.sec; x86-64
// PIEs calling ifuncs through IRELATIVE slots, lazy and IBT), every instruction's target and target_symbol equal objdump
// -d -w's annotation, so calls to imports are named name@plt as objdump
// names them, and every name@plt objdump labels is accepted as the symbol
// argument and disassembles that entry at objdump's address.
func TestDisassemblePLTMatchesObjdump(t *testing.T) {
	needTool(t, "objdump")
	needTool(t, "readelf")
	dir := t.TempDir()
	builds := []struct {
		name  string
		flags []string
		call  string // the import main calls that objdump names name@plt
		ifunc bool   // pltIfuncSource: calls objdump names *ABS*+0xADDEND@plt
	}{
		{"x86-64-lazy", []string{"-O2", "-fcf-protection=none"}, "printf@plt", false},
		{"x86-64-ibtplt", []string{"-O2", "-fcf-protection=full", "-Wl,-z,ibtplt"}, "printf@plt", false},
		{"x86-64-ibtplt-now", []string{"-O2", "-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,now"}, "printf@plt", false},
		{"i386-pie", []string{"-m32", "-O2", "-D_FORTIFY_SOURCE=2", "-fpie", "-pie"}, "__printf_chk@plt", false},
		{"i386-nopie", []string{"-m32", "-O2", "-fno-pie", "-no-pie"}, "printf@plt", false},
		{"i386-ibtplt", []string{"-m32", "-O2", "-fcf-protection=full", "-Wl,-z,ibtplt"}, "printf@plt", false},
		{"x86-64-ifunc", []string{"-O1", "-fcf-protection=none", "-fpie", "-pie"}, "printf@plt", true},
		{"x86-64-ifunc-ibtplt", []string{"-O1", "-fcf-protection=full", "-fpie", "-pie", "-Wl,-z,ibtplt"}, "printf@plt", true},
	}
	r := registry(t, "")
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			src := pltSource
			if b.ifunc {
				src = pltIfuncSource
			}
			p := gccBuild(t, dir, b.name, src, b.flags...)
			labels := objdumpPLTSymbols(t, p)
			if len(labels) < 2 {
				t.Fatalf("objdump labels %d PLT entries %v: the fixture does not call through the PLT", len(labels), labels)
			}
			st := compareObjdumpAnnotations(t, p)
			if st.symbols[b.call] == 0 || st.symbols["puts@plt"] == 0 {
				t.Errorf("no annotation equal to objdump's names %s and puts@plt (equal ones: %v)", b.call, st.symbols)
			}
			if b.ifunc {
				abs := 0
				for n, c := range st.symbols {
					if absPLT.MatchString(n) {
						abs += c
					}
				}
				if abs < 2 {
					t.Errorf("%d annotations equal to objdump's name an IRELATIVE slot *ABS*+0xADDEND@plt, want the 2 ifunc calls (equal ones: %v)", abs, st.symbols)
				}
			}
			ref := objdumpDisasm(t, p)
			for a, name := range labels {
				m := mustCall(t, r, "disassemble", map[string]any{"path": p, "symbol": name})
				ctx := data(m)["context"].(map[string]any)
				if ctx["start"] != hexU(a) || ctx["symbol"] != name {
					t.Errorf("symbol %s: context %v, objdump labels it at %#x", name, ctx, a)
					continue
				}
				rs := rows(m)
				if len(rs) == 0 {
					t.Errorf("symbol %s: no rows", name)
					continue
				}
				for _, x := range rs {
					row := x.(map[string]any)
					ra := mustHex(t, row["address"].(string))
					if l, ok := ref[ra]; !ok || l.bytes != row["bytes"] {
						t.Errorf("symbol %s: row %v, objdump %+v", name, row, l)
					}
				}
			}
		})
	}
}
