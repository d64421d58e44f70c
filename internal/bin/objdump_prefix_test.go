package bin

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// prefixBadCases are byte sequences whose spelling or boundaries differed
// from objdump's: a 66 prefix that selects the instruction (adcx,
// invpcid, clwb, tpause, movbe with REX.W, rdrand), an undecodable
// sequence ("(bad)" spans prefixes and opcode bytes), and an absolute
// displacement after a segment (printed unsigned).
var prefixBadCases = []struct{ name, bytes string }{
	{"adcx reg", "66 0f 38 f6 c1"},
	{"adcx rex.w", "66 48 0f 38 f6 c1"},
	{"adcx mem", "66 0f 38 f6 00"},
	{"adcx rip", "66 0f 38 f6 05 00 00 00 00"},
	{"adcx twice 66", "66 66 0f 38 f6 c1"},
	{"adox", "f3 0f 38 f6 c1"},
	{"invpcid", "66 0f 38 82 08"},
	{"invept", "66 0f 38 80 00"},
	{"movdir64b", "66 0f 38 f8 01"},
	{"wrussd", "66 0f 38 f5 01"},
	{"movbe 16", "66 0f 38 f0 00"},
	{"movbe rex.w load", "66 48 0f 38 f0 00"},
	{"movbe rex.w store", "66 48 0f 38 f1 00"},
	{"crc32w", "66 f2 0f 38 f1 c1"},
	{"crc32l", "f2 0f 38 f1 c1"},
	{"crc32b mem", "f2 0f 38 f0 00"},
	{"crc32q mem", "f2 48 0f 38 f1 00"},
	{"clwb", "66 0f ae 30"},
	{"tpause", "66 0f ae f0"},
	{"clflushopt", "66 0f ae 38"},
	{"vmclear", "66 0f c7 30"},
	{"rdrand rex.w", "66 48 0f c7 f0"},
	{"rdseed rex.w", "66 48 0f c7 f8"},
	{"rdrand 16", "66 0f c7 f0"},
	{"pshufb", "66 0f 38 00 c1"},
	{"palignr", "66 0f 3a 0f c1 03"},
	{"data16 add", "66 48 01 c0"},
	{"data16 sfence", "66 0f ae f8"},
	{"data16 vmptrst", "66 0f c7 38"},
	{"bad 0f 01 group", "66 0f 01 c6"},
	{"bad c6 group", "c6 66"},
	{"bad rex.w 0f b8", "66 48 0f b8 c1"},
	{"bad 66 movnti", "66 48 0f c3 00"},
	{"bad 0f 38 ff", "0f 38 ff c0"},
	{"bad d6", "d6"},
	{"bad 0f ff", "0f ff"},
	{"fs negative abs", "64 48 8b 04 25 f8 ff ff ff"},
	{"fs abs 0x80000000", "64 48 8b 0c 25 00 00 00 80"},
	{"gs negative abs", "65 8b 04 25 fc ff ff ff"},
	{"fs store", "64 48 89 04 25 f0 ff ff ff"},
	{"negative abs", "48 8b 04 25 f8 ff ff ff"},
	{"fs imm store", "64 c7 04 25 f8 ff ff ff 01 00 00 00"},
	{"fs base disp", "64 48 8b 40 f8"},
	{"rip negative", "48 8b 05 f8 ff ff ff"},
	{"vex rip negative", "c5 fe 6f 0d fc ff ff ff"},
	{"fs rip negative", "64 48 8b 05 f8 ff ff ff"},
	{"sib base negative", "48 8b 44 24 f8"},
}

// TestX86PrefixAndBadMatchObjdump assembles each case at its own
// 32-byte boundary (nop padding) and compares, row by row, the
// instruction boundaries and texts of .text with objdump -d's: an
// undecodable row here is a "(bad)" there (with the unused prefix names
// objdump puts before it, "rex.W (bad)").
func TestX86PrefixAndBadMatchObjdump(t *testing.T) {
	needTool(t, "objdump")
	dec := newX86Decoder()
	if dec.lib == nil || dec.Lacks != "" {
		t.Skipf("needs Zydis, the decoder whose boundaries are objdump's: %s%s", dec.Missing, dec.Lacks)
	}
	var src strings.Builder
	src.WriteString(".text\n")
	for _, c := range prefixBadCases {
		src.WriteString(".balign 32, 0x90\n.byte 0x" + strings.Join(strings.Fields(c.bytes), ",0x") + "\n")
	}
	src.WriteString(".balign 32, 0x90\n")
	p := asBuild(t, t.TempDir(), "prefix", src.String())
	ref := objdumpSectionText(t, p)
	got := ourText(t, p, dec, "gnu")
	for i, c := range prefixBadCases {
		t.Run(c.name, func(t *testing.T) {
			lo, hi := uint64(32*i), uint64(32*i+32)
			var diffs []string
			var as []uint64
			for a := range ref {
				as = append(as, a)
			}
			for a := range got {
				if _, ok := ref[a]; !ok {
					as = append(as, a)
				}
			}
			sort.Slice(as, func(i, j int) bool { return as[i] < as[j] })
			for _, a := range as {
				if a < lo || a >= hi {
					continue
				}
				o, ok := ref[a]
				o = canonObjdump(o)
				g, gok := got[a]
				if gok && g == "" && ok && strings.HasSuffix(o, "(bad)") {
					continue
				}
				if ok != gok || o != g {
					diffs = append(diffs, fmt.Sprintf("%#x: objdump %q (row %v), ours %q (row %v)", a, o, ok, g, gok))
				}
			}
			if len(diffs) > 0 {
				t.Errorf("%s: %s", c.bytes, strings.Join(diffs, "; "))
			}
		})
	}
}
