package bin

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// This file holds the one place that makes an x86 instruction's AT&T text
// spelled as GNU objdump (binutils 2.40, opcodes/i386-dis.c) spells it,
// whichever decoder produced the text (x86asm's GNU syntax, Zydis's AT&T
// formatter or Capstone's): gnuATT rewrites the text, reading the
// instruction's bytes where the spelling depends on the encoding (an
// explicit zero displacement, a SIB byte without an index, unused
// prefixes). Every rule is a row of a table or a small function named
// after the objdump behaviour it reproduces.

// x86Encoding is what gnuATT needs to know of an instruction's encoding:
// its legacy prefix bytes in order, the opcode bytes, and the ModRM, SIB
// and displacement facts of its memory operand (Intel SDM vol. 2, 2.1).
type x86Encoding struct {
	prefixes []byte
	rex      byte
	vex      bool // VEX, EVEX or XOP encoded
	// opcode is the opcode bytes after the prefixes (0f, 0f 38 and
	// 0f 3a escapes included; for VEX/EVEX the opcode byte alone).
	opcode []byte
	// modrm says a ModRM byte was located (hasModRM); mod and rm are its
	// fields.
	hasModRM bool
	modrm    byte
	mod, rm  byte
	// sib says a SIB byte follows ModRM; sibNoIndex that its index field
	// is 100 with no REX.X/VEX.X extension (no index register); sibBase
	// is its base field (3 bits), scale its scale field (2 bits).
	sib        bool
	sibNoIndex bool
	sibBase    byte
	scale      byte
	// disp says a displacement is encoded (disp8 or disp32), which
	// objdump prints even when it is zero ("0x0(%rax)").
	disp bool
	// addr16 says the memory operand uses 16-bit addressing (67 prefix
	// in 32-bit mode), which these rules leave alone.
	addr16 bool
	// addr32 says a 67 prefix selects 32-bit addressing in 64-bit mode.
	addr32 bool
	// dispAt is the offset in the instruction of its displacement (0
	// when it has none).
	dispAt int
}

// mandatory66 reports whether the instruction's 66 prefix selects the
// instruction rather than its operand size (Intel SDM vol. 2, 2.1.2
// mandatory prefixes) for an instruction whose text shows no %xmm
// register, or that i386-dis.c looks up in a table indexed by the prefix
// (which marks the 66 used even where REX.W overrides its operand size):
// every legacy-encoded 0f 38 and 0f 3a opcode (movbe included: "movbe
// (%rax),%rax" for 66 48 0f 38 f0 00), 0f ae /6 /7 (clwb, clflushopt,
// tpause) and 0f c7 /6 (vmclear, rdrand) and /7 register (rdseed).
// objdump prints such a 66 as part of the instruction ("adcx
// %ecx,%eax", "invpcid (%rax),%rcx"), not as "data16"; a second 66 is
// data16. An f2 or f3 prefix takes precedence (adox, crc32), so the 66
// is then not the mandatory one.
func (e x86Encoding) mandatory66() bool {
	if e.vex || !hasPrefix(e.prefixes, 0x66) || hasPrefix(e.prefixes, 0xf2) || hasPrefix(e.prefixes, 0xf3) {
		return false
	}
	op := e.opcode
	switch {
	case len(op) == 3 && op[0] == 0x0f && (op[1] == 0x38 || op[1] == 0x3a):
		return true
	case len(op) == 2 && op[0] == 0x0f && op[1] == 0xae && e.hasModRM:
		reg := e.modrm >> 3 & 7
		return reg == 6 || reg == 7 && e.mod != 3
	case len(op) == 2 && op[0] == 0x0f && op[1] == 0xc7 && e.hasModRM:
		reg := e.modrm >> 3 & 7
		return reg == 6 || reg == 7 && e.mod == 3
	}
	return false
}

// absolute reports whether the memory operand is an absolute address,
// a displacement with no base and no index: ModRM mod 00 with a SIB byte
// whose base is 101 and which has no index, or (in 32-bit mode, where it
// is not RIP-relative) mod 00 r/m 101.
func (e x86Encoding) absolute(mode int) bool {
	if !e.hasModRM || e.mod != 0 || e.addr16 {
		return false
	}
	if e.sib {
		return e.sibBase == 5 && e.sibNoIndex
	}
	return e.rm == 5 && mode == 32
}

// legacyPrefix reports whether b is one of the eleven x86 legacy prefixes.
func legacyPrefix(b byte) bool {
	switch b {
	case 0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65:
		return true
	}
	return false
}

// x86Encode locates the parts of the instruction at the start of code in
// mode 32 or 64. The ModRM byte is the byte after the opcode; callers use
// the ModRM facts only for an instruction whose text shows a memory
// operand that is not implicit (string instructions, xlat) and not a
// moffs one (a0-a3), the only memory operands without a ModRM byte.
func x86Encode(code []byte, mode int) x86Encoding {
	var e x86Encoding
	i := 0
	for i < len(code) && i < maxInsnLen && legacyPrefix(code[i]) {
		e.prefixes = append(e.prefixes, code[i])
		i++
	}
	for _, p := range e.prefixes {
		if p == 0x67 {
			e.addr16, e.addr32 = mode == 32, mode == 64
		}
	}
	if mode == 64 && i < len(code) && code[i]&0xf0 == 0x40 {
		e.rex = code[i]
		i++
	}
	if i >= len(code) {
		return e
	}
	x := e.rex&0x02 != 0
	pos := -1
	b := code[i]
	vexOK := i+1 < len(code) && (mode == 64 || code[i+1]&0xc0 == 0xc0)
	switch {
	case b == 0xc5 && vexOK && i+3 < len(code):
		e.vex, e.opcode, pos = true, code[i+2:i+3], i+3
	case b == 0xc4 && vexOK && i+4 < len(code):
		e.vex, e.opcode, pos = true, code[i+3:i+4], i+4
		x = code[i+1]&0x40 == 0
	case b == 0x62 && vexOK && i+5 < len(code):
		e.vex, e.opcode, pos = true, code[i+4:i+5], i+5
		x = code[i+1]&0x40 == 0
	case b == 0x8f && i+4 < len(code) && code[i+1]&0x1f >= 8:
		e.vex, e.opcode, pos = true, code[i+3:i+4], i+4
		x = code[i+1]&0x40 == 0
	case b == 0x0f && i+1 < len(code) && (code[i+1] == 0x38 || code[i+1] == 0x3a):
		if i+2 < len(code) {
			e.opcode, pos = code[i:i+3], i+3
		}
	case b == 0x0f && i+1 < len(code):
		e.opcode, pos = code[i:i+2], i+2
	case b != 0x0f:
		e.opcode, pos = code[i:i+1], i+1
	}
	if pos < 0 || pos >= len(code) {
		return e
	}
	m := code[pos]
	e.hasModRM, e.modrm, e.mod, e.rm = true, m, m>>6, m&7
	if e.mod == 3 {
		return e
	}
	if e.rm == 4 && !e.addr16 {
		if pos+1 >= len(code) {
			e.hasModRM = false
			return e
		}
		s := code[pos+1]
		e.sib, e.scale, e.sibBase = true, s>>6, s&7
		e.sibNoIndex = (s>>3)&7 == 4 && !x
	}
	e.disp = e.mod == 1 || e.mod == 2 || e.mod == 0 && e.rm == 5 || e.sib && e.mod == 0 && e.sibBase == 5
	if e.addr16 {
		e.disp = e.mod == 1 || e.mod == 2 || e.mod == 0 && e.rm == 6
	}
	if e.disp {
		e.dispAt = pos + 1
		if e.sib {
			e.dispAt++
		}
	}
	return e
}

