package bin

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestExternalDecoderOnShrunkMapping: the external x86 decoders (Zydis,
// Capstone: C code) are handed a slice of a mapped file whose pages the
// file no longer backs (it was truncated after mapping). Reading those
// pages from C would raise SIGBUS and kill the process; the bytes are
// copied in Go first, where the fault is a recoverable panic (the tool
// reports INPUT_CHANGED through mappedFault).
func TestExternalDecoderOnShrunkMapping(t *testing.T) {
	type lib interface {
		decodeX86(mode int, intel bool, code []byte, pc uint64, count int) ([]extInsn, error)
	}
	var libs []struct {
		name string
		l    lib
	}
	if z, err := loadZydis(); err == nil {
		libs = append(libs, struct {
			name string
			l    lib
		}{"zydis", z})
	}
	if c, err := loadCapstone(); err == nil {
		libs = append(libs, struct {
			name string
			l    lib
		}{"capstone", c})
	}
	if len(libs) == 0 {
		t.Skip("no external x86 decoder (install libzydis4.0 or libcapstone4)")
	}
	for _, tc := range libs {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "code")
			code := make([]byte, 1<<16)
			for i := range code {
				code[i] = 0x90 // nop
			}
			if err := os.WriteFile(p, code, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := ReadFileMapped(context.Background(), p, "/path", MaxInputBytes)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
			var err2 error
			func() {
				defer mappedFault(&err2)
				tc.l.decodeX86(64, false, f.Data[8192:], 0x1000, 100)
			}()
			if err2 == nil {
				t.Fatal("decoding pages the file no longer backs did not fault")
			}
			if ce := contract.AsError(err2); ce.Code != contract.CodeInputChanged {
				t.Fatalf("fault reported as %s, want INPUT_CHANGED", ce.Code)
			}
		})
	}
}
