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
	in, err := inspectMode(context.Background(), data, false, dwarfOff)
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

// vectorMemSource is assembled with gas (Intel syntax): a VEX, EVEX or
// XOP-free instruction of each way objdump sizes a vector memory operand
// (the register width, a fixed scalar or half/quarter size, FMA4,
// vldmxcsr, a VSIB element, a broadcast element "DWORD BCST" with its
// "{1to4}" kept where no register shows the vector length, vlddqu's
// unsized operand), the AT&T mnemonic suffixes objdump adds where the
// registers do not show the size (vcvtpd2psx/y, vfpclasspsz, vcvtsi2sdl/q)
// and the pclmul aliases.
const vectorMemSource = `.intel_syntax noprefix
.text
.globl vec
vec:
vfmadd213sd xmm1,xmm5,QWORD PTR [rcx+0x18]
vfmadd213ss xmm1,xmm5,DWORD PTR [rcx+0x18]
vfmaddsd xmm0,xmm1,xmm0,QWORD PTR [rip+0x10]
vfmaddsd xmm0,xmm1,QWORD PTR [rax],xmm0
vfmaddps ymm0,ymm1,ymm2,YMMWORD PTR [rax]
vstmxcsr DWORD PTR [rsp+4]
vldmxcsr DWORD PTR [rsp+4]
vcomisd xmm1,QWORD PTR [rax]
vcomiss xmm1,DWORD PTR [rax]
vucomisd xmm1,QWORD PTR [rax]
vfmadd213pd xmm0,xmm4,XMMWORD PTR [rax]
vfmadd213pd ymm0,ymm4,YMMWORD PTR [rax]
vfmadd213pd zmm0,zmm4,ZMMWORD PTR [rax]
vfmadd213pd zmm0,zmm4,QWORD BCST [rax]
vaddps zmm0,zmm1,DWORD BCST [rax+0x40]
vaddps ymm0,ymm1,DWORD BCST [rax]
vaddpd xmm0,xmm1,QWORD BCST [rax]
vpaddd zmm0{k1},zmm1,DWORD BCST [rax]
vpbroadcastd xmm0,DWORD PTR [rax]
vpbroadcastq zmm0,QWORD PTR [rax]
vbroadcastss ymm0,DWORD PTR [rax]
vbroadcastf128 ymm0,XMMWORD PTR [rax]
vbroadcasti32x4 zmm0,XMMWORD PTR [rax]
vpgatherdd ymm0,DWORD PTR [rax+ymm1*4],ymm2
vgatherqpd ymm0,QWORD PTR [rax+ymm1*8],ymm2
vpgatherdd zmm0{k1},DWORD PTR [rax+zmm1*4]
vpscatterdd DWORD PTR [rax+zmm1*4]{k1},zmm0
vmovq xmm0,QWORD PTR [rax]
vmovd xmm0,DWORD PTR [rax]
vmovq QWORD PTR [rax],xmm0
vpinsrb xmm0,xmm1,BYTE PTR [rax],1
vpinsrw xmm0,xmm1,WORD PTR [rax],1
vpinsrd xmm0,xmm1,DWORD PTR [rax],1
vpinsrq xmm0,xmm1,QWORD PTR [rax],1
vpextrw WORD PTR [rax],xmm0,1
vpextrb BYTE PTR [rax],xmm0,1
vextractps DWORD PTR [rax],xmm0,1
vinsertps xmm0,xmm1,DWORD PTR [rax],1
vinsertf128 ymm0,ymm1,XMMWORD PTR [rax],1
vextractf128 XMMWORD PTR [rax],ymm0,1
vinserti64x4 zmm0,zmm1,YMMWORD PTR [rax],1
vcvtps2pd ymm0,XMMWORD PTR [rax]
vcvtdq2pd xmm0,QWORD PTR [rax]
vcvtpd2ps xmm0,XMMWORD PTR [rax]
vcvtpd2ps xmm0,YMMWORD PTR [rax]
vcvtpd2dq xmm0,YMMWORD PTR [rax]
vcvttsd2si eax,QWORD PTR [rax]
vcvtsi2sd xmm0,xmm1,DWORD PTR [rax]
vcvtsi2sd xmm0,xmm1,QWORD PTR [rax]
vcvtsi2ss xmm0,xmm1,DWORD PTR [rax]
vcvtss2sd xmm0,xmm1,DWORD PTR [rax]
vcvtsd2ss xmm0,xmm1,QWORD PTR [rax]
vcvtps2ph XMMWORD PTR [rax],ymm0,1
vcvtph2ps ymm0,XMMWORD PTR [rax]
vpmovzxbw ymm0,XMMWORD PTR [rax]
vpmovzxbq ymm0,DWORD PTR [rax]
vpmovzxbd xmm0,DWORD PTR [rax]
vpmovdb XMMWORD PTR [rax],zmm0
vpmovqb QWORD PTR [rax],zmm0
vmaskmovps ymm0,ymm1,YMMWORD PTR [rax]
vmaskmovpd XMMWORD PTR [rax],xmm1,xmm0
vpmaskmovd xmm0,xmm1,XMMWORD PTR [rax]
vlddqu ymm0,YMMWORD PTR [rax]
vmovntdqa ymm0,YMMWORD PTR [rax]
vmovntps YMMWORD PTR [rax],ymm0
kmovw k1,WORD PTR [rax]
kmovq k1,QWORD PTR [rax]
kmovb BYTE PTR [rax],k1
kmovd k1,DWORD PTR [rax]
vpcmpeqb k1,zmm0,ZMMWORD PTR [rax]
vpcmpeqd k1,zmm0,DWORD BCST [rax]
vfpclassps k1,DWORD BCST [rax],1
vfpclassps k1,ZMMWORD PTR [rax],1
vfpclasspd k1,YMMWORD PTR [rax],1
vfpclasssd k1,QWORD PTR [rax],1
vpermq ymm0,YMMWORD PTR [rax],1
vpshufd xmm0,XMMWORD PTR [rax],1
vaesenc xmm0,xmm1,XMMWORD PTR [rax]
vpclmulqdq xmm0,xmm1,XMMWORD PTR [rax],1
vroundsd xmm0,xmm1,QWORD PTR [rax],1
vsqrtsd xmm0,xmm1,QWORD PTR [rax]
vmovsd QWORD PTR [rax],xmm0
vmovss xmm0,DWORD PTR [rax]
vmovhps xmm0,xmm1,QWORD PTR [rax]
vmovlpd QWORD PTR [rax],xmm0
vpsllw ymm0,ymm1,XMMWORD PTR [rax]
vpsrad zmm0,zmm1,XMMWORD PTR [rax]
vpsrld zmm0,DWORD BCST [rax],3
vpsllq zmm0,ZMMWORD PTR [rax],3
vcompresspd ZMMWORD PTR [rax]{k1},zmm0
vexpandps zmm0{k1},ZMMWORD PTR [rax]
vpexpandb zmm0{k1},ZMMWORD PTR [rax]
vgetexpsd xmm0,xmm1,QWORD PTR [rax]
vrcp14ss xmm0,xmm1,DWORD PTR [rax]
vcvtusi2sd xmm0,xmm1,DWORD PTR [rax]
vcvtudq2pd zmm0,YMMWORD PTR [rax]
vcvtudq2pd zmm0,DWORD BCST [rax]
vcvtqq2ps ymm0,QWORD BCST [rax]
vcvtpd2ps ymm0,QWORD BCST [rax]
vcvtpd2ps xmm0,QWORD BCST [rax]
vpdpbusd zmm0,zmm1,DWORD BCST [rax]
vpermi2d zmm0,zmm1,ZMMWORD PTR [rax+0x40]
vpternlogd zmm0,zmm1,DWORD BCST [rax],0xff
vdpbf16ps zmm0,zmm1,DWORD BCST [rax]
vcvtne2ps2bf16 zmm0,zmm1,DWORD BCST [rax]
vcvtneps2bf16 ymm0,DWORD BCST [rax]
vpbroadcastmb2q zmm0,k1
vgf2p8affineqb zmm0,zmm1,QWORD BCST [rax],1
vpopcntb zmm0,ZMMWORD PTR [rax]
vpshldvd zmm0,zmm1,DWORD BCST [rax]
vpmultishiftqb zmm0,zmm1,QWORD BCST [rax]
vcvtph2ps zmm0,YMMWORD PTR [rax]
vpmovsxwq zmm0,XMMWORD PTR [rax]
vpmovzxwq xmm0,DWORD PTR [rax]
vpmovzxbq xmm0,WORD PTR [rax]
vmovdqu8 zmm0{k1},ZMMWORD PTR [rax]
vmovdqa32 ymm0{k1}{z},YMMWORD PTR [rax]
vmovups XMMWORD PTR [rax],xmm0
vpmovm2d zmm0,k1
vpblendmd zmm0,zmm1,DWORD BCST [rax]
vmovddup xmm0,QWORD PTR [rax]
vmovddup ymm0,YMMWORD PTR [rax]
vpbroadcastb xmm0,BYTE PTR [rax]
vpbroadcastw xmm0,WORD PTR [rax]
vptestmd k1,zmm0,DWORD BCST [rax]
vcvttpd2dq xmm0,QWORD BCST [rax]
vcvttps2uqq zmm0,DWORD BCST [rax]
vcvttps2qq zmm0,YMMWORD PTR [rax]
vrangesd xmm0,xmm1,QWORD PTR [rax],1
vscalefsd xmm0,xmm1,QWORD PTR [rax]
vreducess xmm0,xmm1,DWORD PTR [rax],1
v4fmaddps zmm0,zmm1,XMMWORD PTR [rax]
vp4dpwssd zmm0,zmm4,XMMWORD PTR [rax]
vcvtpd2ps xmm0,QWORD BCST [rax]{1to2}
vcvtpd2ps xmm0,QWORD BCST [rax]{1to4}
vcvtpd2ps ymm0,QWORD BCST [rax]{1to8}
vfpclasspd k1,QWORD BCST [rax]{1to2},1
vfpclasspd k1,QWORD BCST [rax]{1to4},1
vcvtph2ps zmm0, YMMWORD PTR [rax]
vcvtps2ph YMMWORD PTR [rax],zmm0,1
vcvtqq2ps xmm0,QWORD BCST [rax]{1to2}
vcvtdq2pd xmm0,DWORD BCST [rax]{1to2}
vcvtdq2pd zmm0,DWORD BCST [rax]{1to8}
vcvtps2pd xmm0,DWORD BCST [rax]{1to2}
vpgatherqd ymm0{k1},DWORD PTR [rax+zmm1*4]
vgatherdpd zmm0{k1},QWORD PTR [rax+ymm1*8]
vmovdqu xmm0, [rax]
vlddqu xmm0,[rax]
vcmpps k1,zmm0,DWORD BCST [rax],1
vcmpeqpd k1,xmm0,QWORD BCST [rax]
vpcmpub k1,zmm0,ZMMWORD PTR [rax],1
vpcmpd k1,zmm0,DWORD BCST [rax],1
vpcmpd k1,xmm0,DWORD BCST [rax],6
vfmadd231ph zmm0,zmm1,WORD BCST [rax]
vaddsh xmm0,xmm1,WORD PTR [rax]
vpbroadcastq xmm0,QWORD PTR [rax]
vzeroupper
vpermilps xmm0, DWORD BCST [rax], 1
vcvtpd2ps xmm0,XMMWORD PTR [rax]
vcvtpd2ps xmm0,YMMWORD PTR [rax]
vcvtpd2ps ymm0,ZMMWORD PTR [rax]
vcvtpd2ps xmm16,XMMWORD PTR [rax]
vcvtqq2ps xmm0,XMMWORD PTR [rax]
vcvtqq2ps ymm0,ZMMWORD PTR [rax]
vcvtneps2bf16 xmm0,XMMWORD PTR [rax]
vcvtneps2bf16 ymm0,ZMMWORD PTR [rax]
vcvtneps2bf16 xmm0,YMMWORD PTR [rax]
vfpclassps k1,XMMWORD PTR [rax],1
vfpclasssd k1,QWORD PTR [rax],1
vcvtsi2sd xmm16,xmm1,DWORD PTR [rax]
vcvtsi2sd xmm16,xmm1,QWORD PTR [rax]
vcvtsi2sd xmm0,xmm1,eax
vcvtsi2sd xmm0,xmm1,rax
vcvtusi2ss xmm0,xmm1,QWORD PTR [rax]
vcvtps2ph QWORD PTR [rax],xmm0,1
vcvttpd2udq xmm0,YMMWORD PTR [rax]
vcvtpd2udq xmm0,XMMWORD PTR [rax]
vcvtuqq2ps xmm0,YMMWORD PTR [rax]
pclmulqdq xmm0,xmm1,0x11
pclmulqdq xmm0,xmm1,0x5
vpclmulqdq ymm0,ymm1,ymm2,0x10
cvtsi2sd xmm0,DWORD PTR [rax]
ret
`

