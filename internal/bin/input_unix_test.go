//go:build unix

package bin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestNonRegularInputsRejectedWithoutBlocking: a FIFO with no writer and a
// character device are rejected with INVALID_ARGUMENT by every bin and HAR
// tool, promptly (opening a FIFO for reading would otherwise wait forever
// for a writer).
func TestNonRegularInputsRejectedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	r := registry(t, "")
	for _, path := range []string{fifo, os.DevNull} {
		calls := []struct {
			name string
			args map[string]any
		}{
			{"inspect_binary", map[string]any{"path": path}},
			{"list_symbols", map[string]any{"path": path}},
			{"search_strings", map[string]any{"path": path}},
			{"disassemble", map[string]any{"path": path, "start": "0x1000"}},
			{"compare_binaries", map[string]any{"left": path, "right": path}},
			{"inspect_http_capture", map[string]any{"path": path}},
			{"compare_http_captures", map[string]any{"left": map[string]any{"path": path}, "right": map[string]any{"path": path}}},
		}
		for _, c := range calls {
			done := make(chan error, 1)
			go func() { _, err := call(t, r, c.name, c.args); done <- err }()
			select {
			case err := <-done:
				if contract.CodeOf(err) != contract.CodeInvalidArgument || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("%s on %s: err = %v, want INVALID_ARGUMENT not a regular file", c.name, filepath.Base(path), err)
				}
			case <-time.After(2 * time.Minute): // a block lasts forever; a loaded machine may be slow
				// Unblock the stuck open so the goroutine can end.
				if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatalf("%s on %s did not return: blocked on a non-regular file", c.name, filepath.Base(path))
			}
		}
	}
}

// TestReadFileObservesCancellation: a cancelled context stops the read
// with CANCELLED instead of returning the file.
func TestReadFileObservesCancellation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 3*readChunk), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFile(ctx, p, "/path", MaxInputBytes); contract.CodeOf(err) != contract.CodeCancelled {
		t.Fatalf("err = %v, want CANCELLED", err)
	}
	f, err := ReadFile(context.Background(), p, "/path", MaxInputBytes)
	if err != nil || f.Size != 3*readChunk {
		t.Fatalf("uncancelled read: %v size %v", err, f)
	}
}
