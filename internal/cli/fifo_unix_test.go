//go:build linux

package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLIRejectsFIFO: the built inquest rejects a FIFO with no writer at
// once (INVALID_ARGUMENT, exit 1) in every command that reads a named file
// (bin, har, log show and export; the FIFO is named *.log so the log
// commands take it), instead of blocking in open(2) where neither SIGTERM
// nor the context can reach. The 30 s bound only ends a hung child; it is
// not a speed check.
func TestCLIRejectsFIFO(t *testing.T) {
	bin := heBinary(t)
	fifo := filepath.Join(t.TempDir(), "f.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	for _, args := range [][]string{
		{"bin", "inspect", "--json", fifo},
		{"bin", "symbols", "--json", fifo},
		{"bin", "strings", "--json", fifo},
		{"bin", "disasm", "--json", "--start", "0x1000", fifo},
		{"bin", "diff", "--json", fifo, fifo},
		{"har", "show", "--json", fifo},
		{"har", "diff", "--json", fifo, fifo},
		{"log", "show", fifo},
		{"log", "export", fifo, "--format", "csv"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(cmd.Environ(), "INQUEST_DATA_DIR="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Errorf("%v: still running after 30s", args)
		} else if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "INVALID_ARGUMENT") || !strings.Contains(string(out), "not a regular file") {
			t.Errorf("%v: exit %d %s", args, cmd.ProcessState.ExitCode(), out)
		}
		cancel()
	}
}
