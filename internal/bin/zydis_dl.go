//go:build linux || darwin || freebsd

package bin

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// zydisLibraries are the names tried when the Zydis library is loaded:
// Debian's libzydis4.0 runtime package, the development link, Homebrew's.
var zydisLibraries = map[string][]string{
	"linux":   {"libZydis.so.4.0", "libZydis.so"},
	"freebsd": {"libZydis.so.4.0", "libZydis.so"},
	"darwin":  {"libZydis.4.0.dylib", "libZydis.dylib", "/opt/homebrew/lib/libZydis.dylib", "/usr/local/lib/libZydis.dylib"},
}

// Layout of ZydisDisassembledInstruction in Zydis 4.0 (Disassembler.h),
// checked against offsetof on Debian's libzydis-dev 4.0.0: the decoded
// instruction's length byte and the formatted text.
const (
	zydisInsnSize  = 1232
	zydisLengthOff = 16
	zydisTextOff   = 1136
	zydisTextLen   = 96
	// The decoded operands (ZydisDecodedOperand, 80 bytes each) and the
	// facts of them intelMemSizes reads, checked the same way.
	zydisVisibleOpsOff = 8 + 25 // info.operand_count_visible (u8)
	zydisBroadcastOff  = 8 + 72 // info.avx.broadcast.mode (u32, 0: none)
	zydisOperandsOff   = 336
	zydisOperandLen    = 80
	zydisOpVisOff      = 4  // visibility (u32): 1 explicit
	zydisOpSizeOff     = 16 // size in bits (u16)
	zydisOpElemOff     = 24 // element_size in bits (u16)
	zydisOpTypeOff     = 32 // type (u32): 2 memory
	zydisOpMemTypeOff  = 40 // mem.type (u32): 1 memory, 2 address (lea), 3 MIB, 4 VSIB
	zydisMode64        = 0  // ZYDIS_MACHINE_MODE_LONG_64
	zydisModeCompat    = 1  // ZYDIS_MACHINE_MODE_LONG_COMPAT_32
)

// zydisLib is the Zydis 4.0 library loaded with dlopen (no cgo).
type zydisLib struct {
	name string
	ver  uint64
	// intel and att are the addresses of ZydisDisassembleIntel and
	// ZydisDisassembleATT, called through purego.SyscallN (a reflect-built
	// function costs about a microsecond per call, more than the decoding).
	intel, att uintptr
	// decInit and decInsn are ZydisDecoderInit and
	// ZydisDecoderDecodeInstruction: the decoding alone, without the
	// operands and the formatter ZydisDisassemble* initializes and runs
	// for every instruction.
	decInit, decInsn uintptr
	mu               sync.Mutex
	insn             [zydisInsnSize/8 + 1]uint64
	// decoders are the ZydisDecoder structures (12 bytes in 4.0) of
	// 64-bit and 32-bit mode, initialized once (zero: not yet), and ctx
	// the ZydisDecoderContext scratch (under 64 bytes in 4.0) of a
	// decoding.
	decoders [2][8]uint64
	ctx      [32]uint64
}

// zydisFormats counts the instructions Zydis has formatted (decodeX86):
// tests check that a page of plain instructions formats none.
var zydisFormats atomic.Int64

var (
	zydisOnce sync.Once
	zydis     *zydisLib
	zydisErr  error
)

// loadZydis loads Zydis once per process; only version 4.0, whose
// structure layout is known, is accepted.
func loadZydis() (*zydisLib, error) {
	zydisOnce.Do(func() {
		lib, name, err := dlopenFirst("Zydis", zydisLibraries[runtime.GOOS])
		if err != nil {
			zydisErr = err
			return
		}
		z := &zydisLib{name: name}
		var version func() uint64
		if err := register(&version, lib, "ZydisGetVersion"); err != nil {
			zydisErr = err
			return
		}
		z.ver = version()
		if z.ver>>32 != 4<<16 {
			zydisErr = fmt.Errorf("%s is Zydis %d.%d; only 4.0 is supported", name, z.ver>>48, (z.ver>>32)&0xffff)
			return
		}
		for _, f := range []struct {
			addr *uintptr
			sym  string
		}{{&z.intel, "ZydisDisassembleIntel"}, {&z.att, "ZydisDisassembleATT"}, {&z.decInit, "ZydisDecoderInit"}, {&z.decInsn, "ZydisDecoderDecodeInstruction"}} {
			a, err := purego.Dlsym(lib, f.sym)
			if err != nil {
				zydisErr = fmt.Errorf("the Zydis library lacks %s: %v", f.sym, err)
				return
			}
			*f.addr = a
		}
		zydis = z
	})
	return zydis, zydisErr
}

func (z *zydisLib) version() string {
	return fmt.Sprintf("zydis %d.%d.%d (%s)", z.ver>>48, (z.ver>>32)&0xffff, (z.ver>>16)&0xffff, z.name)
}

