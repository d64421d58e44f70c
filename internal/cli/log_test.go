package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogGolden renders `inquest log show` and `inquest log export` of the
// committed recordings of internal/recording/testdata against golden files
// (go test ./internal/cli -run TestLogGolden -update rewrites them).
func TestLogGolden(t *testing.T) {
	fx := func(name string) string { return filepath.Join("..", "recording", "testdata", name) }
	cases := []struct {
		golden string
		args   []string
	}{
		{"log_show_complete.txt", []string{"log", "show", fx("complete.log")}},
		{"log_show_torn.txt", []string{"log", "show", fx("torn.log")}},
		{"log_export.csv", []string{"log", "export", fx("complete.log"), "--format", "csv", "--metric", "rss_bytes", "--metric", "cpu_percent", "--pid", "3"}},
		{"log_export.jsonl", []string{"log", "export", fx("complete.log"), "--format", "jsonl", "--metric", "fd_count", "--to", "2026-11-30T10:00:02Z"}},
		{"log_export.om", []string{"log", "export", fx("flipped.log"), "--format", "openmetrics", "--metric", "memory_used_bytes", "--metric", "threads"}},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), c.args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb.String())
		}
		// The path differs by checkout; the size line stays.
		got := out.Bytes()
		if c.golden == "log_export.om" && !strings.Contains(errb.String(), "incomplete") {
			t.Fatalf("no incomplete warning for a damaged file: %s", errb.String())
		}
		p := filepath.Join("testdata", c.golden)
		if *update {
			os.WriteFile(p, got, 0o644)
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s differs:\n%s", c.golden, got)
		}
	}
}
