package bin

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

var objdumpPlainRE = regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)

// objdumpText runs objdump -d -w --no-show-raw-insn (with extra options)
// on section .text of p: each instruction's text by address, without
// objdump's symbol annotations ("<sym>", "# addr <sym>").
func objdumpSectionText(t testing.TB, p string, extra ...string) map[uint64]string {
	t.Helper()
	args := append([]string{"-d", "-w", "--no-show-raw-insn", "-j", ".text"}, extra...)
	out, err := exec.Command("objdump", append(args, p)...).Output()
	if err != nil {
		t.Fatalf("objdump %v %s: %v", args, p, err)
	}
	m := map[uint64]string{}
	for _, l := range strings.Split(string(out), "\n") {
		s := objdumpPlainRE.FindStringSubmatch(l)
		if s == nil {
			continue
		}
		a, _ := strconv.ParseUint(s[1], 16, 64)
		m[a] = s[2]
	}
	return m
}

// ourText disassembles section .text of p with dec in syntax: each
// instruction's text by address ("" for undecodable rows).
func ourText(t testing.TB, p string, dec x86Decoder, syntax string) map[uint64]string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := inspectMode(context.Background(), data, false, false)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := resolveSection(in, ".text", 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	idx := newSymIndex(&symbolSet{})
	m := map[uint64]string{}
	for off := 0; off < len(cr.code); {
		rows, next := disassemble(dec, archOf(in), syntax, cr.code, cr.base, off, 5000, idx, nil)
		for _, r := range rows {
			a, _ := parseHex(r.Address)
			m[a] = r.Text
		}
		if next <= off {
			break
		}
		off = next
	}
	return m
}

// canonObjdump is objdump's instruction text without its annotations
// and with runs of blanks as one.
func canonObjdump(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, " <"); i >= 0 && strings.HasSuffix(s, ">") {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}

