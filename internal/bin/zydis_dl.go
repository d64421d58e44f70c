//go:build linux || darwin || freebsd

package bin

import (
	"fmt"
	"runtime"
	"sync"
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
	zydisInsnSize   = 1232
	zydisLengthOff  = 16
	zydisTextOff    = 1136
	zydisTextLen    = 96
	zydisMode64     = 0 // ZYDIS_MACHINE_MODE_LONG_64
	zydisModeCompat = 1 // ZYDIS_MACHINE_MODE_LONG_COMPAT_32
)

// zydisLib is the Zydis 4.0 library loaded with dlopen (no cgo).
type zydisLib struct {
	name string
	ver  uint64
	// intel and att are the addresses of ZydisDisassembleIntel and
	// ZydisDisassembleATT, called through purego.SyscallN (a reflect-built
	// function costs about a microsecond per call, more than the decoding).
	intel, att uintptr
	mu         sync.Mutex
	insn       [zydisInsnSize/8 + 1]uint64
}

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
		}{{&z.intel, "ZydisDisassembleIntel"}, {&z.att, "ZydisDisassembleATT"}} {
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
	var out []extInsn
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
		out = append(out, extInsn{size: n, text: text})
		off += n
	}
	return out, nil
}