// attRenames maps a decoder's mnemonic to objdump's AT&T one where they
// differ by name alone (i386-dis.c's AT&T names: the sign extensions of
// the accumulator, movslq, leave and the near branches without their
// operand-size suffix).
var attRenames = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"movsxd":  "movslq",
		"cdqe":    "cltq",
		"cqo":     "cqto",
		"cdq":     "cltd",
		"cwde":    "cwtl",
		"cbw":     "cbtw",
		"cwd":     "cwtd",
		"leaveq":  "leave",
		"leavel":  "leave",
		"xbeginq": "xbegin",
		"xbeginl": "xbegin",
		"callq":   "call",
		"jmpq":    "jmp",
		"retq":    "ret",
		"ljmpq":   "ljmp",
		"lcallq":  "lcall",
	}
})

// attSuffixed lists the mnemonics decoders spell with an operand-size
// suffix (b, w, l, q) that objdump omits when a general register operand
// gives the size: the BMI and BMI2 instructions and the conversions from
// a general register (cvtsi2sd %rdi,%xmm0, cvtsi2sdq (%rax),%xmm0).
var attSuffixed = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"andn": true, "bextr": true, "blsi": true, "blsmsk": true, "blsr": true,
		"bzhi": true, "mulx": true, "pdep": true, "pext": true, "rorx": true,
		"sarx": true, "shlx": true, "shrx": true,
		"cvtsi2sd": true, "cvtsi2ss": true, "vcvtsi2sd": true, "vcvtsi2ss": true,
		"vcvtusi2sd": true, "vcvtusi2ss": true,
	}
})

// attRepNames are the names objdump gives f3 and f2 before ret, cmps and
// scas, which decoders may print as rep, repe or repne.
var attRepNames = sync.OnceValue(func() map[string]string {
	return map[string]string{"rep": "repz", "repe": "repz", "repne": "repnz", "repn": "repnz"}
})

// attSegments are the segment registers whose override prefix has no
// effect in 64-bit mode: objdump prints them as prefix names ("cs nopw")
// rather than inside the memory operand.
var attSegments = sync.OnceValue(func() map[string]byte {
	return map[string]byte{"cs": 0x2e, "ds": 0x3e, "es": 0x26, "ss": 0x36}
})

// attPrefixNames are the prefix words a decoder may print before the
// mnemonic that gnuATT recomputes from the bytes.
var attPrefixNames = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"data16": true, "data32": true, "cs": true, "ds": true, "es": true, "ss": true, "notrack": true}
})

// simdCmpNames are the comparison predicates objdump folds into the
// mnemonic of vpcmp[u]{b,w,d,q} (VPCMP_Fixup: all but 3 and 7) and of
// the SSE/AVX cmp{ps,pd,ss,sd} (CMP_Fixup: 0-7 for SSE, 0-31 for VEX).
var simdCmpNames = [...]string{
	"eq", "lt", "le", "unord", "neq", "nlt", "nle", "ord",
	"eq_uq", "nge", "ngt", "false", "neq_oq", "ge", "gt", "true",
	"eq_os", "lt_oq", "le_oq", "unord_s", "neq_us", "nlt_uq", "nle_uq", "ord_s",
	"eq_us", "nge_uq", "ngt_uq", "false_os", "neq_os", "ge_oq", "gt_oq", "true_us",
}