// spell64Source assembles, with gas, one instruction of every spelling
// class gnuATT rewrites (64-bit), beside gcc -O2 code that uses them.
const spell64Source = `#include <stdio.h>
#include <string.h>
__asm__(".text\n.globl spell\n.type spell,@function\nspell:\n"
	"cltq\n cqto\n cltd\n cwtl\n cbtw\n cwtd\n"
	"movslq (%rdx,%rax,4),%rax\n movslq %ebp,%rax\n"
	"movzbl (%r14,%rax,1),%ecx\n movzwl -0x2(%rsi,%rax,1),%edx\n movzbw %al,%dx\n movzbq %al,%rdx\n"
	"movsbl (%rax,%rsi,1),%r14d\n movswl %ax,%edx\n movsbq 0x0(%rbp),%rdx\n movswq %ax,%rdx\n movsbw %al,%dx\n"
	"nopl 0x0(%rax)\n nopl 0x0(%rax,%rax,1)\n nopw 0x0(%rax,%rax,1)\n"
	".byte 0x2e,0x66,0x0f,0x1f,0x84,0,0,0,0,0\n"
	".byte 0x66,0x66,0x2e,0x0f,0x1f,0x84,0,0,0,0,0\n"
	"xchg %ax,%ax\n .byte 0x66,0x66,0x90\n"
	".byte 0x48,0x8d,0x74,0x26,0x00\n mov 0x8(%r12),%rax\n mov (%rsp),%rax\n movb $0x1,0x0(%r13,%rax,1)\n"
	"mov %fs:0x28,%rax\n mov %gs:0x10,%eax\n"
	"rep stos %rax,%es:(%rdi)\n rep movsb\n repz cmpsb\n repnz scasb\n"
	".byte 0xf3,0xc3\n"
	"notrack jmp *%rax\n bnd jmp *%rax\n bnd ret\n"
	"ljmp *(%rax)\n lcall *(%rax)\n"
	"and $-128,%rdi\n cmp $-1,%r14d\n movw $-1,-0x2(%rax,%r8,1)\n andl $-33,0x74(%rbx)\n push $-1\n"
	"imul $-0x3d70a3d7,%eax,%eax\n test $0xffffe040,%edi\n"
	"movabs $0x101010101010101,%rdx\n movabs $0x1,%rax\n movabs 0x1000,%eax\n"
	"push 0x10(%rip)\n pushq 8(%rax)\n pop %rbx\n leave\n"
	"fld %st(0)\n fstp %st(0)\n fadd %st(0),%st\n fadd %st,%st(0)\n faddp %st,%st(1)\n fucomi %st(0),%st\n fucomip %st(0),%st\n fxch %st(1)\n"
	"cmpltss %xmm1,%xmm0\n cmpnleps (%rax),%xmm2\n vcmpgt_oqps %ymm1,%ymm2,%ymm3\n"
	"bzhi %edx,%ecx,%eax\n sarx %edx,%eax,%eax\n shlx %rsi,%r10,%r10\n blsmsk %rcx,%rcx\n blsr %r11,%r11\n andn %eax,%ebx,%ecx\n"
	"vpcmpub $1,%ymm30,%ymm27,%k5\n vpcmpd $0,0xa0(%rdi),%ymm16,%k0\n vpcmpub $4,0x40(%rdi),%ymm19,%k1\n"
	"vmovdqu64 -0xc0(%rsi,%rdx,1),%zmm23\n vmovdqa64 0x3bdac(%rip),%ymm29\n vmovups %zmm1,0x40(%rdi)\n"
	"vmovdqu8 (%rsi),%zmm0{%k1}{z}\n vpminud %ymm18,%ymm19,%ymm19{%k2}{z}\n vpternlogd $0xf6,0x40(%rdx),%ymm19,%ymm20\n"
	"vmovq (%rdi),%xmm0\n vmovd (%rdi,%rdx,1),%xmm0\n vmovdqa 0x1(%rdi),%ymm1\n kmovq %k2,%rcx\n"
	"xbegin 1f\n1: jrcxz 1b\n loop 1b\n"
	"ret\n");
long tab[64]; int itab[64]; short stab[64]; signed char ctab[64];
__attribute__((noinline)) long f1(int *p, long i) { return p[i]; }
__attribute__((noinline)) long f2(signed char *p, long i) { return p[i] + (unsigned char)p[i + 1]; }
__attribute__((noinline)) long f3(short *p, long i) { return p[i] * (unsigned short)p[i + 2]; }
__attribute__((noinline)) long f4(long a, long b) { return a / b + a % b; }
__attribute__((noinline)) int f5(int a, int b) { return a / b; }
__attribute__((noinline)) double f6(double a, long b) { return a * b; }
__attribute__((noinline)) long f7(long a) { return a & -128; }
int main(int argc, char **argv) {
	char buf[256];
	memset(buf, 0, sizeof buf);
	for (int i = 0; i < argc && i < 64; i++) { itab[i] = strlen(argv[i]); ctab[i] = argv[i][0]; stab[i] = i * 3; }
	long s = f1(itab, argc) + f2(ctab, argc) + f3(stab, argc) + f4(argc, 3) + f5(argc, 2) + (long)f6(1.5, argc) + f7(argc);
	switch (argc) { case 1: s += 3; break; case 2: s *= 7; break; case 3: s -= 11; break; case 4: s ^= 5; break; case 5: s |= 9; break; }
	printf("%ld %s\n", s, buf);
	return 0;
}
`

// spell32Source is spell64Source's 32-bit counterpart (gcc -m32).
const spell32Source = `#include <stdio.h>
#include <string.h>
__asm__(".text\n.globl spell\n.type spell,@function\nspell:\n"
	"cltd\n cwtl\n cbtw\n cwtd\n"
	"movzbl (%ecx,%edx,1),%eax\n movzwl %ax,%edx\n movsbl (%ecx,%edx,1),%edx\n movswl %ax,%edx\n movsbw %al,%dx\n"
	"lea 0x0(%esi),%esi\n .byte 0x8d,0xb4,0x26,0,0,0,0\n nopw 0x0(%eax,%eax,1)\n xchg %ax,%ax\n"
	"mov %gs:0x14,%eax\n mov %ds:(%eax),%ebx\n push -0x4(%ecx)\n push $-1\n and $-16,%esp\n"
	"ljmp *(%eax)\n lcall *(%eax)\n rep stos %eax,%es:(%edi)\n"
	"fld %st(0)\n fstp %st(0)\n fadd %st(0),%st\n"
	"ret\n");
int itab[64]; signed char ctab[64];
__attribute__((noinline)) long f1(int *p, int i) { return p[i]; }
__attribute__((noinline)) long f2(signed char *p, int i) { return p[i] + (unsigned char)p[i + 1]; }
__attribute__((noinline)) long long f4(long long a, long long b) { return a / b + a % b; }
int main(int argc, char **argv) {
	for (int i = 0; i < argc && i < 64; i++) { itab[i] = strlen(argv[i]); ctab[i] = argv[i][0]; }
	printf("%ld\n", f1(itab, argc) + f2(ctab, argc) + (long)f4(argc, 3));
	return 0;
}
`

