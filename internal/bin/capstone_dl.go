//go:build linux || darwin || freebsd

package bin

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// capstoneLibraries are the names tried, in order, when the Capstone
// library is loaded: Debian's libcapstone5 and libcapstone4 runtime
// packages, the unversioned development link, and Homebrew's.
var capstoneLibraries = map[string][]string{
	"linux":   {"libcapstone.so.5", "libcapstone.so.4", "libcapstone.so"},
	"freebsd": {"libcapstone.so.5", "libcapstone.so.4", "libcapstone.so"},
	"darwin":  {"libcapstone.5.dylib", "libcapstone.4.dylib", "libcapstone.dylib", "/opt/homebrew/lib/libcapstone.dylib", "/usr/local/lib/libcapstone.dylib"},
}

// Capstone API constants (capstone.h, stable across 4.x and 5.x).
const (
	csArchX86       = 3
	csMode32        = 1 << 2
	csMode64        = 1 << 3
	csOptSyntax     = 1
	csOptSyntaxATT  = 2
	csOptSyntaxIntl = 1
)

// csInsn4 is cs_insn of Capstone 4.x (bytes[16]); csInsn5 that of 5.x
// (bytes[24]). Only the fields before detail are read.
type csInsn4 struct {
	ID       uint32
	Address  uint64
	Size     uint16
	Bytes    [16]byte
	Mnemonic [32]byte
	OpStr    [160]byte
	Detail   uintptr
}

type csInsn5 struct {
	ID       uint32
	Address  uint64
	Size     uint16
	Bytes    [24]byte
	Mnemonic [32]byte
	OpStr    [160]byte
	Detail   uintptr
}

type capstoneLib struct {
	name    string
	major   int
	minor   int
	open    func(arch, mode uint32, handle *uintptr) uint32
	option  func(handle uintptr, typ uint32, value uintptr) uint32
	disasm4 func(handle uintptr, code *byte, size uintptr, addr uint64, count uintptr, insn **csInsn4) uintptr
	disasm5 func(handle uintptr, code *byte, size uintptr, addr uint64, count uintptr, insn **csInsn5) uintptr
	free4   func(insn *csInsn4, count uintptr)
	free5   func(insn *csInsn5, count uintptr)

	mu      sync.Mutex
	handles map[[2]int]uintptr // (mode, syntax) -> csh
}

var (
	capstoneOnce sync.Once
	capstone     *capstoneLib
	capstoneErr  error
)

// loadCapstone loads the Capstone library once per process with dlopen
// (no cgo). It returns nil and the reason when no supported version is
// installed.
func loadCapstone() (*capstoneLib, error) {
	capstoneOnce.Do(func() {
		lib, name, err := dlopenFirst("Capstone", capstoneLibraries[runtime.GOOS])
		if err != nil {
			capstoneErr = err
			return
		}
		c := &capstoneLib{name: name, handles: map[[2]int]uintptr{}}
		var version func(major, minor *int32) uint32
		if err := register(&version, lib, "cs_version"); err != nil {
			capstoneErr = err
			return
		}
		var major, minor int32
		version(&major, &minor)
		c.major, c.minor = int(major), int(minor)
		if c.major != 4 && c.major != 5 {
			capstoneErr = fmt.Errorf("%s is Capstone %d.%d; versions 4 and 5 are supported", name, major, minor)
			return
		}
		for sym, fn := range map[string]any{"cs_open": &c.open, "cs_option": &c.option} {
			if err := register(fn, lib, sym); err != nil {
				capstoneErr = err
				return
			}
		}
		if c.major == 4 {
			if err = register(&c.disasm4, lib, "cs_disasm"); err == nil {
				err = register(&c.free4, lib, "cs_free")
			}
		} else {
			if err = register(&c.disasm5, lib, "cs_disasm"); err == nil {
				err = register(&c.free5, lib, "cs_free")
			}
		}
		if err != nil {
			capstoneErr = err
			return
		}
		capstone = c
	})
	return capstone, capstoneErr
}

// register binds fn to symbol sym of lib; purego panics on a missing
// symbol through RegisterLibFunc, so the address is looked up first.
// dlopenFirst opens the first of names (shared-library file names, most
// preferred first) that the dynamic loader finds, returning its handle and
// name; when none loads, the error names the library (what), every name
// tried and the loader's last reason.
func dlopenFirst(what string, names []string) (uintptr, string, error) {
	var lastErr error
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, n, nil
		}
		lastErr = err
	}
	return 0, "", fmt.Errorf("the %s library is not installed (tried %v: %v)", what, names, lastErr)
}

func register(fn any, lib uintptr, sym string) error {
	addr, err := purego.Dlsym(lib, sym)
	if err != nil {
		return fmt.Errorf("the Capstone library lacks %s: %v", sym, err)
	}
	purego.RegisterFunc(fn, addr)
	return nil
}

// version names the loaded library, e.g. "capstone 4.0 (libcapstone.so.4)".
func (c *capstoneLib) version() string {
	return fmt.Sprintf("capstone %d.%d (%s)", c.major, c.minor, c.name)
}

// handle returns the cached engine handle for an x86 mode (32 or 64) and
// syntax ("att" or "intel").
func (c *capstoneLib) handle(mode int, intel bool) (uintptr, error) {
	key := [2]int{mode, 0}
	if intel {
		key[1] = 1
	}
	if h, ok := c.handles[key]; ok {
		return h, nil
	}
	m := uint32(csMode64)
	if mode == 32 {
		m = csMode32
	}
	var h uintptr
	if rc := c.open(csArchX86, m, &h); rc != 0 {
		return 0, fmt.Errorf("cs_open: error %d", rc)
	}
	syn := uintptr(csOptSyntaxATT)
	if intel {
		syn = csOptSyntaxIntl
	}
	if rc := c.option(h, csOptSyntax, syn); rc != 0 {
		return 0, fmt.Errorf("cs_option(CS_OPT_SYNTAX): error %d", rc)
	}
	c.handles[key] = h
	return h, nil
}

// decodeX86 decodes up to count instructions of code at address pc. It
// stops early at the first position Capstone cannot decode, so a short
// (or empty) result means code[sum of sizes] is undecodable.
func (c *capstoneLib) decodeX86(mode int, intel bool, code []byte, pc uint64, count int) ([]extInsn, error) {
	if len(code) == 0 || count <= 0 {
		return nil, nil
	}
	code = goCode(code, count)
	c.mu.Lock()
	defer c.mu.Unlock()
	h, err := c.handle(mode, intel)
	if err != nil {
		return nil, err
	}
	var pin runtime.Pinner
	pin.Pin(&code[0])
	defer pin.Unpin()
	out := make([]extInsn, 0, count)
	if c.major == 4 {
		var p *csInsn4
		n := c.disasm4(h, &code[0], uintptr(len(code)), pc, uintptr(count), &p)
		if n > 0 {
			for _, in := range unsafe.Slice(p, n) {
				out = append(out, extInsn{size: int(in.Size), text: strings.TrimSpace(cstr(in.Mnemonic[:]) + " " + cstr(in.OpStr[:]))})
			}
			c.free4(p, n)
		}
	} else {
		var p *csInsn5
		n := c.disasm5(h, &code[0], uintptr(len(code)), pc, uintptr(count), &p)
		if n > 0 {
			for _, in := range unsafe.Slice(p, n) {
				out = append(out, extInsn{size: int(in.Size), text: strings.TrimSpace(cstr(in.Mnemonic[:]) + " " + cstr(in.OpStr[:]))})
			}
			c.free5(p, n)
		}
	}
	return out, nil
}

func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