var (
	attHexRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`0x[0-9a-fA-F]+`) })
	attZerosRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`0x0+([0-9a-f])`) })
	attMemRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(%[a-z]s:)?(-?0x[0-9a-f]+|-?[0-9]+)?\(([^()]*)\)`) })
	attNegImmRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$-0x([0-9a-f]+)`) })
	attVPCmpRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(vpcmpu?)([bwdq])$`) })
	attCmpRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(v?cmp)(ps|pd|ss|sd|ph|sh)$`) })
	attDecImmRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$-?[0-9]+(,|$)`) })
)

// hasDecImm reports whether text holds a match of attDecImmRE, a decimal
// immediate ("$3", "$-1") ending an operand: most texts hold none, and
// the scan is cheaper than the regular expression's.
func hasDecImm(text string) bool {
	for i := 0; i < len(text); i++ {
		if text[i] != '$' {
			continue
		}
		j := i + 1
		if j < len(text) && text[j] == '-' {
			j++
		}
		k := j
		for k < len(text) && text[k] >= '0' && text[k] <= '9' {
			k++
		}
		if k > j && (k == len(text) || text[k] == ',') {
			return true
		}
	}
	return false
}

// decImmToHex spells an attDecImmRE match in hex, as objdump does.
func decImmToHex(m string) string {
	v, err := strconv.ParseInt(strings.TrimRight(m[1:], ","), 10, 64)
	if err != nil {
		return m
	}
	h := "$0x" + strconv.FormatUint(uint64(v), 16)
	if v < 0 {
		h = "$-0x" + strconv.FormatUint(uint64(-v), 16)
	}
	if strings.HasSuffix(m, ",") {
		h += ","
	}
	return h
}

// gnuATT returns text (an AT&T rendering of the instruction whose bytes
// are code, in mode 32 or 64) spelled as objdump -d spells it. Unknown
// shapes are returned unchanged.
func gnuATT(text string, code []byte, mode int) string {
	// Zydis prints hex digits in upper case and Zydis and Capstone
	// separate operands with ", ": objdump uses lower case and ",".
	text = attCommon(text)
	words := strings.Fields(text)
	if len(words) == 0 {
		return text
	}
	enc := x86Encode(code, mode)
	// Capstone prints small immediates in decimal ("$3"); objdump in hex.
	if hasDecImm(text) {
		text = attDecImmRE().ReplaceAllStringFunc(text, decImmToHex)
	}
	text = attRIPRelative(text, code, enc, mode)
	words = strings.Fields(text)
	// Split the prefix words from the mnemonic and operands.
	var pre []string
	k := 0
	for k < len(words)-1 && (attPrefixNames()[words[k]] || isPrefixWord(words[k])) {
		pre = append(pre, words[k])
		k++
	}
	mn := words[k]
	ops := strings.Join(words[k+1:], " ")
	// EVEX masking: objdump writes "%zmm1{%k1}{z}" with no blank.
	ops = strings.ReplaceAll(ops, " {", "{")

	// 66 90 is xchg %ax,%ax to objdump (some decoders: "data16 nop").
	if len(enc.opcode) == 1 && enc.opcode[0] == 0x90 && enc.rex == 0 && hasPrefix(enc.prefixes, 0x66) && mn == "nop" {
		mn, ops = "xchg", "%ax,%ax"
	}
	if r, ok := attRenames()[mn]; ok {
		mn = r
	}
	if base := strings.TrimRight(mn, "bwlq"); base != mn && len(mn)-len(base) == 1 && attSuffixed()[base] && hasGPR(ops) {
		mn = base
	}
	if strings.HasPrefix(mn, "crc32") && len(mn) == 6 && strings.HasPrefix(ops, "%") {
		// crc32 of a register: objdump prints no size suffix (the
		// register gives it); of memory it does ("crc32b (%rax),%eax").
		mn = "crc32"
	}
	mn, ops = attPushPop(mn, ops, mode)
	mn, ops = attPredicate(mn, ops)
	mn = attMovabs(mn, ops, enc, mode)

	// Memory operand: segment, displacement, index and scale as
	// i386-dis.c OP_E_memory prints them.
	var segs []byte
	if enc.hasModRM && enc.mod != 3 && !enc.addr16 && !implicitMem(enc) && strings.Contains(ops, "(") {
		ops = attMemOperands(ops, func(seg, disp, inner string) string {
			if mode == 64 && seg != "" {
				if p, ok := attSegments()[seg[1:3]]; ok {
					segs = append(segs, p)
					seg = ""
				}
			}
			return seg + attMem(disp, inner, enc, mode)
		})
	}
	if enc.absolute(mode) && !implicitMem(enc) && !strings.Contains(ops, "(") && strings.Contains(ops, "-0x") {
		ops = attAbsMem(ops, mode == 32 || enc.addr32)
	}
	if strings.Contains(ops, "$-") {
		ops = attNegImms(mn, ops, mode, enc)
	}
	// A direct branch's target: objdump prints the address in hex
	// without 0x (and its symbol, which is Target/TargetSymbol here).
	if attDirectBranch(mn) && strings.HasPrefix(ops, "0x") && !strings.ContainsAny(ops, ",(") {
		ops = ops[2:]
	}
	ops = attX87(mn, ops, enc)
	if enc.vex {
		mn = attVecSuffix(mn, ops, enc.hasModRM && enc.mod != 3, code, mode)
	}
	mn, ops = pclmulAlias(mn, ops, false)
	pre = attPrefixes(pre, mn, ops, enc, mode, segs)
	out := append(pre, mn)
	if ops != "" {
		out = append(out, ops)
	}
	return strings.Join(out, " ")
}

// isPrefixWord reports whether w is a prefix word a decoder prints
// before the mnemonic that gnuATT keeps as it is.
func isPrefixWord(w string) bool {
	switch w {
	case "lock", "rep", "repz", "repe", "repnz", "repne", "repn", "bnd", "xacquire", "xrelease", "fs", "gs", "addr32", "addr16", "rex", "rex.W":
		return true
	}
	return strings.HasPrefix(w, "rex.")
}

func hasPrefix(ps []byte, p byte) bool {
	for _, b := range ps {
		if b == p {
			return true
		}
	}
	return false
}

// gprRE matches a general register operand.
var gprRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`%(r[0-9]+[dwb]?|[re]?[abcd]x|[re]?[sd]il?|[re]?[sb]pl?|[abcd][lh])\b`)
})

// hasGPR reports whether operand text names a general register outside
// a memory operand.
func hasGPR(ops string) bool {
	return gprRE().MatchString(attMemRE().ReplaceAllString(ops, ""))
}

// attPushPop drops the suffix of push and pop of a memory operand or a
// register when the size is the mode's default (objdump: "push
// 0x10(%rip)", "push $0x0"), as i386-dis.c prints it only for a
// non-default operand size.
func attPushPop(mn, ops string, mode int) (string, string) {
	def := "q"
	if mode == 32 {
		def = "l"
	}
	for _, b := range [...]string{"push", "pop"} {
		if mn == b+def {
			return b, ops
		}
	}
	return mn, ops
}

// attPredicate folds the comparison immediate of vpcmp[u]{b,w,d,q} and
// cmp{ps,pd,ss,sd} into the mnemonic as objdump does ("vpcmpub $0x1,..."
// is "vpcmpltub ...", "cmpss $0x2,..." is "cmpless ...").
func attPredicate(mn, ops string) (string, string) {
	if !strings.Contains(mn, "cmp") {
		return mn, ops
	}
	imm, rest, ok := strings.Cut(ops, ",")
	if !ok || !strings.HasPrefix(imm, "$0x") {
		return mn, ops
	}
	v, err := strconv.ParseUint(imm[3:], 16, 8)
	if err != nil {
		return mn, ops
	}
	if s := attVPCmpRE().FindStringSubmatch(mn); s != nil {
		if v < 8 && v != 3 && v != 7 {
			u := ""
			p := s[1]
			if strings.HasSuffix(p, "u") {
				p, u = p[:len(p)-1], "u"
			}
			return p + simdCmpNames[v] + u + s[2], rest
		}
		return mn, ops
	}
	if s := attCmpRE().FindStringSubmatch(mn); s != nil {
		lim := uint64(8)
		if s[1] == "vcmp" {
			lim = 32
		}
		if v < lim {
			return s[1] + simdCmpNames[v] + s[2], rest
		}
	}
	return mn, ops
}

// attMovabs names mov with a 64-bit immediate (REX.W b8+r) and the
// moffs forms (a0-a3) in 64-bit mode "movabs", as objdump does.
func attMovabs(mn, ops string, enc x86Encoding, mode int) string {
	if mode != 64 || !strings.HasPrefix(mn, "mov") || len(enc.opcode) != 1 || enc.vex {
		return mn
	}
	switch op := enc.opcode[0]; {
	case op >= 0xb8 && op <= 0xbf && enc.rex&0x08 != 0, op >= 0xa0 && op <= 0xa3:
		return "movabs"
	}
	return mn
}

// implicitMem reports whether the instruction's memory operands are
// implicit (string instructions, xlat) or moffs, which have no ModRM.
func implicitMem(enc x86Encoding) bool {
	if len(enc.opcode) != 1 || enc.vex {
		return false
	}
	op := enc.opcode[0]
	return op >= 0xa0 && op <= 0xaf || op >= 0x6c && op <= 0x6f || op == 0xd7
}

// attMem is a memory operand's displacement and base,index,scale as
// objdump prints them: a displacement encoded as zero is "0x0", an index
// always has a scale (",1"), and a SIB byte without an index prints
// %riz (%eiz) unless the base is %rsp or %r12 with scale 1.
func attMem(disp, inner string, enc x86Encoding, mode int) string {
	parts := strings.Split(inner, ",")
	base, index, scale := parts[0], "", ""
	if len(parts) > 1 {
		index = parts[1]
	}
	if len(parts) > 2 {
		scale = parts[2]
	}
	if disp != "" && !strings.Contains(disp, "0x") {
		// Capstone prints small displacements in decimal.
		if v, err := strconv.ParseInt(disp, 10, 64); err == nil {
			disp = "0x" + strconv.FormatUint(uint64(v), 16)
			if v < 0 {
				disp = "-0x" + strconv.FormatUint(uint64(-v), 16)
			}
		}
	}
	if base == "%rip" || base == "%eip" || strings.Contains(index, "mm") {
		return disp + "(" + inner + ")"
	}
	if disp == "" && enc.disp {
		disp = "0x0"
	}
	if enc.sib && enc.sibNoIndex {
		if enc.scale != 0 || base != "" && enc.sibBase != 4 {
			index = "%riz"
			if mode == 32 || enc.addr32 {
				index = "%eiz"
			}
			scale = strconv.Itoa(1 << enc.scale)
		} else {
			index, scale = "", ""
		}
	}
	if index != "" && scale == "" {
		scale = "1"
	}
	switch {
	case base == "" && index == "":
		if !enc.absolute(mode) {
			return disp
		}
		return absDisp(disp, mode == 32 || enc.addr32)
	case index == "":
		return disp + "(" + base + ")"
	}
	return disp + "(" + base + "," + index + "," + scale + ")"
}

// absDisp is an absolute memory operand's displacement (no base, no
// index: "%fs:0xfffffffffffffff8") as objdump prints it, an unsigned
// address of the address size (32 bits when addr32, else 64), where a
// decoder prints a negative displacement ("%fs:-0x8").
func absDisp(disp string, addr32 bool) string {
	if !strings.HasPrefix(disp, "-0x") {
		return disp
	}
	v, err := strconv.ParseUint(disp[3:], 16, 64)
	if err != nil {
		return disp
	}
	a := -v
	if addr32 {
		a &= 0xffffffff
	}
	return "0x" + strconv.FormatUint(a, 16)
}

// attAbsMem spells the absolute memory operands of ops (a displacement
// alone, perhaps after a segment: "%fs:-0x8") with absDisp; immediates
// ("$-0x8") are left alone.
func attAbsMem(ops string, addr32 bool) string {
	parts := strings.Split(ops, ",")
	for i, p := range parts {
		seg := ""
		if len(p) > 4 && p[0] == '%' && p[3] == ':' {
			seg, p = p[:4], p[4:]
		}
		if strings.HasPrefix(p, "-0x") {
			parts[i] = seg + absDisp(p, addr32)
		}
	}
	return strings.Join(parts, ",")
}

// attOperandBits is the operand size in bits that objdump prints a
// sign-extended immediate in (as an unsigned number of that size): the
// size of the last general register operand, else the mnemonic's
// suffix, else the mode's stack width for push.
func attOperandBits(mn, ops string, mode int, enc x86Encoding) int {
	regs := gprRE().FindAllString(attMemRE().ReplaceAllString(ops, ""), -1)
	if len(regs) > 0 {
		return gprBits(regs[len(regs)-1])
	}
	if strings.HasPrefix(mn, "push") {
		if hasPrefix(enc.prefixes, 0x66) {
			return 16
		}
		return mode
	}
	switch mn[len(mn)-1] {
	case 'b':
		return 8
	case 'w':
		return 16
	case 'l':
		return 32
	case 'q':
		return 64
	}
	return mode
}

// gprBits is the width of a general register named as AT&T prints it.
func gprBits(r string) int {
	r = r[1:]
	switch {
	case strings.HasPrefix(r, "r") && (strings.HasSuffix(r, "d")):
		return 32
	case strings.HasPrefix(r, "r") && strings.HasSuffix(r, "w"):
		return 16
	case strings.HasPrefix(r, "r") && strings.HasSuffix(r, "b"), strings.HasSuffix(r, "l") && len(r) <= 4, len(r) == 2 && r[1] == 'h':
		return 8
	case strings.HasPrefix(r, "r"):
		return 64
	case strings.HasPrefix(r, "e"):
		return 32
	}
	return 16
}

// attDirectBranch reports whether mn takes a relative target.
func attDirectBranch(mn string) bool {
	switch mn {
	case "call", "jmp", "jrcxz", "jecxz", "jcxz", "xbegin", "loop", "loope", "loopne":
		return true
	}
	return strings.HasPrefix(mn, "j") && len(mn) <= 4
}

// attX87 spells the x87 stack top as objdump does: "%st(0)" as the
// register operand of a one-operand instruction (fld %st(0)) and of the
// st(i) operand of a two-operand one, which is the first operand for the
// d8, da, db and df opcodes (fadd %st(0),%st) and the second for dc and
// de (fadd %st,%st(0)).
func attX87(mn, ops string, enc x86Encoding) string {
	if !strings.HasPrefix(mn, "f") || len(enc.opcode) != 1 || enc.opcode[0] < 0xd8 || enc.opcode[0] > 0xdf || enc.mod != 3 {
		return ops
	}
	switch ops {
	case "%st":
		return "%st(0)"
	case "%st,%st":
		switch enc.opcode[0] {
		case 0xdc, 0xde:
			return "%st,%st(0)"
		}
		return "%st(0),%st"
	}
	return ops
}

// attPrefixes returns the prefix words objdump prints: a 66 prefix the
// instruction does not use is "data16" (each extra one), a cs, ds, es or
// ss override in 64-bit mode is its name ("cs nopw"), a 3e before an
// indirect jmp or call is "notrack"; the decoder's other prefix words
// (lock, rep, bnd) are kept after them.
func attPrefixes(pre []string, mn, ops string, enc x86Encoding, mode int, segs []byte) []string {
	var kept []string
	for _, w := range pre {
		if attPrefixNames()[w] {
			continue
		}
		// f3 and f2 before ret, cmps and scas are repz and repnz
		// (i386-dis.c names the prefix by the instruction).
		if r, ok := attRepNames()[w]; ok && (r == "repnz" || mn == "ret" || strings.HasPrefix(mn, "cmps") || strings.HasPrefix(mn, "scas")) {
			w = r
		}
		kept = append(kept, w)
	}
	n66 := 0
	for _, p := range enc.prefixes {
		if p == 0x66 {
			n66++
		}
	}
	uses66 := n66 > 0 && (attUses16(mn, ops) || !enc.vex && strings.Contains(ops, "%xmm") || enc.mandatory66())
	if mn == "xchg" && ops == "%ax,%ax" {
		uses66 = true
	}
	var out []string
	seen66 := 0
	for _, p := range enc.prefixes {
		switch p {
		case 0x66:
			seen66++
			if !(uses66 && seen66 == n66) {
				out = append(out, "data16")
			}
		case 0x2e, 0x3e, 0x26, 0x36:
			if mode != 64 && !hasPrefix(segs, p) && strings.Contains(ops, "(") {
				continue // the decoder printed it in the operand
			}
			switch {
			case p == 0x3e && (mn == "jmp" || mn == "call") && strings.Trim(ops, "0123456789abcdef") != "":
				out = append(out, "notrack")
			case p == 0x2e:
				out = append(out, "cs")
			case p == 0x3e:
				out = append(out, "ds")
			case p == 0x26:
				out = append(out, "es")
			default:
				out = append(out, "ss")
			}
		}
	}
	return append(out, kept...)
}

// attUses16 reports whether the instruction's text shows a 16-bit
// operand size (a w suffix or a 16-bit general register).
func attUses16(mn, ops string) bool {
	for _, r := range gprRE().FindAllString(attMemRE().ReplaceAllString(ops, ""), -1) {
		if gprBits(r) == 16 {
			return true
		}
	}
	if strings.HasPrefix(ops, "WORD PTR") || strings.Contains(ops, ",WORD PTR") {
		return true // Intel syntax
	}
	return mn == "cwtd" || mn == "cwd" || strings.HasSuffix(mn, "w") && !strings.HasPrefix(mn, "movz") && !strings.HasPrefix(mn, "movs")
}

// intelCC maps x86asm's Intel condition-code spellings to the ones
// objdump -M intel prints (the AT&T and Intel names of i386-dis.c agree:
// je, jne, jae, ja, jge, jg, ...), for jcc, setcc and cmovcc.
var intelCC = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"z": "e", "nz": "ne", "nb": "ae", "nbe": "a", "nae": "b", "na": "be",
		"nl": "ge", "nle": "g", "nge": "l", "ng": "le", "pe": "p", "po": "np",
		"c": "b", "nc": "ae", "e": "e",
	}
})

var (
	intelSizeRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(byte|word|dword|qword|tbyte|xmmword|ymmword|zmmword|fword|oword) ptr\b`)
	})
	intelMemRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]*)\]`) })
	intelNegRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|,)-0x([0-9a-f]+)$`) })
	intelPtrRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|,)ptr `) })
	intelAbsRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b([a-g]s):\[(-?0x[0-9a-f]+)\]`) })
	intelSizeUpRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[A-Z]+ PTR`) })
	intelDSRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[ ,])\[(0x[0-9a-f]+)\]`) })
	intelMoffsRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:[A-Z]+ PTR )?([a-g]s:)?\[(0x[0-9a-f]+)\]`) })
)

// gnuIntel returns an Intel-syntax text (x86asm's or an external
// decoder's) as objdump -M intel spells it where the difference is
// spelling: operands separated by "," alone, operand sizes in capitals
// ("QWORD PTR"), index*scale with the scale always written, an encoded
// zero displacement as "+0x0", objdump's condition-code names, direct
// branch targets without 0x, negative immediates as unsigned numbers of
// the operand size, and the prefixes gnuATT derives from the bytes.
// What still differs is listed in docs/bin.md.
func gnuIntel(text string, code []byte, mode int) string {
	text = attCommon(text)
	words := strings.Fields(text)
	if len(words) == 0 {
		return text
	}
	enc := x86Encode(code, mode)
	var pre []string
	k := 0
	for k < len(words)-1 && (attPrefixNames()[words[k]] || isPrefixWord(words[k])) {
		pre = append(pre, words[k])
		k++
	}
	mn := words[k]
	ops := strings.Join(words[k+1:], " ")
	ops = strings.ReplaceAll(ops, " {", "{")
	mn = attMovabs(mn, ops, enc, mode)
	mn, ops = intelPredicate(mn, ops)
	// x86asm names the SSE2 scalar compare cmpsd_xmm (cmpsd is the string
	// instruction) with its predicate as an immediate; objdump folds the
	// predicate into the mnemonic (cmpnlesd xmm2,xmm5).
	if mn == "cmpsd_xmm" {
		mn = "cmpsd"
		if i := strings.LastIndex(ops, ",0x"); i >= 0 {
			if v, err := strconv.ParseUint(ops[i+3:], 16, 8); err == nil && v < 8 {
				mn, ops = "cmp"+simdCmpNames[v]+"sd", ops[:i]
			}
		}
	}
	// The shift-by-one opcodes (d0, d1) print their count as "1".
	if len(enc.opcode) == 1 && (enc.opcode[0] == 0xd0 || enc.opcode[0] == 0xd1) && !enc.vex {
		ops = strings.TrimSuffix(ops, ",0x1") + ",1"
	}
	ops = intelSizeRE().ReplaceAllStringFunc(ops, func(m string) string { return strings.ToUpper(m) })
	ops = intelPtrRE().ReplaceAllString(ops, "$1")
	for _, p := range [...]string{"j", "set", "cmov"} {
		if cc, ok := strings.CutPrefix(mn, p); ok {
			if r, ok := intelCC()[cc]; ok {
				mn = p + r
			}
		}
	}
	if len(enc.opcode) == 1 && enc.opcode[0] == 0x90 && enc.rex == 0 && hasPrefix(enc.prefixes, 0x66) && mn == "nop" {
		mn, ops = "xchg", "ax,ax"
	}
	// x86asm writes the ModRM reg field of the multi-byte nop (0f 1f) as
	// a second operand; objdump does not.
	if mn == "nop" && len(enc.opcode) == 2 && enc.opcode[0] == 0x0f && enc.opcode[1] == 0x1f {
		if i := strings.LastIndex(ops, "],"); i >= 0 {
			ops = ops[:i+1]
		}
	}
	ops = intelRIPRelative(ops, code, enc, mode)
	ops = strings.Replace(ops, "far ptr ", "FWORD PTR ", 1)
	if len(enc.opcode) == 1 && !enc.vex && enc.opcode[0] >= 0xa0 && enc.opcode[0] <= 0xa3 {
		// moffs: objdump prints the address with its segment and no
		// size ("movabs eax,ds:0x1000", "mov eax,gs:0x14").
		ops = intelMoffsRE().ReplaceAllStringFunc(ops, func(m string) string {
			s := intelMoffsRE().FindStringSubmatch(m)
			if s[1] == "" {
				s[1] = "ds:"
			}
			return s[1] + s[2]
		})
	}
	if mode == 64 && mn == "push" && len(enc.opcode) == 1 && (enc.opcode[0] == 0x6a || enc.opcode[0] == 0x68) && !hasPrefix(enc.prefixes, 0x66) {
		// push imm8/imm32 pushes it sign-extended to 64 bits.
		var v int64
		if enc.opcode[0] == 0x6a && len(code) >= 2 {
			v = int64(int8(code[len(code)-1]))
		} else if len(code) >= 5 {
			b := code[len(code)-4:]
			v = int64(int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24))
		}
		ops = "0x" + strconv.FormatUint(uint64(v), 16)
	}
	var segs []byte
	if enc.hasModRM && enc.mod != 3 && !enc.addr16 && !implicitMem(enc) {
		ops = intelMemRE().ReplaceAllStringFunc(ops, func(m string) string {
			return "[" + intelMem(m[1:len(m)-1], enc) + "]"
		})
		// An absolute address with a segment: "fs:0x28".
		ops = intelAbsRE().ReplaceAllString(ops, "$1:$2")
		// ... and without one: objdump names ds ("ds:0x0").
		ops = intelDSRE().ReplaceAllString(ops, "${1}ds:$2")
		if mode == 64 {
			for name, p := range attSegments() {
				if hasPrefix(enc.prefixes, p) && !strings.Contains(ops, name+":") {
					segs = append(segs, p)
				}
			}
		}
	}
	if parts := strings.Split(ops, ","); len(parts) > 0 {
		last := parts[len(parts)-1]
		if m := intelNegRE().FindStringSubmatch("," + last); m != nil {
			if v, err := strconv.ParseUint(m[2], 16, 64); err == nil {
				bits := mode
				if regs := gprRE().FindAllString(intelAsATTRegs(ops), -1); len(regs) > 0 {
					bits = gprBits(regs[0])
				} else if sz := intelSizeRE().FindString(strings.ToLower(ops)); sz != "" {
					bits = map[string]int{"byte": 8, "word": 16, "dword": 32, "qword": 64}[strings.Fields(sz)[0]]
				}
				u := -v
				if bits > 0 && bits < 64 {
					u &= 1<<bits - 1
				}
				parts[len(parts)-1] = "0x" + strconv.FormatUint(u, 16)
				ops = strings.Join(parts, ",")
			}
		}
	}
	if attDirectBranch(mn) && strings.HasPrefix(ops, "0x") && !strings.ContainsAny(ops, ",[") {
		ops = ops[2:]
	}
	// The prefetch hints (0f 18, 0f 0d) name a byte.
	if len(enc.opcode) == 2 && enc.opcode[0] == 0x0f && (enc.opcode[1] == 0x18 || enc.opcode[1] == 0x0d) && !enc.vex {
		ops = intelSizeUpRE().ReplaceAllString(ops, "BYTE PTR")
	}
	ops = intelX87(mn, ops, enc)
	if enc.vex {
		ops = intelBroadcast(mn, ops)
		if mn == "vlddqu" {
			// objdump's vlddqu operand (M) has no size.
			ops = intelSizeUpRE().ReplaceAllString(ops, "")
			ops = strings.ReplaceAll(ops, ", ", ",")
		}
	}
	mn, ops = pclmulAlias(mn, ops, true)
	if m, o, ok := intelString(enc, mode); ok {
		mn, ops = m, o
	}
	if mn == "ret" && hasPrefix(enc.prefixes, 0xf3) && len(pre) == 0 {
		pre = []string{"repz"} // x86asm's Intel syntax drops it
	}
	// x86asm writes the implicit operands of fcompp and fucompp.
	if (mn == "fcompp" || mn == "fucompp") && ops == "st,st(1)" {
		ops = ""
	}
	pre = attPrefixes(pre, mn, intelAsATTRegs(ops), enc, mode, segs)
	out := append(pre, mn)
	if ops != "" {
		out = append(out, ops)
	}
	return strings.Join(out, " ")
}

// intelRegRE matches a register name in Intel operand text.
var intelRegRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(r[0-9]+[dwb]?|[re]?[abcd]x|[re]?[sd]il?|[re]?[sb]pl?|[abcd][lh]|[xyz]mm[0-9]+)\b`)
})

