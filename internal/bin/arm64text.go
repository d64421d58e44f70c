package bin

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/arch/arm64/arm64asm"
)

// arm64DecoderName names the arm64 decoder in a disassembly's coverage.
const arm64DecoderName = "arm64asm with LSE atomics, udf, MSR (immediate) and SVE integer add/subtract decoded here"

// arm64Undecodable is the limitation of a disassembly page with rows
// (in ranges runs) no arm64 decoder here decodes.
func arm64Undecodable(rows, ranges int) string {
	return fmt.Sprintf("%d arm64 instruction word(s) of this page in %d range(s) were not decoded (rows with error \"undecodable\": an encoding neither arm64asm nor this package's additions know, SVE for one, or data in the code): their text is unknown; objdump may print an instruction there", rows, ranges)
}

// arm64Row fills row (whose Address is pc) from the 4-byte little-endian
// arm64 instruction word: its bytes, its text (Go syntax from arm64asm, or
// GNU objdump's spelling), and the absolute branch, adr or adrp target
// with its symbol. Words arm64asm does not decode that objdump does are
// decoded here: the ARMv8.1 LSE atomics (ld<op>, st<op>, swp, cas, casp
// with their acquire/release and byte/halfword forms), udf and the
// PSTATE forms of msr (immediate), and SVE's predicated integer
// add/sub/subr of vectors. Anything else is row.Error
// "undecodable" (SVE, for one), with its bytes.
func arm64Row(row *Instruction, word []byte, pc uint64, syntax string, symname func(uint64) (string, uint64), idx *symIndex) {
	row.Bytes = hex.EncodeToString(word)
	inst, err := arm64asm.Decode(word)
	if err != nil {
		if t, ok := arm64Extra(binary.LittleEndian.Uint32(word)); ok {
			row.Text = t
			return
		}
		row.Error = "undecodable"
		return
	}
	if syntax == "go" {
		row.Text = arm64asm.GoSyntax(inst, pc, symname, nil)
	} else {
		row.Text = arm64GNU(arm64asm.GNUSyntax(inst), inst)
	}
	for _, a := range inst.Args {
		r, ok := a.(arm64asm.PCRel)
		if !ok {
			continue
		}
		var t uint64
		switch inst.Op {
		case arm64asm.B, arm64asm.BL, arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ, arm64asm.ADR, arm64asm.LDR, arm64asm.LDRSW, arm64asm.PRFM:
			t = uint64(int64(pc) + int64(r))
		case arm64asm.ADRP:
			// The page of pc plus the page offset (objdump prints
			// the absolute page address).
			t = uint64(int64(pc&^0xfff) + int64(r))
		default:
			continue
		}
		row.Target, row.TargetSymbol = hexU(t), idx.name(t)
		if syntax != "go" {
			// objdump prints the absolute target, where GNUSyntax
			// prints ".+0x10".
			row.Text = strings.Replace(row.Text, r.String(), hexU(t), 1)
		}
	}
}

// arm64GNU respells arm64asm's GNU text as aarch64 objdump prints it:
// ", " between every operand, memory operand parts included ("[x0, #8]",
// "[sp], #32"), "#0.0" for the floating-point compare with zero, and the
// architectural name of a system register objdump names (mrs x0,
// midr_el1) where arm64asm prints its s<op0>_<op1>_c<n>_c<m>_<op2>
// encoding.
func arm64GNU(text string, inst arm64asm.Inst) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		b.WriteByte(text[i])
		if text[i] == ',' && i+1 < len(text) && text[i+1] != ' ' {
			b.WriteByte(' ')
		}
	}
	text = b.String()
	switch inst.Op {
	case arm64asm.FCMP, arm64asm.FCMPE:
		if strings.HasSuffix(text, ", #0") {
			text += ".0"
		}
	case arm64asm.MRS, arm64asm.MSR:
		for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ',' }) {
			if n, ok := arm64SysRegNames()[f]; ok {
				text = strings.Replace(text, f, n, 1)
			}
		}
	}
	return text
}

// arm64SysRegNames maps arm64asm's encoding spelling of the system
// registers user-space code reads and writes to the names objdump prints
// (Arm ARM, "System registers"; the table test checks each against
// aarch64 as and objdump).
var arm64SysRegNames = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"s3_3_c4_c2_0": "nzcv", "s3_3_c4_c2_1": "daif", "s3_3_c4_c4_0": "fpcr", "s3_3_c4_c4_1": "fpsr",
		"s3_3_c4_c2_5": "dit", "s3_3_c4_c2_6": "ssbs", "s3_3_c4_c2_7": "tco",
		"s3_3_c13_c0_2": "tpidr_el0", "s3_3_c13_c0_3": "tpidrro_el0",
		"s3_3_c14_c0_0": "cntfrq_el0", "s3_3_c14_c0_1": "cntpct_el0", "s3_3_c14_c0_2": "cntvct_el0",
		"s3_3_c0_c0_1": "ctr_el0", "s3_3_c0_c0_7": "dczid_el0",
		"s3_0_c0_c0_0": "midr_el1", "s3_0_c0_c0_5": "mpidr_el1", "s3_0_c0_c0_6": "revidr_el1",
		"s3_0_c0_c4_0": "id_aa64pfr0_el1", "s3_0_c0_c4_1": "id_aa64pfr1_el1", "s3_0_c0_c4_4": "id_aa64zfr0_el1",
		"s3_0_c0_c5_0": "id_aa64dfr0_el1", "s3_0_c0_c6_0": "id_aa64isar0_el1", "s3_0_c0_c6_1": "id_aa64isar1_el1",
		"s3_0_c0_c7_0": "id_aa64mmfr0_el1", "s3_0_c0_c7_1": "id_aa64mmfr1_el1", "s3_0_c0_c7_2": "id_aa64mmfr2_el1",
		"s3_0_c4_c2_2": "currentel", "s3_0_c4_c2_3": "pan", "s3_0_c4_c2_4": "uao",
		"s3_3_c2_c4_0": "rndr", "s3_3_c2_c4_1": "rndrrs",
	}
})