// asBuild assembles src with gas (binutils, as the reference objdump)
// into an object file in dir.
func asBuild(t *testing.T, dir, name, src string) string {
	t.Helper()
	needTool(t, "as")
	s, o := filepath.Join(dir, name+".s"), filepath.Join(dir, name+".o")
	if err := os.WriteFile(s, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("as", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as %s: %v\n%s", s, err, out)
	}
	return o
}

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
		asBuild(t, dir, "vector", vectorMemSource),
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
			if dec.Lacks != "" && strings.HasSuffix(p, "vector.o") {
				// The vector fixture checks the spelling of Zydis's
				// operand model; Capstone 4 decodes some of its
				// AVX-512 forms wrongly (vpmovm2d's registers,
				// vpscatterdd's index), which its libc run measures.
				continue
			}
			by, n := compareATT(t, p, dec)
			var classes []string
			for c := range by {
				classes = append(classes, c)
			}
			sort.Strings(classes)
			allowed := map[string]int{}
			differ := 0
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
				differ += bad
			}
			t.Logf("%s %s: %d instructions, %d differ from objdump -d; differences allowed with a reason (Capstone 4 only): %v", filepath.Base(p), dec.Name, n, differ, allowed)
		}
	}
}

// TestDisassembleIntelMatchesObjdump: Intel syntax against objdump -M
// intel the same way (Zydis), on the same fixtures, the vector memory
// operand fixture, libc and libm: no instruction may differ (memory
// operand sizes come from Zydis's operand model).
func TestDisassembleIntelMatchesObjdump(t *testing.T) {
	needTool(t, "objdump")
	dir := t.TempDir()
	files := []string{
		gccBuild(t, dir, "spell64", spell64Source, "-O2", "-mavx512bw"),
		gccBuild(t, dir, "spell32", spell32Source, "-O2", "-m32"),
		asBuild(t, dir, "vector", vectorMemSource),
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
		bad := map[string]int{}
		differ := 0
		for a, o := range ref {
			o = canonObjdump(o)
			if got[a] == o {
				continue
			}
			differ++
			c := attClass(strings.Fields(o + " ?")[0])
			if bad[c]++; bad[c] <= 5 {
				t.Errorf("%s %s intel: class %s: %#x objdump %q, ours %q", filepath.Base(p), dec.Name, c, a, o, got[a])
			}
		}
		for c, n := range bad {
			t.Errorf("%s intel: class %s: %d instructions differ from objdump -M intel", filepath.Base(p), c, n)
		}
		t.Logf("%s %s intel: %d instructions, %d differ from objdump -d -M intel", filepath.Base(p), dec.Name, len(ref), differ)
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
		{64, "c5fd5a00", "vcvtpd2ps (%rax), %xmm0", "vcvtpd2psy (%rax),%xmm0"},
		{64, "62f1fd385a00", "vcvtpd2ps (%rax){1to4}, %xmm0", "vcvtpd2ps (%rax){1to4},%xmm0"},
		{64, "c4e1f32a00", "vcvtsi2sd (%rax), %xmm1, %xmm0", "vcvtsi2sdq (%rax),%xmm1,%xmm0"},
		{64, "c4e371440001", "vpclmulqdq $0x01, (%rax), %xmm1, %xmm0", "vpclmulhqlqdq (%rax),%xmm1,%xmm0"},
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
		{64, "c5fe6f4e20", "vmovdqu ymm1, ymmword ptr [rsi+0x20]", "vmovdqu ymm1,YMMWORD PTR [rsi+0x20]"},
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
		{64, "c4e2d1a94918", "vfmadd213sd xmm1, xmm5, qword ptr [rcx+0x18]", "vfmadd213sd xmm1,xmm5,QWORD PTR [rcx+0x18]"},
		{64, "62f17458584010", "vaddps zmm0, zmm1, dword ptr [rax+0x40]{1to16}", "vaddps zmm0,zmm1,DWORD BCST [rax+0x40]"},
		{64, "62f1fd385a00", "vcvtpd2ps xmm0, qword ptr [rax]{1to4}", "vcvtpd2ps xmm0,QWORD BCST [rax]{1to4}"},
		{64, "62f37d58660801", "vfpclassps k1, dword ptr [rax]{1to16}, 0x01", "vfpclassps k1,DWORD BCST [rax]{1to16},0x1"},
		{64, "c5fff000", "vlddqu ymm0, ymmword ptr [rax]", "vlddqu ymm0,[rax]"},
		{64, "c4e371440001", "vpclmulqdq xmm0, xmm1, xmmword ptr [rax], 0x01", "vpclmulhqlqdq xmm0,xmm1,XMMWORD PTR [rax]"},
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

// TestZydisIntelMemSizes: Zydis's Intel text of each instruction, with
// the memory operand sizes intelMemSizes writes from Zydis's operand
// model, spelled by gnuIntel, is objdump -M intel's (objdump 2.40's text
// for the same bytes, written down): a scalar FMA operand, vstmxcsr, a
// segment-prefixed operand, a broadcast, lea's address (no size).
func TestZydisIntelMemSizes(t *testing.T) {
	z, err := loadZydis()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Zydis: %v", err)
		}
		t.Skipf("Zydis not loaded: %v", err)
	}
	for _, c := range []struct{ hex, want string }{
		{"c4e2d1a94918", "vfmadd213sd xmm1,xmm5,QWORD PTR [rcx+0x18]"},
		{"c5f8ae5c2404", "vstmxcsr DWORD PTR [rsp+0x4]"},
		{"64c5fa6f042528000000", "vmovdqu xmm0,XMMWORD PTR fs:0x28"},
		{"62f17458584010", "vaddps zmm0,zmm1,DWORD BCST [rax+0x40]"},
		{"62f2fd48a80424", "vfmadd213pd zmm0,zmm0,ZMMWORD PTR [rsp]"},
		{"c4e26d900488", "vpgatherdd ymm0,DWORD PTR [rax+ymm1*4],ymm2"},
		{"488d0424", "lea rax,[rsp]"},
	} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := z.decodeX86(64, true, b, 0x1000, 1)
		if len(in) != 1 || in[0].size != len(b) {
			t.Errorf("%s: Zydis decoded %v", c.hex, in)
			continue
		}
		if got := gnuIntel(in[0].text, b, 64); got != c.want {
			t.Errorf("%s: Zydis %q, gnuIntel %q, want %q", c.hex, in[0].text, got, c.want)
		}
	}
}