// intelAsATTRegs returns Intel operand text with its registers written
// with AT&T's % and without its memory operands, so gnuATT's register
// rules apply to it.
func intelAsATTRegs(ops string) string {
	ops = intelMemRE().ReplaceAllString(ops, "")
	return intelRegRE().ReplaceAllString(ops, "%$1")
}

// intelMem is an Intel memory operand's inside as objdump prints it:
// base+index*scale+disp with the scale always written (objdump's
// "rax+rax*1"), riz/eiz for a SIB byte without an index as in gnuATT,
// and an encoded zero displacement as "+0x0".
func intelMem(inner string, enc x86Encoding) string {
	if r, ok := strings.CutPrefix(inner, "rip-0x"); ok {
		// objdump -M intel adds a negative RIP displacement as its
		// 64-bit two's complement ("rip+0xfffffffffffff334").
		if v, err := strconv.ParseUint(r, 16, 64); err == nil {
			return "rip+0x" + strconv.FormatUint(-v, 16)
		}
	}
	if strings.Contains(inner, "rip") || strings.Contains(inner, "mm") {
		return inner
	}
	seg := ""
	if i := strings.Index(inner, ":"); i >= 0 {
		seg, inner = inner[:i+1], inner[i+1:]
	}
	var base, index, scale, disp string
	for _, t := range regexp.MustCompile(`[+-]?[^+-]+`).FindAllString(inner, -1) {
		sign := ""
		if t[0] == '+' || t[0] == '-' {
			sign, t = t[:1], t[1:]
		}
		switch {
		case strings.HasPrefix(t, "0x") || t[0] >= '0' && t[0] <= '9' && !strings.Contains(t, "*"):
			if sign == "+" {
				sign = ""
			}
			disp = sign + t
		case strings.Contains(t, "*"):
			a, b, _ := strings.Cut(t, "*")
			if a[0] >= '0' && a[0] <= '9' {
				a, b = b, a
			}
			index, scale = a, b
		case base == "" && index == "":
			base = t
		default:
			index = t
		}
	}
	if enc.sib && enc.sibNoIndex {
		if enc.scale != 0 || base != "" && enc.sibBase != 4 {
			index = "riz"
			if enc.addr32 || base != "" && base[0] == 'e' {
				index = "eiz"
			}
			scale = strconv.Itoa(1 << enc.scale)
		} else {
			index, scale = "", ""
		}
	}
	if index != "" && scale == "" {
		scale = "1"
	}
	if disp == "" && enc.disp {
		disp = "0x0"
	}
	out := base
	if index != "" {
		if out != "" {
			out += "+"
		}
		out += index + "*" + scale
	}
	if disp != "" {
		if out != "" && disp[0] != '-' {
			out += "+"
		}
		out += disp
	}
	return seg + out
}

