package bin

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// avx512MaskSource has AVX-512 mask-register instructions (VEX kmovq,
// EVEX vptestnmb and vpcmpeqb into a k register, as glibc's string
// functions use them), PKU (rdpkru, wrpkru) and legacy-encoded GFNI
// instructions between ordinary ones, in one function.
const avx512MaskSource = `void masks(void) {
	__asm__ volatile(
		"push %rbx\n\t"
		"bzhi %r11,%rdx,%rbx\n\t"
		"kmovq %rbx,%k1\n\t"
		"vmovdqu8 (%rdi),%zmm1{%k1}{z}\n\t"
		"vptestnmb %zmm1,%zmm1,%k4{%k1}\n\t"
		"kmovq %k4,%rax\n\t"
		"vpcmpeqb 0x40(%rdi,%rcx,2),%zmm2,%k2\n\t"
		"kortestd %k2,%k2\n\t"
		"vpternlogd $0xde,0x80(%rsi),%zmm3,%zmm4\n\t"
		"rdpkru\n\t"
		"wrpkru\n\t"
		"gf2p8mulb %xmm1,%xmm2\n\t"
		"gf2p8affineqb $0x1,0x10(%rax,%rbx,4),%xmm3\n\t"
		"gf2p8affineinvqb $0x2,%xmm9,%xmm10\n\t"
		"add $0x1,%rax\n\t"
		"pop %rbx\n\t");
}
int main(void) { masks(); return 0; }
`

// TestDisassembleCapstone4GapIsPartial: with Capstone 4 as the decoder
// (Zydis not used), a function gcc assembles with AVX-512 mask-register
// instructions that objdump decodes in this run comes back partial, with
// a warning that names the decoder and the count of undecodable rows;
// each instruction Capstone 4 lacks is one undecodable row of objdump's
// length, so every instruction boundary equals objdump's. With Zydis the
// same function decodes whole, complete.
func TestDisassembleCapstone4GapIsPartial(t *testing.T) {
	needTool(t, "objdump")
	c, err := loadCapstone()
	if err != nil {
		t.Fatalf("the Capstone library is required for this test (Debian: libcapstone4): %v", err)
	}
	p := gccBuild(t, t.TempDir(), "avx512", avx512MaskSource, "-O1")
	ref := objdumpDisasm(t, p)
	r := registry(t, "")
	call := func() map[string]any {
		return mustCall(t, r, "disassemble", map[string]any{"path": p, "symbol": "masks"})
	}
	check := func(m map[string]any) (undecodable int) {
		t.Helper()
		rs := rows(m)
		if len(rs) < 11 {
			t.Fatalf("%d rows: %v", len(rs), rs)
		}
		for _, x := range rs {
			row := x.(map[string]any)
			a := mustHex(t, row["address"].(string))
			l, ok := ref[a]
			if !ok || l.bytes != row["bytes"] {
				t.Errorf("row %v; objdump decodes %+v there", row, l)
			}
			if row["error"] != nil {
				undecodable++
			}
		}
		return undecodable
	}

	zm := call()
	if dec := zm["coverage"].(map[string]any)["decoder"]; !strings.HasPrefix(fmt.Sprint(dec), "zydis") {
		t.Fatalf("default decoder %v: the Zydis library is required for this test (Debian: libzydis4.0)", dec)
	}
	if n := check(zm); n != 0 || zm["status"] != "complete" {
		t.Errorf("zydis: %d undecodable rows, status %v; want none, complete", n, zm["status"])
	}

	defer func(f func() x86Decoder) { x86DecoderFor = f }(x86DecoderFor)
	x86DecoderFor = func() x86Decoder {
		return x86Decoder{lib: c, Name: c.version(), Lacks: capstoneLacks(c.major)}
	}
	m := call()
	if dec := m["coverage"].(map[string]any)["decoder"]; dec != c.version() {
		t.Fatalf("decoder %v, want %s", dec, c.version())
	}
	n := check(m)
	t.Logf("%s: %d of %d rows undecodable; warnings %v", c.version(), n, len(rows(m)), m["warnings"])
	if c.major != 4 {
		t.Logf("%s is not Capstone 4: the gap this test covers may not exist", c.version())
	} else if n == 0 {
		t.Fatalf("%s decoded every AVX-512 mask instruction: the fixture does not test its gap", c.version())
	}
	if n == 0 {
		return
	}
	if m["status"] != "partial" {
		t.Errorf("status %v with %d undecodable rows, want partial", m["status"], n)
	}
	want := fmt.Sprintf("%s could not decode %d row(s)", c.version(), n)
	warned := false
	for _, w := range m["warnings"].([]any) {
		warned = warned || strings.Contains(fmt.Sprint(w), want) && strings.Contains(fmt.Sprint(w), "libzydis4.0")
	}
	if !warned {
		t.Errorf("warnings %v: want one starting %q that names Zydis", m["warnings"], want)
	}
}

