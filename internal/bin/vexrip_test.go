package bin

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// objdumpRIPLine is one objdump -d -w --no-show-raw-insn line whose operand
// is RIP-relative: address, text and the "# target" annotation.
var objdumpRIPLine = regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*\(%rip\).*?)\s+#\s+([0-9a-f]+)`)

// TestVEXRIPRelativeOperandsMatchObjdump (issue 36 case 6): every
// RIP-relative VEX and EVEX instruction of libm's and libc's .text keeps
// its (%rip) operand in the text and its target address, as objdump
// prints them ("vmovsd 0x1eec5(%rip),%xmm0  # 8d100"); a row printed as
// an absolute address changes the instruction's meaning.
func TestVEXRIPRelativeOperandsMatchObjdump(t *testing.T) {
	needTool(t, "objdump")
	if raceEnabled {
		t.Skip("whole-library decoding is single-goroutine: the race detector slows it tenfold and adds nothing")
	}
	dec := newX86Decoder()
	if !strings.HasPrefix(dec.Name, "zydis") {
		t.Fatalf("default decoder %s: the Zydis library is required for this test (Debian: libzydis4.0)", dec.Name)
	}
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		out, err := exec.Command("objdump", "-d", "-w", "--no-show-raw-insn", "-j", ".text", p).Output()
		if err != nil {
			t.Fatalf("objdump %s: %v", p, err)
		}
		type ref struct {
			text   string
			target uint64
		}
		want := map[uint64]ref{}
		for _, l := range strings.Split(string(out), "\n") {
			m := objdumpRIPLine.FindStringSubmatch(l)
			if m == nil || !strings.HasPrefix(strings.TrimSpace(m[2]), "v") {
				continue
			}
			a, _ := strconv.ParseUint(m[1], 16, 64)
			tg, _ := strconv.ParseUint(m[3], 16, 64)
			want[a] = ref{canonObjdump(m[2]), tg}
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		in, err := inspectMode(context.Background(), data, false, dwarfOff)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := resolveSection(in, ".text", 0, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		idx := newSymIndex(&symbolSet{})
		seen, bad := 0, 0
		for off := 0; off < len(cr.code); {
			rows, next := disassemble(dec, archOf(in), "gnu", cr.code, cr.base, off, 5000, idx, nil)
			for _, r := range rows {
				a, _ := parseHex(r.Address)
				w, ok := want[a]
				if !ok {
					continue
				}
				seen++
				tg, _ := parseHex(r.Target)
				if r.Text != w.text || tg != w.target {
					if bad++; bad <= 5 {
						t.Errorf("%s %#x: ours %q target %s; objdump %q # %x", p, a, r.Text, r.Target, w.text, w.target)
					}
				}
			}
			if next <= off {
				break
			}
			off = next
		}
		t.Logf("%s: %d RIP-relative VEX/EVEX instructions in objdump, %d found by address, %d differ", p, len(want), seen, bad)
		if seen != len(want) || bad > 0 || (strings.Contains(p, "libm") && len(want) < 100) {
			t.Errorf("%s: %d of objdump's %d RIP-relative VEX/EVEX instructions found, %d differ", p, seen, len(want), bad)
		}
	}
}
