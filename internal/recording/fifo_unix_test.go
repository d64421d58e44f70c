//go:build unix

package recording

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO with no writer is refused with a *NotRegularError from the fstat
// of a non-blocking open, instead of blocking in open(2) forever.
func TestLoadRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	_, err := Load(fifo, 1<<40)
	var nr *NotRegularError
	if !errors.As(err, &nr) || nr.Mode&fs.ModeNamedPipe == 0 || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("got %v", err)
	}
	// A directory is refused the same way.
	if _, err := Load(t.TempDir(), 1<<40); !errors.As(err, &nr) || !nr.Mode.IsDir() {
		t.Fatalf("directory: %v", err)
	}
}

// A cancelled context stops a load: the reader checks it before every
// read of the file, and the same file loads whole without it.
func TestLoadContextCancelled(t *testing.T) {
	data, _ := record(t, 20, 3, true)
	p := filepath.Join(t.TempDir(), "r.log")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if l, err := LoadContext(ctx, p, 1<<40); !errors.Is(err, context.Canceled) || l != nil {
		t.Fatalf("got %v %v", l, err)
	}
	if l, err := LoadContext(context.Background(), p, 1<<40); err != nil || l.Info.Frames != 20 {
		t.Fatalf("uncancelled: %v", err)
	}
}