// attClass groups objdump's mnemonics into the spelling classes gnuATT
// rewrites.
func attClass(mn string) string {
	switch {
	case mn == "cltq" || mn == "cqto" || mn == "cltd" || mn == "cwtl" || mn == "cbtw" || mn == "cwtd" || mn == "movslq":
		return "sign-extension"
	case strings.HasPrefix(mn, "movz") || strings.HasPrefix(mn, "movs") && len(mn) == 6 && strings.ContainsAny(mn[4:5], "bwl"):
		return "movzx/movsx"
	case mn == "call" || mn == "jmp" || strings.HasPrefix(mn, "j") || strings.HasPrefix(mn, "loop") || mn == "xbegin" || mn == "ljmp" || mn == "lcall":
		return "branch"
	case strings.HasPrefix(mn, "nop") || mn == "xchg" || mn == "data16" || mn == "cs" || mn == "ds" || mn == "notrack" || mn == "bnd" || mn == "rep" || mn == "repz" || mn == "repnz" || mn == "lock":
		return "prefix/nop"
	case strings.HasPrefix(mn, "f"):
		return "x87"
	case strings.HasPrefix(mn, "v") || strings.HasPrefix(mn, "k"):
		return "vector"
	case strings.HasPrefix(mn, "push") || strings.HasPrefix(mn, "pop") || mn == "leave" || mn == "ret":
		return "stack"
	}
	return "general"
}

// attMismatch is one instruction whose text differs from objdump's.
type attMismatch struct {
	addr         uint64
	objdump, our string
}

// compareATT disassembles .text of p with dec and compares every
// instruction's text with objdump -d's (annotations removed): the
// mismatches by class, and the count of instructions compared.
func compareATT(t *testing.T, p string, dec x86Decoder) (map[string][]attMismatch, int) {
	t.Helper()
	ref := objdumpSectionText(t, p)
	got := ourText(t, p, dec, "gnu")
	by := map[string][]attMismatch{}
	for a, o := range ref {
		o = canonObjdump(o)
		g, ok := got[a]
		if ok && g == o {
			continue
		}
		mn := strings.Fields(o + " ?")[0]
		by[attClass(mn)] = append(by[attClass(mn)], attMismatch{a, o, g})
	}
	return by, len(ref)
}

// capstoneVecIndexRE matches a memory operand with a vector index.
var capstoneVecIndexRE = regexp.MustCompile(`\(%r[a-z0-9]+,%[xyz]mm`)

// attAllowed says why a mismatch is allowed (docs/bin.md lists each
// reason), "" when it is not: an instruction Capstone 4 cannot decode (an
// undecodable row), and Capstone 4's index register of an EVEX memory
// operand (it reads EVEX.V' as a vector index: "(%rsi,%xmm0)").
func attAllowed(dec x86Decoder, m attMismatch) string {
	if dec.Lacks == "" {
		return ""
	}
	switch {
	case m.our == "":
		return "capstone 4 cannot decode it"
	case capstoneVecIndexRE.MatchString(m.our) && !capstoneVecIndexRE.MatchString(m.objdump):
		return "capstone 4 misreads an EVEX index register"
	}
	return ""
}

