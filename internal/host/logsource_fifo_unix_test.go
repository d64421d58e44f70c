//go:build unix

package host

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// A FIFO named *.log in the recording directory is skipped by list_logs
// (counted in not_regular_skipped), and open_log of a log id whose file
// was replaced by a FIFO fails with DECODE_FAILED instead of waiting for
// a writer.
func TestLogSourceFIFO(t *testing.T) {
	h := testHost(t, 200*time.Millisecond, nil)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir, _, err := RecordingDirectory()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o700)
	writeLog(t, filepath.Join(dir, "a.log"), 2, nil, true)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.log"), 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	s := h.NewSession()
	defer s.Close()
	ids := logIDs(t, h, s)
	if len(ids) != 1 || ids["a.log"] == "" {
		t.Fatalf("listing %v", ids)
	}
	// Replace the listed file by a FIFO, then open it.
	os.Remove(filepath.Join(dir, "a.log"))
	if err := syscall.Mkfifo(filepath.Join(dir, "a.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = call(t, h, s, "open_log", map[string]any{"log_id": ids["a.log"]})
	wantCode(t, err, contract.CodeDecodeFailed)
}