// attRIPRelative rewrites a RIP-relative operand a decoder printed as the
// absolute address it refers to (Zydis does so for some EVEX
// instructions) as objdump's "disp(%rip)", the displacement read from
// the instruction's bytes.
func attRIPRelative(text string, code []byte, enc x86Encoding, mode int) string {
	if mode != 64 || !enc.hasModRM || enc.mod != 0 || enc.rm != 5 || enc.addr32 || enc.dispAt == 0 || enc.dispAt+4 > len(code) || strings.Contains(text, "(%rip)") {
		return text
	}
	d := int32(uint32(code[enc.dispAt]) | uint32(code[enc.dispAt+1])<<8 | uint32(code[enc.dispAt+2])<<16 | uint32(code[enc.dispAt+3])<<24)
	rip := "0x" + strconv.FormatInt(int64(d), 16) + "(%rip)"
	if d < 0 {
		rip = "-0x" + strconv.FormatInt(-int64(d), 16) + "(%rip)"
	}
	mn, ops, ok := strings.Cut(text, " ")
	if !ok {
		return text
	}
	parts := strings.Split(ops, ",")
	for i, p := range parts {
		q := strings.TrimLeft(p, "*")
		if strings.HasPrefix(q, "0x") && !strings.ContainsAny(q, "(%$") {
			parts[i] = p[:len(p)-len(q)] + rip
			return mn + " " + strings.Join(parts, ",")
		}
	}
	return text
}