// decodeX86 decodes up to count instructions of code at pc, stopping at
// the first position Zydis cannot decode.
func (z *zydisLib) decodeX86(mode int, intel bool, code []byte, pc uint64, count int) ([]extInsn, error) {
	code = goCode(code, count)
	z.mu.Lock()
	defer z.mu.Unlock()
	m := uint32(zydisMode64)
	if mode == 32 {
		m = zydisModeCompat
	}
	fn := z.att
	if intel {
		fn = z.intel
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&z.insn[0])), zydisInsnSize)
	// One instruction takes at least a byte: out never grows past this.
	out := make([]extInsn, 0, max(min(count, len(code)), 0))
	off := 0
	for off < len(code) && len(out) < count {
		// ZyanStatus ZydisDisassemble*(ZydisMachineMode mode,
		// ZyanU64 runtime_address, const void* buffer, ZyanUSize length,
		// ZydisDisassembledInstruction* instruction)
		r, _, _ := purego.SyscallN(fn, uintptr(m), uintptr(pc+uint64(off)), uintptr(unsafe.Pointer(&code[off])), uintptr(len(code)-off), uintptr(unsafe.Pointer(&raw[0])))
		st := uint32(r)
		runtime.KeepAlive(code)
		runtime.KeepAlive(z)
		if st&0x80000000 != 0 {
			break
		}
		n := int(raw[zydisLengthOff])
		if n == 0 || off+n > len(code) {
			break
		}
		text := cstr(raw[zydisTextOff : zydisTextOff+zydisTextLen])
		if intel {
			text = intelMemSizes(text, raw)
		}
		out = append(out, extInsn{size: n, text: text})
		off += n
	}
	zydisFormats.Add(int64(len(out)))
	return out, nil
}

// decodeLengths decodes up to count instructions of code, as decodeX86
// does (the same decoder settings ZydisDisassemble* uses: the mode's
// stack width, the default decoder modes) and stopping where it does, but
// reads only each instruction's length: the extInsns have no text
// (unformatted set); formatX86 formats one on demand.
func (z *zydisLib) decodeLengths(mode int, code []byte, count int) []extInsn {
	code = goCode(code, count)
	z.mu.Lock()
	defer z.mu.Unlock()
	m, width, k := uint32(zydisMode64), uint32(2), 0 // ZYDIS_STACK_WIDTH_64
	if mode == 32 {
		m, width, k = zydisModeCompat, 1, 1 // ZYDIS_STACK_WIDTH_32
	}
	dec := &z.decoders[k]
	if dec[7] == 0 {
		// ZyanStatus ZydisDecoderInit(ZydisDecoder* decoder,
		// ZydisMachineMode machine_mode, ZydisStackWidth stack_width)
		r, _, _ := purego.SyscallN(z.decInit, uintptr(unsafe.Pointer(&dec[0])), uintptr(m), uintptr(width))
		if uint32(r)&0x80000000 != 0 {
			return nil
		}
		dec[7] = 1
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&z.insn[0])), zydisInsnSize)
	out := make([]extInsn, 0, max(min(count, len(code)), 0))
	off := 0
	for off < len(code) && len(out) < count {
		// ZyanStatus ZydisDecoderDecodeInstruction(const ZydisDecoder*
		// decoder, ZydisDecoderContext* context, const void* buffer,
		// ZyanUSize length, ZydisDecodedInstruction* instruction): the
		// instruction is the info member at offset 8 of the
		// ZydisDisassembledInstruction decodeX86 reads.
		r, _, _ := purego.SyscallN(z.decInsn, uintptr(unsafe.Pointer(&dec[0])), uintptr(unsafe.Pointer(&z.ctx[0])), uintptr(unsafe.Pointer(&code[off])), uintptr(len(code)-off), uintptr(unsafe.Pointer(&raw[8])))
		runtime.KeepAlive(code)
		runtime.KeepAlive(z)
		if uint32(r)&0x80000000 != 0 {
			break
		}
		n := int(raw[zydisLengthOff])
		if n == 0 || off+n > len(code) {
			break
		}
		out = append(out, extInsn{size: n, unformatted: true})
		off += n
	}
	return out
}

// le16 and le32 read little-endian integers of the decoded structure.
func le16(b []byte) int { return int(b[0]) | int(b[1])<<8 }
func le32(b []byte) int { return le16(b) | le16(b[2:])<<16 }

// intelMemSizes writes the size of every explicit memory operand of a
// Zydis Intel text that Zydis left out (its formatter prints one only
// where the registers leave it ambiguous; objdump -M intel always does),
// from the decoder's operand model in raw (a ZydisDisassembledInstruction):
// the operand's size in bits as "qword ptr", or for a broadcast its
// element's ("dword ptr [rax]{1to16}", which gnuIntel spells "DWORD BCST").
// Address operands (lea's), MIB operands (bndldx) and sizes without a name
// are left without one, as objdump prints them.
func intelMemSizes(text string, raw []byte) string {
	bcast := le32(raw[zydisBroadcastOff:]) != 0
	n := int(raw[zydisVisibleOpsOff])
	from := 0 // the text searched for the next memory operand
	for i := 0; i < n && i < 10; i++ {
		op := raw[zydisOperandsOff+i*zydisOperandLen:]
		if le32(op[zydisOpTypeOff:]) != 2 || le32(op[zydisOpVisOff:]) != 1 {
			continue
		}
		j := strings.IndexByte(text[from:], '[')
		if j < 0 {
			break
		}
		j += from
		from = j + 1
		mt := le32(op[zydisOpMemTypeOff:])
		bits := le16(op[zydisOpSizeOff:])
		if mt == 4 || bcast {
			bits = le16(op[zydisOpElemOff:])
		}
		if mt != 1 && mt != 4 {
			continue
		}
		// The operand starts at its segment ("fs:[...]"), if any.
		at := j
		if at >= 3 && text[at-1] == ':' && strings.HasSuffix(text[at-3:at-1], "s") {
			at -= 3
		}
		if strings.HasSuffix(text[:at], "ptr ") {
			continue
		}
		name := intelSizeNames[bits]
		if name == "" {
			continue
		}
		text = text[:at] + name + " ptr " + text[at:]
		from += len(name) + 5
	}
	return text
}

// intelSizeNames are the Intel names of memory operand sizes in bits.
var intelSizeNames = map[int]string{8: "byte", 16: "word", 32: "dword", 48: "fword", 64: "qword", 80: "tbyte", 128: "xmmword", 256: "ymmword", 512: "zmmword"}
