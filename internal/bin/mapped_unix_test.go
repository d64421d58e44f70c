//go:build unix

package bin

import (
	"bytes"
	"context"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestMappedDigestsMatchSha256sum: a mapped file's whole-file SHA-256 and
// a multi-chunk digest (digestBytes releases each chunk's pages) equal
// sha256sum's and a direct entropy computation, and the mapping still
// reads the file's bytes after its pages were released.
func TestMappedDigestsMatchSha256sum(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("sha256sum not installed")
	}
	path := filepath.Join(t.TempDir(), "blob")
	want := make([]byte, 2*digestChunk+12345)
	rand.New(rand.NewSource(1)).Read(want[:digestChunk+77])
	for i := digestChunk + 77; i < len(want); i++ {
		want[i] = byte(i % 7)
	}
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sha256sum", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.Fields(string(out))[0]
	f, err := ReadFileMapped(context.Background(), path, "/path", MaxInputBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.unmap == nil {
		t.Fatal("the file was read, not mapped")
	}
	if got := f.SHA256(); got != ref {
		t.Errorf("SHA256() = %s, sha256sum %s", got, ref)
	}
	sum, e := digestBytes(f.Data)
	if sum != ref {
		t.Errorf("digestBytes sha256 = %s, sha256sum %s", sum, ref)
	}
	var hist [256]float64
	for _, c := range want {
		hist[c]++
	}
	direct := 0.0
	for _, c := range hist {
		if c > 0 {
			p := c / float64(len(want))
			direct -= p * math.Log2(p)
		}
	}
	if math.Abs(e-direct) > 0.0001 {
		t.Errorf("entropy %v, direct %v", e, direct)
	}
	if !bytes.Equal(f.Data, want) {
		t.Error("the mapping no longer reads the file's bytes after its pages were released")
	}
}

// TestMappedFileTruncatedIsAPanicNotACrash: reading a mapped page the
// file no longer backs (truncated under the mapping) panics in the
// reading goroutine, which the tool runtime recovers, instead of killing
// the process with SIGBUS.
func TestMappedFileTruncatedIsAPanicNotACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFileMapped(context.Background(), path, "/path", MaxInputBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.unmap == nil {
		t.Skip("the file was read, not mapped")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = f.SHA256()
		return nil
	}()
	if recovered == nil {
		t.Fatal("reading past the truncated end did not fault")
	}
	if _, ok := recovered.(interface{ Addr() uintptr }); !ok {
		t.Fatalf("the panic %v is not a memory fault", recovered)
	}
	_, err = Env{}.serve(context.Background(), "test", nil, func(*invocation) error {
		faultSink += f.Data[len(f.Data)-1]
		return nil
	})
	if contract.CodeOf(err) != contract.CodeInputChanged {
		t.Errorf("a fault inside a handler = %v, want INPUT_CHANGED", err)
	}
}

// faultSink keeps the test's read of a mapped byte from being optimized away.
var faultSink byte