// arm64Extra decodes, in objdump's spelling, the instruction words this
// package knows and arm64asm does not; ok is false for any other word.
func arm64Extra(w uint32) (string, bool) {
	reg := func(n uint32, x bool) string {
		switch {
		case n == 31 && x:
			return "xzr"
		case n == 31:
			return "wzr"
		case x:
			return fmt.Sprintf("x%d", n)
		}
		return fmt.Sprintf("w%d", n)
	}
	base := func(n uint32) string {
		if n == 31 {
			return "[sp]"
		}
		return fmt.Sprintf("[x%d]", n)
	}
	size := w >> 30
	sizeSuffix := [...]string{"b", "h", "", ""}[size]
	rs, rn, rt := w>>16&31, w>>5&31, w&31
	switch {
	case w>>16 == 0:
		// UDF #imm16: permanently undefined.
		return fmt.Sprintf("udf #%d", w&0xffff), true
	case w&0x3f200c00 == 0x38200000:
		// Atomic memory operations (FEAT_LSE): size 111 0 00 A R 1 Rs
		// o3 opc 00 Rn Rt.
		a, r, o3, opc := w>>23&1, w>>22&1, w>>15&1, w>>12&7
		var op string
		switch {
		case o3 == 0:
			op = [...]string{"add", "clr", "eor", "set", "smax", "smin", "umax", "umin"}[opc]
		case opc == 0:
			op = "swp"
		default:
			return "", false // LDAPR and LD64B families: left to arm64asm
		}
		ord := map[bool]string{true: "a"}[a == 1] + map[bool]string{true: "l"}[r == 1]
		x := size == 3
		if op != "swp" && a == 0 && rt == 31 {
			// ST<op>: the load form discarding its result.
			return fmt.Sprintf("st%s%s%s %s, %s", op, ord, sizeSuffix, reg(rs, x), base(rn)), true
		}
		if op != "swp" {
			op = "ld" + op
		}
		return fmt.Sprintf("%s%s%s %s, %s, %s", op, ord, sizeSuffix, reg(rs, x), reg(rt, x), base(rn)), true
	case w&0x3fa07c00 == 0x08a07c00:
		// CAS, CASA, CASL, CASAL (and B, H): size 001000 1 L 1 Rs o0
		// 11111 Rn Rt.
		ord := map[bool]string{true: "a"}[w>>22&1 == 1] + map[bool]string{true: "l"}[w>>15&1 == 1]
		x := size == 3
		return fmt.Sprintf("cas%s%s %s, %s, %s", ord, sizeSuffix, reg(rs, x), reg(rt, x), base(rn)), true
	case w&0xbfa07c00 == 0x08207c00 && rs%2 == 0 && rt%2 == 0:
		// CASP (pairs): 0 sz 001000 0 L 1 Rs o0 11111 Rn Rt, Rs and Rt
		// even.
		ord := map[bool]string{true: "a"}[w>>22&1 == 1] + map[bool]string{true: "l"}[w>>15&1 == 1]
		x := w>>30&1 == 1
		return fmt.Sprintf("casp%s %s, %s, %s, %s, %s", ord, reg(rs, x), reg(rs+1, x), reg(rt, x), reg(rt+1, x), base(rn)), true
	case w&0xff38e000 == 0x04000000 && w>>16&7 != 2 && w>>16&7 < 4:
		// SVE integer add/subtract vectors (predicated): 00000100 size
		// 0 00 opc 000 Pg Zm Zdn; opc 000 ADD, 001 SUB, 011 SUBR.
		t := [...]string{"b", "h", "s", "d"}[w>>22&3]
		op := [...]string{"add", "sub", "", "subr"}[w>>16&7]
		return fmt.Sprintf("%s z%d.%s, p%d/m, z%d.%s, z%d.%s", op, rt, t, w>>10&7, rt, t, rn, t), true
	case w&0xfff8f01f == 0xd500401f:
		// MSR (immediate) to a PSTATE field: 1101 0101 0000 0 op1 0100
		// CRm op2 11111.
		field := map[uint32]string{0x05: "spsel", 0x1e: "daifset", 0x1f: "daifclr", 0x03: "uao", 0x04: "pan", 0x1a: "dit", 0x19: "ssbs", 0x1c: "tco"}[w>>16&7<<3|w>>5&7]
		if field == "" {
			return "", false
		}
		return fmt.Sprintf("msr %s, #%#x", field, w>>8&15), true
	}
	return "", false
}
