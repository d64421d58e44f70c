package bin

import (
	"strings"
	"testing"
)

// vexNoBaseCases are VEX and EVEX instructions whose memory operand has
// no base register (a segment-relative or absolute address, with or
// without an index): objdump writes the operand-size suffix the
// registers do not show ("vcvtsi2ssl %fs:0xfffffffffffffffc,...",
// "vcvtpd2psx 0x1234,%xmm1") exactly as for "(%rax)".
var vexNoBaseCases = []struct{ name, src string }{
	{"vcvtsi2ssl fs negative", "vcvtsi2ssl %fs:0xfffffffffffffffc,%xmm1,%xmm1"},
	{"vcvtsi2sdl fs", "vcvtsi2sdl %fs:0x0,%xmm1,%xmm1"},
	{"vcvtsi2sdq fs", "vcvtsi2sdq %fs:0x0,%xmm1,%xmm1"},
	{"vcvtsi2sdl abs", "vcvtsi2sdl 0x1234,%xmm1,%xmm1"},
	{"vcvtsi2sdq abs", "vcvtsi2sdq 0x1234,%xmm1,%xmm1"},
	{"vcvtusi2sdl abs", "vcvtusi2sdl 0x1234,%xmm1,%xmm1"},
	{"vcvtusi2ssq fs", "vcvtusi2ssq %fs:0x0,%xmm1,%xmm1"},
	{"vcvtsi2shl abs", "vcvtsi2sh 0x1234,%xmm1,%xmm1"},
	{"vcvtsi2shq abs", "vcvtsi2shq 0x1234,%xmm1,%xmm1"},
	{"vcvtpd2psy fs", "vcvtpd2psy %fs:0x0,%xmm1"},
	{"vcvtpd2psx abs", "vcvtpd2psx 0x1234,%xmm1"},
	{"vcvtpd2psy abs", "vcvtpd2psy 0x1234,%xmm1"},
	{"vcvtpd2psx fs", "vcvtpd2psx %fs:0x0,%xmm1"},
	{"vcvtpd2dqy abs", "vcvtpd2dqy 0x1234,%xmm1"},
	{"vcvttpd2dqx fs", "vcvttpd2dqx %fs:0x0,%xmm1"},
	{"evex vcvtpd2ps zmm abs", "vcvtpd2ps 0x1234,%ymm1"},
	{"evex vcvtpd2psy masked abs", "vcvtpd2psy 0x1234,%xmm1{%k1}"},
	{"vfpclasspsx abs", "vfpclasspsx $1,0x1234,%k1"},
	{"vfpclasspsy fs", "vfpclasspsy $1,%fs:0x0,%k1"},
	{"vcvtsi2sdl index only", "vcvtsi2sdl 0x1234(,%rax,4),%xmm1,%xmm1"},
	{"vcvtpd2psy index only", "vcvtpd2psy 0x1234(,%rax,4),%xmm1"},
	{"vcvtsi2ssl base", "vcvtsi2ssl (%rax),%xmm1,%xmm1"},
	{"vcvtpd2psy base", "vcvtpd2psy (%rax),%xmm1"},
	{"vcvtsi2ssl register", "vcvtsi2ss %eax,%xmm1,%xmm1"},
	{"cvtsi2ssl fs", "cvtsi2ssl %fs:0x0,%xmm1"},
	{"vcvtpd2ps broadcast abs", "vcvtpd2ps 0x1234{1to4},%xmm1"},
}

// TestVEXNoBaseSuffixMatchesObjdump assembles each case at its own
// 32-byte boundary and compares its text with objdump -d's.
func TestVEXNoBaseSuffixMatchesObjdump(t *testing.T) {
	needTool(t, "objdump")
	needTool(t, "as")
	dec := newX86Decoder()
	if dec.lib == nil || dec.Lacks != "" {
		t.Skipf("needs Zydis, the decoder whose boundaries are objdump's: %s%s", dec.Missing, dec.Lacks)
	}
	var src strings.Builder
	src.WriteString(".text\n")
	for _, c := range vexNoBaseCases {
		src.WriteString(".balign 32, 0x90\n" + c.src + "\n")
	}
	src.WriteString(".balign 32, 0x90\n")
	p := asBuild(t, t.TempDir(), "vexnobase", src.String())
	ref := objdumpSectionText(t, p)
	got := ourText(t, p, dec, "gnu")
	for i, c := range vexNoBaseCases {
		t.Run(c.name, func(t *testing.T) {
			a := uint64(32 * i)
			o, ok := ref[a]
			if !ok {
				t.Fatalf("objdump has no row at %#x", a)
			}
			if o = canonObjdump(o); got[a] != o {
				t.Errorf("%s at %#x: ours %q, objdump %q", c.src, a, got[a], o)
			}
		})
	}
}
