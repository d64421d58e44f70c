package bin

import (
	"context"
	"debug/elf"
	"fmt"
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

var (
	reARM64Target = regexp.MustCompile(`\b([0-9a-f]+) <[^>]*>$`)
	reARM64Sym    = regexp.MustCompile(`\b[0-9a-f]+ <([^>]*)>$`)
)

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

// arm64Counts are the rows of an arm64 text comparison: compared (with
// text, data rows included), data (rows of kind data, objdump's .word,
// .short, .byte) and undecodable (objdump's ".inst ... ; undefined").
type arm64Counts struct {
	compared, data, undecodable int
	// directives counts the data rows by directive (".word", ".short",
	// ".byte").
	directives map[string]int
}

// arm64TextDiffs disassembles section sec of the arm64 ELF file p whole
// and returns the rows whose text differs from aarch64 objdump's (as
// "address: ours | objdump") and the counts. A data row must be one
// objdump prints as data; an undecodable row must be one objdump prints
// as an undefined .inst.
func arm64TextDiffs(t *testing.T, p, sec string) ([]string, arm64Counts) {
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
	rows, _ := disassemble(x86Decoder{}, ArchARM64, "gnu", code[:len(code):len(code)], s.Addr, 0, len(code), idx, nil)
	var diffs []string
	if len(rows) != len(ref) {
		diffs = append(diffs, fmt.Sprintf("%d rows, objdump -z prints %d", len(rows), len(ref)))
	}
	c := arm64Counts{directives: map[string]int{}}
	for _, r := range rows {
		a, _ := strconv.ParseUint(strings.TrimPrefix(r.Address, "0x"), 16, 64)
		want, ok := ref[a]
		if r.Error != "" {
			c.undecodable++
			if !ok || !strings.HasPrefix(want, ".inst") {
				diffs = append(diffs, r.Address+": "+r.Error+" | "+want)
			}
			continue
		}
		c.compared++
		isData := strings.HasPrefix(want, ".word") || strings.HasPrefix(want, ".short") || strings.HasPrefix(want, ".byte")
		if (r.Kind == "data") != isData {
			diffs = append(diffs, r.Address+": kind "+r.Kind+" "+r.Text+" | "+normARM64(want))
		}
		if r.Kind == "data" {
			c.data++
			c.directives[strings.Fields(r.Text)[0]]++
		}
		if !ok {
			diffs = append(diffs, r.Address+": "+r.Text+" | (no objdump instruction)")
		} else if normARM64(r.Text) != normARM64(want) {
			diffs = append(diffs, r.Address+": "+r.Text+" | "+normARM64(want))
		}
		// objdump's "<symbol+off>" is target_symbol (mapping symbols
		// never name an address).
		if m := reARM64Sym.FindStringSubmatch(want); m != nil && r.TargetSymbol != m[1] {
			diffs = append(diffs, r.Address+": target_symbol "+r.TargetSymbol+" | <"+m[1]+">")
		}
	}
	return diffs, c
}

// TestARM64TextMatchesObjdump (issue 36 case 7): the whole .text of the
// Go toolchain's linux/arm64 build and of an aarch64-linux-gnu-gcc build
// (LSE atomics, udf, adrp) is disassembled and every instruction's text
// compared with Debian's aarch64-linux-gnu-objdump in the same run: the
// count of differing instructions is 0.
func TestARM64TextMatchesObjdump(t *testing.T) {
	needReference(t, "aarch64-linux-gnu-objdump", "binutils-aarch64-linux-gnu")
	buildCorpus(t)
	files := map[string]string{"go-linux-arm64": corpus["go-linux-arm64"], "assembled": buildARM64Asm(t)}
	if gcc, err := exec.LookPath("aarch64-linux-gnu-gcc"); err == nil {
		files["gcc"] = buildARM64C(t, gcc)
	}
	for _, name := range sortedKeys(files) {
		t.Run(name, func(t *testing.T) {
			diffs, c := arm64TextDiffs(t, files[name], ".text")
			if c.compared < 100 {
				t.Fatalf("only %d instructions decoded", c.compared)
			}
			if name == "assembled" {
				for _, d := range []string{".word", ".short", ".byte"} {
					if c.directives[d] == 0 {
						t.Errorf("no %s data row: the fixture's data in .text ($d) is not read as objdump reads it", d)
					}
				}
			}
			t.Logf("%d rows compared (%d of them data: %v), %d differ from aarch64 objdump, %d undecodable rows", c.compared, c.data, c.directives, len(diffs), c.undecodable)
			for i, d := range diffs {
				if i == 200 {
					break
				}
				t.Error(d)
			}
		})
	}
}

// buildARM64Asm assembles and links (aarch64-linux-gnu-as and -ld, from
// the same binutils as the reference objdump) every form of the
// instructions arm64asm does not decode and this package does: each LSE
// atomic with every acquire/release ordering and size, the st<op> aliases
// (result register xzr), cas/casp, udf, msr to each PSTATE field, SVE
// predicated add/sub/subr of each element size, plus mrs/msr of every
// system register named in arm64SysRegNames (written by encoding, so the
// names are objdump's), fcmp with zero, adrp and ldr of a literal.
func buildARM64Asm(t *testing.T) string {
	t.Helper()
	needReference(t, "aarch64-linux-gnu-as", "binutils-aarch64-linux-gnu")
	var b strings.Builder
	b.WriteString(".arch armv8.5-a+sve+memtag+rng+ssbs\n.text\n.globl _start\n_start:\n")
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	for i, op := range []string{"add", "clr", "eor", "set", "smax", "smin", "umax", "umin", "swp"} {
		mn := "ld" + op
		if op == "swp" {
			mn = op
		}
		for _, ord := range []string{"", "a", "l", "al"} {
			for _, sz := range []string{"b", "h", "", "x"} {
				r := "w"
				suffix := sz
				if sz == "x" {
					r, suffix = "x", ""
				}
				w("%s%s%s %s%d, %s%d, [x%d]", mn, ord, suffix, r, i, r, i+3, i+1)
				w("%s%s%s %s%d, %szr, [sp]", mn, ord, suffix, r, i+2, r)
				w("cas%s%s %s%d, %s%d, [x%d]", ord, suffix, r, i, r, i+5, i+2)
			}
			w("casp%s w%d, w%d, w4, w5, [x9]", ord, 2*i%30, 2*i%30+1)
			w("casp%s x%d, x%d, x6, x7, [sp]", ord, 2*i%30, 2*i%30+1)
		}
	}
	for _, imm := range []int{0, 1, 255, 65535} {
		w(".inst %#x // udf #%d", imm, imm)
	}
	for _, f := range []string{"spsel", "daifset", "daifclr", "uao", "pan", "dit", "ssbs", "tco"} {
		w("msr %s, #1", f)
	}
	for _, sz := range []string{"b", "h", "s", "d"} {
		for _, op := range []string{"add", "sub", "subr"} {
			w("%s z3.%s, p2/m, z3.%s, z17.%s", op, sz, sz, sz)
		}
	}
	for enc := range arm64SysRegNames() {
		w("mrs x3, %s", enc)
		w("msr %s, x4", enc)
	}
	w("fcmp s0, #0.0")
	w("fcmpe d1, #0.0")
	w("adrp x0, far")
	w("ldr x1, lit")
	w("ldr w2, [x0, #8]")
	w("ldp x29, x30, [sp], #16")
	// Data in the code, marked by $d mapping symbols ($x after it):
	// literal pools of ldr =imm (.ltorg), words, halfwords and bytes of
	// every alignment, a jump table, a literal in .text, .inst (code)
	// between data, and alignment padding (its own $d).
	b.WriteString(`	ldr x0, =0x1234567890
	ldr w1, =0x12345
	adr x2, jt
	ldrb w3, [x2, x1]
	ldr x4, textlit
	b 1f
	.word 0xdeadbeef
	.word 0
	.short 0x1234
	.byte 1
	.byte 2
	.inst 0xd503201f
	.byte 1, 2, 3
	.align 2
1:	nop
	b 2f
textlit: .quad 0x1122334455667788
jt:	.byte 0, 1, 2, 3, 4
	.align 2
2:	nop
	.ltorg
	.byte 5
	.short 6
	.align 3
	mov x0, #1
	.ltorg
	ldr x5, =0xfeedfacecafebeef
	b _start
	.ltorg
`)
	b.WriteString(".data\nlit: .quad 0\n.space 0x40000\nfar: .quad 1\n")
	dir := t.TempDir()
	src, obj, exe := filepath.Join(dir, "a.s"), filepath.Join(dir, "a.o"), filepath.Join(dir, "a")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("aarch64-linux-gnu-as", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("aarch64-linux-gnu-as: %v %s", err, out)
	}
	if out, err := exec.Command("aarch64-linux-gnu-ld", "-o", exe, obj).CombinedOutput(); err != nil {
		t.Fatalf("aarch64-linux-gnu-ld: %v %s", err, out)
	}
	return exe
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

// TestARM64UndecodableIsPartial (issue 36 case 7): a disassemble page of
// the arm64 build with words no decoder here knows (objdump: ".inst ...
// ; undefined") is partial and says how many; a page of LSE atomics
// (casal, ldaddal) and udf decodes them, is complete, and prints them as
// objdump does.
func TestARM64UndecodableIsPartial(t *testing.T) {
	needReference(t, "aarch64-linux-gnu-objdump", "binutils-aarch64-linux-gnu")
	buildCorpus(t)
	p := corpus["go-linux-arm64"]
	ref := arm64ObjdumpText(t, p, ".text")
	// The first undefined word objdump prints, and the first casal.
	var undef, casal uint64
	for a, txt := range ref {
		if strings.HasSuffix(txt, "; undefined") && (undef == 0 || a < undef) {
			undef = a
		}
		if strings.HasPrefix(txt, "casal\t") && (casal == 0 || a < casal) {
			casal = a
		}
	}
	if undef == 0 || casal == 0 {
		t.Fatalf("objdump shows no undefined word (%#x) or casal (%#x)", undef, casal)
	}
	r := registry(t, "")
	for _, c := range []struct {
		start   uint64
		partial bool
	}{{undef, true}, {casal, false}} {
		m := mustCall(t, r, "disassemble", map[string]any{"path": p, "start": hexU(c.start), "end": hexU(c.start + 16)})
		lims := fmt.Sprint(m["warnings"])
		if got := m["status"] == "partial" && strings.Contains(lims, "arm64 instruction word"); got != c.partial {
			t.Errorf("%#x: status %v, limitations %s; want partial %v", c.start, m["status"], lims, c.partial)
		}
		for _, x := range rows(m) {
			row := x.(map[string]any)
			a := mustHex(t, row["address"].(string))
			want := ref[a]
			if row["error"] != nil {
				if !strings.HasSuffix(want, "; undefined") {
					t.Errorf("%#x: %v; objdump %q", a, row["error"], want)
				}
				continue
			}
			if normARM64(row["text"].(string)) != normARM64(want) {
				t.Errorf("%#x: %q; objdump %q", a, row["text"], want)
			}
		}
	}
}

// TestMappingSymbol: the ELF mapping symbol names ($x, $d, $a, $t and
// their "$d.N" forms, as GNU as and LLVM write them; the name decides, as
// in binutils) and names that are not mapping symbols.
func TestMappingSymbol(t *testing.T) {
	for _, c := range []struct {
		name, typ   string
		isMap, data bool
	}{
		{"$x", "STT_NOTYPE", true, false},
		{"$d", "STT_NOTYPE", true, true},
		{"$x.12", "STT_NOTYPE", true, false},
		{"$d.3", "STT_NOTYPE", true, true},
		{"$a", "STT_NOTYPE", true, false},
		{"$t.0", "STT_NOTYPE", true, false},
		{"$data", "STT_NOTYPE", false, false},
		{"$d", "STT_OBJECT", true, true},
		{"$", "STT_NOTYPE", false, false},
		{"$q", "STT_NOTYPE", false, false},
		{"x$d", "STT_NOTYPE", false, false},
	} {
		isMap, data := mappingSymbol(&Symbol{Name: c.name, Type: c.typ})
		if isMap != c.isMap || data != c.data {
			t.Errorf("mappingSymbol(%q, %s) = %v, %v; want %v, %v", c.name, c.typ, isMap, data, c.isMap, c.data)
		}
	}
}