// TestDisassembleATTMatchesObjdump: the AT&T text of every instruction
// of .text equals objdump -d -w's (its "<sym>" and "# addr" annotations
// aside, which are target and target_symbol here), on a 64-bit and a
// 32-bit gcc -O2 build written here whose hand-written function holds one
// instruction of every spelling class (movslq, cltq, cqto, movzbl,
// nopw 0x0(%rax,%rax,1), cs nopw, data16, xchg %ax,%ax, notrack, bnd,
// repz ret, negative immediates, movabs, %st(0), predicates folded into
// cmp mnemonics, EVEX masks, %riz) and on the system C library, with
// Zydis and with Capstone alone. With Zydis nothing may differ; with
// Capstone 4 only the instructions it cannot decode and the EVEX index
// registers it misreads (both in docs/bin.md).
func TestDisassembleATTMatchesObjdump(t *testing.T) {
	needTool(t, "objdump")
	dir := t.TempDir()
	files := []string{
		gccBuild(t, dir, "spell64", spell64Source, "-O2", "-mavx512bw"),
		gccBuild(t, dir, "spell32", spell32Source, "-O2", "-m32"),
	}
	for _, lib := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"} {
		// The race detector slows this single-goroutine decoding
		// tenfold and adds nothing to it: the fixtures only.
		if _, err := os.Stat(lib); err == nil && !raceEnabled {
			files = append(files, lib)
		}
	}
	decs := []x86Decoder{newX86Decoder()}
	if !strings.HasPrefix(decs[0].Name, "zydis") {
		t.Fatalf("default decoder %s: the Zydis library is required for this test (Debian: libzydis4.0)", decs[0].Name)
	}
	if c, err := loadCapstone(); err == nil {
		decs = append(decs, x86Decoder{lib: c, Name: c.version(), Lacks: capstoneLacks(c.major)})
	} else {
		t.Logf("Capstone not loaded (%v): Zydis alone", err)
	}
	for _, p := range files {
		ref := objdumpSectionText(t, p)
		// The fixture must hold the spellings it is meant to test.
		if strings.Contains(p, "spell") {
			seen := map[string]bool{}
			for _, o := range ref {
				seen[strings.Fields(canonObjdump(o) + " ?")[0]] = true
			}
			want := []string{"cltd", "cwtl", "movzbl", "movsbl", "xchg", "ljmp", "lcall", "push", "fld", "fstp"}
			if strings.HasSuffix(p, "64") {
				want = append(want, "cltq", "cqto", "movslq", "nopw", "cs", "data16", "notrack", "bnd", "repz", "movabs", "cmpltss", "vpcmpltub", "vpcmpnequb", "vmovdqu64", "bzhi", "xbegin")
			}
			for _, w := range want {
				if !seen[w] {
					t.Errorf("%s: objdump shows no %s: the fixture does not test it", p, w)
				}
			}
		}
		for _, dec := range decs {
			by, n := compareATT(t, p, dec)
			var classes []string
			for c := range by {
				classes = append(classes, c)
			}
			sort.Strings(classes)
			allowed := map[string]int{}
			for _, c := range classes {
				bad := 0
				for _, m := range by[c] {
					if why := attAllowed(dec, m); why != "" {
						allowed[why]++
						continue
					}
					if bad++; bad <= 5 {
						t.Errorf("%s %s: class %s: %#x objdump %q, ours %q", filepath.Base(p), dec.Name, c, m.addr, m.objdump, m.our)
					}
				}
				if bad > 0 {
					t.Errorf("%s %s: class %s: %d instructions differ from objdump", filepath.Base(p), dec.Name, c, bad)
				}
			}
			t.Logf("%s %s: %d instructions; differences allowed with a reason: %v", filepath.Base(p), dec.Name, n, allowed)
		}
	}
}

// intelAllowed says why an Intel-syntax mismatch is allowed (docs/bin.md
// lists each reason), "" when it is not.
func intelAllowed(m attMismatch) string {
	mn := strings.Fields(m.objdump + " ?")[0]
	if strings.HasPrefix(mn, "v") && strings.Contains(m.objdump, "WORD PTR") && !strings.Contains(m.our, "PTR") {
		return "Zydis's Intel formatter omits a vector memory operand's size"
	}
	return ""
}

// TestDisassembleIntelMatchesObjdump: Intel syntax against objdump -M
// intel the same way (Zydis), on the same fixtures and libc: nothing may
// differ but the documented gaps intelAllowed names.
func TestDisassembleIntelMatchesObjdump(t *testing.T) {
	needTool(t, "objdump")
	dir := t.TempDir()
	files := []string{
		gccBuild(t, dir, "spell64", spell64Source, "-O2", "-mavx512bw"),
		gccBuild(t, dir, "spell32", spell32Source, "-O2", "-m32"),
	}
	for _, lib := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"} {
		// The race detector slows this single-goroutine decoding
		// tenfold and adds nothing to it: the fixtures only.
		if _, err := os.Stat(lib); err == nil && !raceEnabled {
			files = append(files, lib)
		}
	}
	dec := newX86Decoder()
	for _, p := range files {
		ref := objdumpSectionText(t, p, "-M", "intel")
		got := ourText(t, p, dec, "intel")
		allowed := map[string]int{}
		bad := map[string]int{}
		for a, o := range ref {
			o = canonObjdump(o)
			if got[a] == o {
				continue
			}
			m := attMismatch{a, o, got[a]}
			if why := intelAllowed(m); why != "" {
				allowed[why]++
				continue
			}
			c := attClass(strings.Fields(o + " ?")[0])
			if bad[c]++; bad[c] <= 5 {
				t.Errorf("%s %s intel: class %s: %#x objdump %q, ours %q", filepath.Base(p), dec.Name, c, a, o, got[a])
			}
		}
		for c, n := range bad {
			t.Errorf("%s intel: class %s: %d instructions differ from objdump -M intel", filepath.Base(p), c, n)
		}
		t.Logf("%s %s intel: %d instructions; differences allowed with a reason: %v", filepath.Base(p), dec.Name, len(ref), allowed)
	}
}

