package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/recording"
)

// TestLogExportReversedWindow: --from after --to is INVALID_ARGUMENT naming
// both flags (exit 1, nothing exported), never "exported 0 samples"; an
// equal --from and --to is a valid one-instant window.
func TestLogExportReversedWindow(t *testing.T) {
	fx := filepath.Join("..", "recording", "testdata", "complete.log")
	cases := []struct {
		from, to string
		code     int
		out, err string
	}{
		{"2026-11-30T10:00:05Z", "2026-11-30T10:00:01Z", 1, "", "--from is after --to"},
		{"2026-11-30T11:00:00+01:00", "2026-11-30T09:59:59Z", 1, "", "--from is after --to"},
		{"2026-11-30T10:00:01Z", "2026-11-30T10:00:01Z", 0, "", "exported "},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"log", "export", fx, "--format", "csv", "--from", c.from, "--to", c.to}, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Fatalf("%s..%s: exit %d\n%s\n%s", c.from, c.to, code, out.String(), errb.String())
		}
		// A failure is told on stderr only: stdout is the export's data.
		if c.code != 0 && (out.Len() != 0 || !strings.Contains(errb.String(), "INVALID_ARGUMENT") || !strings.Contains(errb.String(), "flag: --from") || strings.Contains(errb.String(), "exported")) {
			t.Fatalf("%s..%s: %s %s", c.from, c.to, out.String(), errb.String())
		}
	}
}

// TestLogShowDamagedFirstFrame: a first sample frame whose length reads
// 0xFFFFFFFF is reported before the first sample frame with its byte
// offset, and "resumed" appears only if a keyframe was read after it.
func TestLogShowDamagedFirstFrame(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "recording", "testdata", "complete.log"))
	if err != nil {
		t.Fatal(err)
	}
	off := len(recording.Magic)
	first := off + 9 + int(binary.LittleEndian.Uint32(data[off+4:])) + 4 // header frame: head, payload, checksum
	binary.LittleEndian.PutUint32(data[first+4:], 0xFFFFFFFF)
	p := filepath.Join(t.TempDir(), "f.log")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := recording.Load(p, 1<<40)
	if err != nil || len(l.Info.Damaged) != 1 {
		t.Fatalf("%v %+v", err, l)
	}
	d := l.Info.Damaged[0]
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"log", "show", p}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	if !strings.Contains(s, "before the first sample frame") || strings.Contains(s, "-1") || !strings.Contains(s, "bytes "+strconv.FormatInt(d.Offset, 10)+" to ") {
		t.Fatalf("offset %d: %s", first, s)
	}
	if resumed := strings.Contains(s, "resumed"); resumed != (d.Resumed == recording.ResumedKeyframe) {
		t.Fatalf("resumed_at %s: %s", d.Resumed, s)
	}
	if d.Offset != int64(first) {
		t.Fatalf("damage at %d, want %d", d.Offset, first)
	}
}

// TestLogCancelled: a cancelled context (what SIGINT/SIGTERM do to the
// command's context) stops log show and log export before reading with
// CANCELLED, exit 1, and nothing exported.
func TestLogCancelled(t *testing.T) {
	fx := filepath.Join("..", "recording", "testdata", "complete.log")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"log", "show", fx}, {"log", "export", fx, "--format", "csv"}} {
		var out, errb bytes.Buffer
		code := Run(ctx, args, strings.NewReader(""), &out, &errb)
		if code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), "CANCELLED") || strings.Contains(errb.String(), "exported") {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out.String(), errb.String())
		}
	}
}