// intelPredicate is attPredicate for Intel syntax, where the comparison
// immediate is the last operand ("vpcmpub k6,ymm28,ymm30,0x1" is objdump's
// "vpcmpltub k6,ymm28,ymm30").
func intelPredicate(mn, ops string) (string, string) {
	i := strings.LastIndex(ops, ",")
	if i < 0 || !strings.HasPrefix(ops[i+1:], "0x") {
		return mn, ops
	}
	m, rest := attPredicate(mn, "$"+ops[i+1:]+","+ops[:i])
	if m == mn {
		return mn, ops
	}
	return m, rest
}

// intelRIPRelative rewrites a RIP-relative memory operand a decoder
// printed as its absolute address ("[0x1a18e0]", Zydis) as objdump's
// "[rip+0x4b517]", the displacement read from the bytes.
func intelRIPRelative(ops string, code []byte, enc x86Encoding, mode int) string {
	if mode != 64 || !enc.hasModRM || enc.mod != 0 || enc.rm != 5 || enc.addr32 || enc.dispAt == 0 || enc.dispAt+4 > len(code) || strings.Contains(ops, "rip") {
		return ops
	}
	d := int32(uint32(code[enc.dispAt]) | uint32(code[enc.dispAt+1])<<8 | uint32(code[enc.dispAt+2])<<16 | uint32(code[enc.dispAt+3])<<24)
	i := strings.Index(ops, "[0x")
	j := strings.Index(ops, "]")
	if i < 0 || j < i {
		return ops
	}
	return ops[:i] + "[rip+0x" + strconv.FormatUint(uint64(int64(d)), 16) + "]" + ops[j+1:]
}