// TestGnuATT: each rewrite of gnuATT from a decoder's text and the
// instruction's bytes to objdump's text (objdump 2.40's output for the
// same bytes, written down).
func TestGnuATT(t *testing.T) {
	for _, c := range []struct {
		mode            int
		hex, text, want string
	}{
		{64, "4863c5", "movsxd %ebp,%rax", "movslq %ebp,%rax"},
		{64, "4898", "cdqe", "cltq"},
		{64, "4899", "cqo", "cqto"},
		{64, "0f1f440000", "nopl (%rax,%rax)", "nopl 0x0(%rax,%rax,1)"},
		{64, "662e0f1f840000000000", "nopw %cs:(%rax,%rax)", "cs nopw 0x0(%rax,%rax,1)"},
		{64, "66662e0f1f840000000000", "data32 nopw %cs:(%rax,%rax)", "data16 cs nopw 0x0(%rax,%rax,1)"},
		{64, "6690", "data16 nop", "xchg %ax,%ax"},
		{64, "498b442408", "mov 0x8(%r12,%riz),%rax", "mov 0x8(%r12),%rax"},
		{64, "488d742600", "lea (%rsi,%riz),%rsi", "lea 0x0(%rsi,%riz,1),%rsi"},
		{64, "4883e780", "and $-0x80,%rdi", "and $0xffffffffffffff80,%rdi"},
		{64, "4183feff", "cmp $-0x1,%r14d", "cmp $0xffffffff,%r14d"},
		{64, "6aff", "pushq $-0x1", "push $0xffffffffffffffff"},
		{64, "48ba0101010101010101", "mov $0x101010101010101,%rdx", "movabs $0x101010101010101,%rdx"},
		{64, "e800000000", "call 0x1320", "call 1320"},
		{64, "f3c3", "rep retq", "repz ret"},
		{64, "3effe0", "ds jmp *%rax", "notrack jmp *%rax"},
		{64, "ddd8", "fstp %st", "fstp %st(0)"},
		{64, "d8c0", "fadd %st,%st", "fadd %st(0),%st"},
		{64, "dcc0", "fadd %st,%st", "fadd %st,%st(0)"},
		{64, "62f3fd48", "vpcmpub $0x01, %ymm30, %ymm27, %k5", "vpcmpltub %ymm30,%ymm27,%k5"},
		{64, "c4e270f5c2", "bzhil %edx, %ecx, %eax", "bzhi %edx,%ecx,%eax"},
		{64, "62e1fe08", "vmovdqa 0x01(%rdi), %ymm1 {%k1} {z}", "vmovdqa 0x1(%rdi),%ymm1{%k1}{z}"},
		{64, "c5fe6f4f01", "vmovdqu 1(%rdi), %ymm1", "vmovdqu 0x1(%rdi),%ymm1"},
		{64, "c5fe6f0dfcffffff", "vmovdqu 0x1000, %ymm1", "vmovdqu -0x4(%rip),%ymm1"},
		{64, "f30fc2c101", "cmpss $0x1,%xmm1,%xmm0", "cmpltss %xmm1,%xmm0"},
		{32, "8db42600000000", "lea (%esi,%eiz),%esi", "lea 0x0(%esi,%eiz,1),%esi"},
		{32, "ff71fc", "pushl -0x4(%ecx)", "push -0x4(%ecx)"},
		{32, "6690", "data16 nop", "xchg %ax,%ax"},
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := gnuATT(c.text, b, c.mode); got != c.want {
			t.Errorf("gnuATT(%q, %s, %d) = %q, want %q", c.text, c.hex, c.mode, got, c.want)
		}
	}
}

