//go:build linux || darwin || freebsd

package bin

import "testing"

// FuzzIntelMemSizes: intelMemSizes never panics on any operand record
// and text, and only ever adds size words to the text.
func FuzzIntelMemSizes(f *testing.F) {
	f.Add([]byte{2, 1, 0, 1}, "vfmadd213sd xmm1, xmm5, [rcx+0x18]")
	f.Add([]byte{1, 0, 4, 0}, "fs:[rax]")
	f.Fuzz(func(t *testing.T, ops []byte, text string) {
		raw := make([]byte, zydisInsnSize)
		// Spread the fuzzer's bytes over the operand count, the
		// broadcast mode and each operand's type, visibility, size
		// and memory type.
		for i, b := range ops {
			switch {
			case i == 0:
				raw[zydisVisibleOpsOff] = b
			case i == 1:
				raw[zydisBroadcastOff] = b
			default:
				k := (i - 2) / 4
				if k >= 10 {
					break
				}
				op := raw[zydisOperandsOff+k*zydisOperandLen:]
				switch (i - 2) % 4 {
				case 0:
					op[zydisOpTypeOff] = b
				case 1:
					op[zydisOpVisOff] = b
				case 2:
					op[zydisOpSizeOff], op[zydisOpElemOff] = b, b>>1
				case 3:
					op[zydisOpMemTypeOff] = b
				}
			}
		}
		got := intelMemSizes(text, raw)
		if len(got) < len(text) {
			t.Errorf("intelMemSizes(%q) = %q: shorter", text, got)
		}
	})
}