// intelX87 spells x87 register operands as objdump -M intel does: st(i)
// for a stack register, st for the stack top in a two-operand form (the
// first operand for the d8, da, db and df opcodes, the second for dc and
// de when both are the top), a one-operand instruction (fld, fstp, fxch,
// fucom, ffree) naming only its st(i), and none for the d9 e0-ff
// instructions whose operand is implicit (fchs, fabs, fld1, fxam).
func intelX87(mn, ops string, enc x86Encoding) string {
	if !strings.HasPrefix(mn, "f") || len(enc.opcode) != 1 || enc.opcode[0] < 0xd8 || enc.opcode[0] > 0xdf {
		return ops
	}
	if enc.mod != 3 {
		// A memory form names the memory operand alone; the 80-bit
		// loads and stores (db /5, db /7) are TBYTE.
		ops = strings.TrimSuffix(strings.TrimPrefix(ops, "st0,"), ",st0")
		if r := enc.modrm >> 3 & 7; enc.opcode[0] == 0xdb && (r == 5 || r == 7) && strings.HasPrefix(ops, "[") {
			ops = "TBYTE PTR " + ops
		}
		return ops
	}
	st := func(r string) string {
		if len(r) == 3 && strings.HasPrefix(r, "st") && r[2] >= '0' && r[2] <= '7' {
			return "st(" + r[2:] + ")"
		}
		return r
	}
	regs := strings.Split(ops, ",")
	switch {
	case enc.opcode[0] == 0xd9 && enc.modrm >= 0xe0:
		return ""
	case len(regs) == 1:
		return st(regs[0])
	case len(regs) == 2:
		switch mn {
		case "fld", "fst", "fstp", "fxch", "ffree", "fucom", "fucomp", "fcom", "fcomp":
			if regs[1] != "st0" {
				return st(regs[1])
			}
			return st(regs[0])
		}
		if regs[0] == "st0" && regs[1] == "st0" {
			if enc.opcode[0] == 0xdc || enc.opcode[0] == 0xde {
				return "st(0),st"
			}
			return "st,st(0)"
		}
		for i, r := range regs {
			if r == "st0" {
				regs[i] = "st"
			} else {
				regs[i] = st(r)
			}
		}
		return strings.Join(regs, ",")
	}
	return ops
}

// attNegImms writes each negative immediate of ops as objdump does: the
// unsigned number of the operand size (attOperandBits) with the same
// bits ("$-0x1" is "$0xffffffff" for a 32-bit operation).
func attNegImms(mn, ops string, mode int, enc x86Encoding) string {
	return attNegImmRE().ReplaceAllStringFunc(ops, func(m string) string {
		v, err := strconv.ParseUint(m[4:], 16, 64)
		if err != nil {
			return m
		}
		bits := attOperandBits(mn, ops, mode, enc)
		u := -v
		if bits < 64 {
			u &= 1<<bits - 1
		}
		return "$0x" + strconv.FormatUint(u, 16)
	})
}

// attCommon lowers hex digits (Zydis prints them in upper case), drops
// the blank after operand commas (Zydis, Capstone) and leading zeros of
// hex numbers (Zydis pads some), which objdump never prints.
func attCommon(text string) string {
	if strings.ContainsAny(text, "ABCDEF") {
		text = attHexRE().ReplaceAllStringFunc(text, strings.ToLower)
	}
	if strings.Contains(text, ", ") {
		text = strings.ReplaceAll(text, ", ", ",")
	}
	if strings.Contains(text, "0x0") {
		text = attZerosRE().ReplaceAllString(text, "0x$1")
	}
	return text
}