// FuzzGnuATT: gnuATT and gnuIntel never panic on any text and bytes,
// and gnuATT is
// idempotent on x86asm's rendering of the bytes.
func FuzzGnuATT(f *testing.F) {
	for _, s := range []string{"662e0f1f840000000000", "4863c5", "6690", "488d742600", "6aff", "c5fe6f0dfcffffff", "62f3fd48", "ddd8"} {
		b, _ := hex.DecodeString(s)
		f.Add(b, "nopw %cs:(%rax,%rax)", true)
	}
	f.Fuzz(func(t *testing.T, code []byte, text string, long bool) {
		mode := 32
		if long {
			mode = 64
		}
		gnuATT(text, code, mode)
		gnuIntel(text, code, mode)
		if inst, err := x86asm.Decode(code, mode); err == nil {
			once := gnuATT(gnuSyntax(inst, 0x1000, nil), code[:inst.Len], mode)
			if twice := gnuATT(once, code[:inst.Len], mode); twice != once {
				t.Errorf("%x: gnuATT is not idempotent: %q then %q", code[:inst.Len], once, twice)
			}
		}
	})
}

func TestMeasureSyntax(t *testing.T) {
	p := os.Getenv("ATT_FILE")
	if p == "" {
		t.Skip("set ATT_FILE (and ATT_SYNTAX=intel) to print the differences from objdump grouped by mnemonic")
	}
	syntax := os.Getenv("ATT_SYNTAX")
	var extra []string
	if syntax == "intel" {
		extra = []string{"-M", "intel"}
	}
	ref := objdumpSectionText(t, p, extra...)
	got := ourText(t, p, newX86Decoder(), syntax)
	by := map[string][]attMismatch{}
	for a, o := range ref {
		o = canonObjdump(o)
		if g := got[a]; g != o {
			mn := strings.Fields(o + " ?")[0]
			by[mn] = append(by[mn], attMismatch{a, o, g})
		}
	}
	var ks []string
	for k := range by {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return len(by[ks[i]]) > len(by[ks[j]]) })
	for _, k := range ks {
		e := by[k]
		t.Logf("%7d %-12s e.g. %#x objdump %q ours %q", len(e), k, e[0].addr, e[0].objdump, e[0].our)
	}
}

// TestGnuIntel: each rewrite of gnuIntel from a decoder's Intel text and
// the instruction's bytes to objdump -M intel's text (objdump 2.40's
// output for the same bytes, written down).
func TestGnuIntel(t *testing.T) {
	for _, c := range []struct {
		mode            int
		hex, text, want string
	}{
		{64, "48c7042400000000", "mov qword ptr [rsp], 0x0", "mov QWORD PTR [rsp],0x0"},
		{64, "4883f9ff", "cmp rcx, -0x1", "cmp rcx,0xffffffffffffffff"},
		{64, "468d0480", "lea r8d, ptr [rax+4*rax]", "lea r8d,[rax+rax*4]"},
		{64, "7400", "jz 0x933f6", "je 933f6"},
		{64, "0f1f4000", "nop dword ptr [rax], eax", "nop DWORD PTR [rax+0x0]"},
		{64, "662e0f1f840000000000", "nop word ptr [rax+rax], ax", "cs nop WORD PTR [rax+rax*1+0x0]"},
		{64, "6690", "data16 nop", "xchg ax,ax"},
		{64, "64488b042528000000", "mov rax, qword ptr fs:[0x28]", "mov rax,QWORD PTR fs:0x28"},
		{64, "488d05e9fbffff", "lea rax, ptr [rip-0x417]", "lea rax,[rip+0xfffffffffffffbe9]"},
		{64, "c5fe6f4e20", "vmovdqu ymm1, [rsi+0x20]", "vmovdqu ymm1,YMMWORD PTR [rsi+0x20]"},
		{64, "62f37d283ef101", "vpcmpub k6, ymm28, ymm30, 0x1", "vpcmpltub k6,ymm28,ymm30"},
		{64, "f348ab", "rep stosq qword ptr [rdi]", "rep stos QWORD PTR es:[rdi],rax"},
		{64, "d9e0", "fchs st0", "fchs"},
		{64, "ddd9", "fstp st1, st0", "fstp st(1)"},
		{64, "dec9", "fmulp st1, st0", "fmulp st(1),st"},
		{64, "db2c24", "fld st0, [rsp]", "fld TBYTE PTR [rsp]"},
		{64, "6aff", "push 0xffffffff", "push 0xffffffffffffffff"},
		{64, "f3c3", "ret", "repz ret"},
		{64, "41d0ec", "shr r12b, 0x1", "shr r12b,1"},
		{32, "65a114000000", "mov eax, dword ptr gs:[0x14]", "mov eax,gs:0x14"},
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := gnuIntel(c.text, b, c.mode); got != c.want {
			t.Errorf("gnuIntel(%q, %s, %d) = %q, want %q", c.text, c.hex, c.mode, got, c.want)
		}
	}
}