// FuzzCapstoneGapLen: capstoneGapLen (and vexLen) never panic and never
// return a length beyond their input or the x86 limit.
func FuzzCapstoneGapLen(f *testing.F) {
	for _, s := range []string{"c4e1fb92cb", "62f2764926e1", "c5f877", "62f37d48", "c4", "62", "c4e2a0f5da", "62f17fc96f0f", "c4e37d184c24100a", "0f01ee", "66440f38cfd1", "660f3ace5c9810"} {
		b, _ := hex.DecodeString(s)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, code []byte, long bool) {
		mode := 32
		if long {
			mode = 64
		}
		if n := capstoneGapLen(code, mode); n < 0 || n > len(code) || n > maxInsnLen {
			t.Errorf("capstoneGapLen(%x, %d) = %d", code, mode, n)
		}
	})
}

// TestCapstoneGapLen: for every VEX (c4, c5) and EVEX (62) instruction
// and every PKU and legacy GFNI one objdump -d -w decodes in the fixture
// gcc builds in this run and in the system C library (AVX, AVX2, AVX-512
// string functions, rdpkru/wrpkru), capstoneGapLen of its bytes followed
// by the next ones is objdump's length; and it refuses what is not such an
// instruction or is cut short.
func TestCapstoneGapLen(t *testing.T) {
	needTool(t, "objdump")
	files := []string{gccBuild(t, t.TempDir(), "avx512", avx512MaskSource, "-O1")}
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		files = append(files, "/lib/x86_64-linux-gnu/libc.so.6")
	}
	for _, p := range files {
		ref := objdumpDisasm(t, p)
		checked, wrong := 0, 0
		for a, l := range ref {
			gap := strings.HasPrefix(l.text, "rdpkru") || strings.HasPrefix(l.text, "wrpkru") || strings.HasPrefix(l.text, "gf2p8")
			if len(l.bytes) < 4 || !gap && !strings.HasPrefix(l.bytes, "c4") && !strings.HasPrefix(l.bytes, "c5") && !strings.HasPrefix(l.bytes, "62") {
				continue
			}
			b, err := hex.DecodeString(l.bytes)
			if err != nil {
				t.Fatal(err)
			}
			n := len(b)
			if next, ok := ref[a+uint64(n)]; ok {
				nb, _ := hex.DecodeString(next.bytes)
				b = append(b, nb...)
			}
			checked++
			if got := capstoneGapLen(b, 64); got != n {
				if wrong++; wrong <= 10 {
					t.Errorf("%s %#x: capstoneGapLen(%x) = %d, objdump decodes %q of %d bytes", filepath.Base(p), a, b, got, l.text, n)
				}
			}
		}
		t.Logf("%s: %d VEX/EVEX/PKU/GFNI instructions, %d lengths differ from objdump's", filepath.Base(p), checked, wrong)
		if checked < 13 {
			t.Errorf("%s: only %d VEX/EVEX/PKU/GFNI instructions", p, checked)
		}
	}
	for _, c := range []struct {
		hex  string
		mode int
	}{
		{"c40000", 32}, // les (%eax),%eax in 32-bit mode
		{"62f3", 64},   // cut short
		{"c4e1fb", 64}, // cut short before ModRM
		{"90c5f877", 64},
		{"0f01", 64},       // cut short
		{"660f38cf44", 64}, // cut short in the SIB byte
		{"660f3ace01", 64}, // cut short before imm8
		{"660f38ce01", 64}, // not GFNI
	} {
		b, _ := hex.DecodeString(c.hex)
		if got := capstoneGapLen(b, c.mode); got != 0 {
			t.Errorf("capstoneGapLen(%s, %d) = %d, want 0", c.hex, c.mode, got)
		}
	}
}