// intelBcstRE matches an Intel broadcast memory operand as the decoders
// print it: its element size, the address, the element count.
var intelBcstRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b([A-Z]+) PTR ((?:[a-g]s:)?\[[^\]]*\])\{1to([0-9]+)\}`)
})

// intelBcstNarrow are the EVEX conversions whose destination is half (or
// a quarter of) the width of their source: with an xmm destination the
// register does not tell the source's width.
var intelBcstNarrow = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, s := range []string{"vcvtpd2ps", "vcvtpd2dq", "vcvttpd2dq", "vcvtpd2udq", "vcvttpd2udq", "vcvtqq2ps", "vcvtuqq2ps", "vcvtpd2ph", "vcvtqq2ph", "vcvtuqq2ph", "vcvtdq2ph", "vcvtudq2ph", "vcvtps2phx", "vcvtneps2bf16"} {
		m[s] = true
	}
	return m
})

// intelBroadcast spells an EVEX broadcast memory operand as objdump -M
// intel does: "DWORD BCST [rax]", its element count "{1to16}" written
// only where no register operand shows the vector length (the vfpclass
// tests into a mask register, the narrowing conversions into xmm).
func intelBroadcast(mn, ops string) string {
	return intelBcstRE().ReplaceAllStringFunc(ops, func(m string) string {
		s := intelBcstRE().FindStringSubmatch(m)
		out := s[1] + " BCST " + s[2]
		rest := strings.Replace(ops, m, "", 1)
		if strings.HasPrefix(mn, "vfpclassp") || intelBcstNarrow()[mn] && !strings.Contains(rest, "ymm") && !strings.Contains(rest, "zmm") {
			out += "{1to" + s[3] + "}"
		}
		return out
	})
}

// pclmulAlias names a carry-less multiply by the halves its immediate
// selects, as objdump does (pclmulqdq $0x1 is pclmulhqlqdq) and drops the
// immediate; other immediates keep pclmulqdq's name. intel says the
// immediate is the last operand (Intel syntax), else the first.
func pclmulAlias(mn, ops string, intel bool) (string, string) {
	base, ok := strings.CutSuffix(mn, "pclmulqdq")
	if !ok || base != "" && base != "v" {
		return mn, ops
	}
	parts := strings.Split(ops, ",")
	k := 0
	if intel {
		k = len(parts) - 1
	}
	names := map[string]string{"0x0": "lqlq", "0x1": "hqlq", "0x10": "lqhq", "0x11": "hqhq", "$0x0": "lqlq", "$0x1": "hqlq", "$0x10": "lqhq", "$0x11": "hqhq"}
	n, ok := names[parts[k]]
	if len(parts) < 3 || !ok {
		return mn, ops
	}
	return base + "pclmul" + n + "dq", strings.Join(append(parts[:k:k], parts[k+1:]...), ",")
}

// vexLW returns the vector length in bits (128, 256, 512) and the W bit
// of the VEX (c4, c5) or EVEX (62) instruction at the start of code,
// after any legacy prefixes; ok is false for another encoding.
func vexLW(code []byte, mode int) (vl int, w, ok bool) {
	i := 0
	for i < len(code) && legacyPrefix(code[i]) {
		i++
	}
	c := code[i:]
	if len(c) < 2 || mode == 32 && c[1]&0xc0 != 0xc0 {
		return 0, false, false
	}
	switch {
	case c[0] == 0xc5:
		return 128 << (c[1] >> 2 & 1), false, true
	case c[0] == 0xc4 && len(c) >= 3:
		return 128 << (c[2] >> 2 & 1), c[2]&0x80 != 0, true
	case c[0] == 0x62 && len(c) >= 4:
		return 128 << min(c[3]>>5&3, 2), c[2]&0x80 != 0, true
	}
	return 0, false, false
}

// attVecSuffix appends the operand-size letter objdump writes on a VEX or
// EVEX mnemonic whose memory operand's size the registers do not show:
// x, y or z (the vector length) on the narrowing conversions into an xmm
// register and on vfpclassps/pd/ph, l or q (VEX.W) on vcvtsi2sd and its
// kin; a broadcast operand ("(%rax){1to4}") takes none. mem is whether
// the ModRM byte names memory: an operand with no base or index
// ("%fs:0x0", "0x1234") has no parentheses but takes the letter too.
func attVecSuffix(mn, ops string, mem bool, code []byte, mode int) string {
	if !mem || strings.Contains(ops, "{1to") {
		return mn
	}
	vl, w, ok := vexLW(code, mode)
	if !ok {
		return mn
	}
	xyz := map[int]string{128: "x", 256: "y", 512: "z"}[vl]
	switch {
	case strings.HasPrefix(mn, "vfpclassp"):
		return mn + xyz
	case intelBcstNarrow()[mn] && !strings.Contains(ops, "%ymm") && !strings.Contains(ops, "%zmm"):
		return mn + xyz
	case mn == "vcvtsi2sd" || mn == "vcvtsi2ss" || mn == "vcvtusi2sd" || mn == "vcvtusi2ss" || mn == "vcvtsi2sh" || mn == "vcvtusi2sh":
		if w && mode == 64 {
			return mn + "q"
		}
		return mn + "l"
	}
	return mn
}

// intelString spells a string instruction (a4-a7, aa-af) as objdump -M
// intel does, from its opcode: the unsuffixed mnemonic and every operand
// with its segment ("rep stos QWORD PTR es:[rdi],rax"); ok is false for
// another instruction.
func intelString(enc x86Encoding, mode int) (mn, ops string, ok bool) {
	if len(enc.opcode) != 1 || enc.vex {
		return "", "", false
	}
	op := enc.opcode[0]
	names := map[byte]string{0xa4: "movs", 0xa6: "cmps", 0xaa: "stos", 0xac: "lods", 0xae: "scas"}
	mn, ok = names[op&^1]
	if !ok {
		return "", "", false
	}
	size, acc := "BYTE", "al"
	switch {
	case op&1 == 0:
	case enc.rex&0x08 != 0:
		size, acc = "QWORD", "rax"
	case hasPrefix(enc.prefixes, 0x66):
		size, acc = "WORD", "ax"
	default:
		size, acc = "DWORD", "eax"
	}
	di, si := "rdi", "rsi"
	if mode == 32 || enc.addr32 {
		di, si = "edi", "esi"
	}
	if enc.addr16 {
		di, si = "di", "si"
	}
	dst := size + " PTR es:[" + di + "]"
	src := size + " PTR ds:[" + si + "]"
	switch mn {
	case "movs":
		ops = dst + "," + src
	case "cmps":
		ops = src + "," + dst
	case "stos":
		ops = dst + "," + acc
	case "lods":
		ops = acc + "," + src
	case "scas":
		ops = acc + "," + dst
	}
	return mn, ops, true
}

// attMemOperands replaces each AT&T memory operand of ops,
// [%seg:][disp](inner), by f's rendering of its parts (as attMemRE
// matches them, without the regular expression's cost on every row).
func attMemOperands(ops string, f func(seg, disp, inner string) string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(ops); i++ {
		if ops[i] != '(' {
			continue
		}
		j := strings.IndexAny(ops[i+1:], "()")
		if j < 0 || ops[i+1+j] != ')' {
			return ops
		}
		end := i + 1 + j + 1
		// The displacement: 0x-hex or decimal, with an optional '-'.
		k := i
		for k > last && (ops[k-1] >= '0' && ops[k-1] <= '9' || ops[k-1] >= 'a' && ops[k-1] <= 'f' || ops[k-1] == 'x') {
			k--
		}
		d := ops[k:i]
		if d != "" && !(strings.HasPrefix(d, "0x") && len(d) > 2 || strings.Trim(d, "0123456789") == "") {
			k, d = i, "" // not a number: leave it outside the operand
		}
		if d != "" && k > last && ops[k-1] == '-' {
			k--
			d = ops[k:i]
		}
		seg := ""
		if k-4 >= last && ops[k-1] == ':' && ops[k-4] == '%' && ops[k-2] == 's' {
			seg = ops[k-4 : k]
			k -= 4
		}
		b.WriteString(ops[last:k])
		b.WriteString(f(seg, d, ops[i+1:end-1]))
		last = end
		i = end - 1
	}
	if last == 0 {
		return ops
	}
	b.WriteString(ops[last:])
	return b.String()
}
