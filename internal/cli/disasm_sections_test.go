package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	odSectionRE  = regexp.MustCompile(`(?m)^Disassembly of section (.*):$`)
	odInsnAddrRE = regexp.MustCompile(`(?m)^ +([0-9a-f]+):\t([^\t]*)\t`)
	headerLineRE = regexp.MustCompile(`(?m)^[0-9a-f]+ <.*>:$`)
	odPLTCallRE  = regexp.MustCompile(`(?m)^ +([0-9a-f]+):\t[^\t]*\tcall +[0-9a-f]+ (<.*@plt>)$`)
	ourPLTCallRE = regexp.MustCompile(`(?m)^0x([0-9a-f]+):\t[^\t]*\tcall [0-9a-f]+  (<.*@plt>)$`)
	ourInsnAddr  = regexp.MustCompile(`(?m)^0x([0-9a-f]+):\t([^\t]*)\t`)
)

// TestDisasmAllWholeFile: `bin disasm FILE --all` without --symbol,
// --section or --start lists every section objdump -d disassembles, in
// its order, each under objdump's "Disassembly of section NAME:" line,
// and the same instruction addresses, read from objdump -d -w in the same
// run: a PIE executable gcc builds here (.init, .plt, .plt.got or
// .plt.sec, .text, .fini) and an object built with -ffunction-sections
// (one section per function, an empty .text skipped), and programs with
// an ifunc, 64-bit and 386 (objdump names the resolver, not the
// STT_GNU_IFUNC symbol at its address, pads a 32-bit file's header
// addresses to 8 digits, and names an IRELATIVE PLT slot *ABS*+0xADDEND@plt
// on x86-64, *ABS*@plt on 386): the same symbol header lines and the same
// PLT call annotations. A --cursor without
// --section is refused naming --cursor.
func TestDisasmAllWholeFile(t *testing.T) {
	for _, tool := range []string{"objdump", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; .ci/run installs it", tool)
		}
	}
	dir, src := headersFixture(t)
	ifuncSrc := filepath.Join(dir, "ifunc.c")
	if err := os.WriteFile(ifuncSrc, []byte(`#include <stdio.h>
static int impl1(int x) { return x + 1; }
static int (*resolve(void))(int) { return impl1; }
int f(int) __attribute__((ifunc("resolve")));
int main(int c, char **v) { printf("%d\n", f(c)); return 0; }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Zero bytes of every run length after a function (1 to 20; a
	// symbol's start inside a zero instruction), inside one before
	// non-zero bytes, and under relocations; instructions cut by the
	// next symbol's start.
	zerosSrc := filepath.Join(dir, "zeros.s")
	asm := "\t.text\n"
	for i, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 20} {
		asm += fmt.Sprintf("\t.globl f%d\nf%d:\tret\n\t.zero %d\n", i, i, n)
	}
	asm += "\t.globl g\ng:\tret\n\t.zero 13\n\tnop\n\t.zero 9\n\tmovl $0, %eax\n\t.zero 6\n\tnop\n\t.long g\n\t.long 0\n\t.long 0\n\tnop\n\t.quad g\n\t.quad 0\n\tret\n" +
		// An instruction (movabs, 10 bytes) that runs across the next
		// symbol: objdump cuts it there.
		"\t.globl h\nh:\tnop\n\t.byte 0x48, 0xb8, 0x01, 0x02\n\t.globl h2\nh2:\tret\n\t.byte 0x0d, 0x0c\n\t.globl h3\nh3:\tret\n"
	if err := os.WriteFile(zerosSrc, []byte(asm), 0o644); err != nil {
		t.Fatal(err)
	}
	zeros := filepath.Join(dir, "zeros.o")
	exe, obj := filepath.Join(dir, "h"), filepath.Join(dir, "h.o")
	ifunc64, ifunc32 := filepath.Join(dir, "ifunc64"), filepath.Join(dir, "ifunc32")
	for _, args := range [][]string{{"-O2", "-o", exe, src}, {"-O2", "-c", "-ffunction-sections", "-o", obj, src}, {"-O2", "-o", ifunc64, ifuncSrc}, {"-c", "-o", zeros, zerosSrc}} {
		if msg, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, msg)
		}
	}
	type input struct {
		name, path  string
		minSections int
		pltCalls    bool // objdump annotates calls into the PLT
		dots        bool // objdump skips zero runs ("...")
	}
	cases := []input{{"executable", exe, 4, true, false}, {"object", obj, 3, false, false}, {"ifunc", ifunc64, 4, true, false}, {"zero runs", zeros, 1, false, true}}
	if _, err := os.Stat("/usr/lib32/Scrt1.o"); err == nil {
		if msg, err := exec.Command("gcc", "-m32", "-O2", "-fPIE", "-pie", "-o", ifunc32, ifuncSrc).CombinedOutput(); err != nil {
			t.Fatalf("gcc -m32: %v\n%s", err, msg)
		}
		cases = append(cases, input{"ifunc-386", ifunc32, 4, true, true})
	} else {
		t.Log("gcc-multilib is not installed (.ci/run installs it): the 386 case is not run")
	}
	if _, err := exec.LookPath("x86_64-w64-mingw32-gcc"); err == nil {
		// A COFF object: its sections have no virtual size, only file
		// bytes.
		coff := filepath.Join(dir, "h.obj")
		if msg, err := exec.Command("x86_64-w64-mingw32-gcc", "-O2", "-c", "-o", coff, src).CombinedOutput(); err != nil {
			t.Fatalf("mingw gcc: %v\n%s", err, msg)
		}
		cases = append(cases, input{"coff-object", coff, 1, false, false})
	} else {
		t.Log("x86_64-w64-mingw32-gcc is not installed (.ci/run installs it): the COFF case is not run")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			od, err := exec.Command("objdump", "-d", "-w", c.path).Output()
			if err != nil {
				t.Fatal(err)
			}
			out, errs, code := runCLI(t, "bin", "disasm", c.path, "--all")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			want, got := odSectionRE.FindAllStringSubmatch(string(od), -1), odSectionRE.FindAllStringSubmatch(out, -1)
			if len(want) < c.minSections {
				t.Fatalf("objdump disassembles %d sections: the input exercises too little", len(want))
			}
			names := func(m [][]string) string {
				var s []string
				for _, x := range m {
					s = append(s, x[1])
				}
				return strings.Join(s, " ")
			}
			if names(got) != names(want) {
				t.Fatalf("sections %q, objdump -d %q", names(got), names(want))
			}
			// A listing's shape: each symbol header, instruction address
			// and "..." (skipped zero bytes) line, in order.
			shape := func(re *regexp.Regexp, s string) string {
				var a []string
				for _, l := range strings.Split(s, "\n") {
					if m := re.FindStringSubmatch(l); m != nil {
						a = append(a, m[1])
					} else if l == "\t..." || headerLineRE.MatchString(l) {
						a = append(a, l)
					}
				}
				return strings.Join(a, " ")
			}
			if g, w := headerLineRE.FindAllString(out, -1), headerLineRE.FindAllString(string(od), -1); strings.Join(g, "\n") != strings.Join(w, "\n") {
				t.Errorf("symbol headers\n%s\nobjdump\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			calls := func(re *regexp.Regexp, s string) string {
				var a []string
				for _, m := range re.FindAllStringSubmatch(s, -1) {
					a = append(a, m[1]+" "+m[2])
				}
				return strings.Join(a, "\n")
			}
			if g, w := calls(ourPLTCallRE, out), calls(odPLTCallRE, string(od)); g != w || c.pltCalls == (w == "") {
				t.Errorf("calls into the PLT\n%s\nobjdump\n%s", g, w)
			}
			// Each section's shape (an object's sections all start at 0).
			wantParts, gotParts := odSectionRE.Split(string(od), -1)[1:], odSectionRE.Split(out, -1)[1:]
			for i := range wantParts {
				if g, w := shape(ourInsnAddr, gotParts[i]), shape(odInsnAddrRE, wantParts[i]); g != w || w == "" {
					t.Errorf("section %s: listing\n%s\nobjdump\n%s", want[i][1], g, w)
				}
			}
			if c.dots && !strings.Contains(out, "\n\t...\n") {
				t.Error("the input has no skipped zero run: it exercises too little")
			}
		})
	}
	_, errs, code := runCLI(t, "bin", "disasm", exe, "--all", "--cursor", "x")
	if code != 1 || !strings.Contains(errs, "INVALID_ARGUMENT") || !strings.Contains(errs, "--cursor") {
		t.Fatalf("--all --cursor without --section: exit %d: %s", code, errs)
	}
}

// TestDisasmAllFileReplaced: a whole-file listing opens the file again for
// each section; a file replaced (renamed over) or rewritten in place with
// its size and modification time kept, between two sections, fails with
// INPUT_CHANGED naming FILE (exit 1), not a listing of two files as one.
// An untouched file lists every section and exits 0.
func TestDisasmAllFileReplaced(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed")
	}
	dir, src := headersFixture(t)
	exe, other := filepath.Join(dir, "h"), filepath.Join(dir, "other")
	for _, args := range [][]string{{"-O2", "-o", exe, src}, {"-O0", "-o", other, src}} {
		if msg, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, msg)
		}
	}
	orig, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	replace := map[string]func(t *testing.T){
		"untouched": nil,
		"renamed over": func(t *testing.T) {
			if err := os.Rename(other, exe); err != nil {
				t.Fatal(err)
			}
		},
		"rewritten in place": func(t *testing.T) {
			fi, err := os.Stat(exe)
			if err != nil {
				t.Fatal(err)
			}
			b := append([]byte(nil), orig...)
			b[len(b)/2] ^= 0xff
			if err := os.WriteFile(exe, b, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(exe, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, name := range []string{"untouched", "renamed over", "rewritten in place"} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(exe, orig, 0o755); err != nil {
				t.Fatal(err)
			}
			n := 0
			testHookBeforeSection = func(string) {
				if n++; n == 2 && replace[name] != nil {
					replace[name](t)
				}
			}
			defer func() { testHookBeforeSection = nil }()
			_, errs, code := runCLI(t, "bin", "disasm", exe, "--all")
			if replace[name] == nil {
				if code != 0 || n < 3 {
					t.Fatalf("exit %d after %d sections: %s", code, n, errs)
				}
				return
			}
			if code != 1 || !strings.Contains(errs, "INPUT_CHANGED") || !strings.Contains(errs, "FILE changed during the listing") {
				t.Fatalf("exit %d: %s", code, errs)
			}
		})
	}
}
