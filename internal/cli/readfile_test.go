//go:build linux

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCaptureExperimentFileType: --experiment refuses a FIFO (with no
// writer: opening it for reading would block forever), a directory and a
// missing file at once, naming the flag and the file type, and before any
// workload runs.
func TestCaptureExperimentFileType(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	for _, tc := range []struct{ path, want string }{
		{fifo, "--experiment: " + fifo + " is not a regular file (a FIFO)"},
		{dir, "--experiment: " + dir + " is a directory"},
		{filepath.Join(dir, "missing.json"), "--experiment: open " + filepath.Join(dir, "missing.json") + ": no such file or directory"},
		{"/dev/null", "--experiment: /dev/null is not a regular file (a character device)"},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"capture", "--provider", "direct", "--experiment", tc.path, "--cwd", dir, "--", "touch", marker}, strings.NewReader(""), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.path, code, errb.String(), tc.want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the workload ran", tc.path)
		}
	}
}
