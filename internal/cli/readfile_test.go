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

// TestCaptureProviderChoice: a provider the operation does not take is
// refused before anything runs, naming the operation's providers and the
// operations that take the given provider (not the schema's bare const).
func TestCaptureProviderChoice(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--provider", "nope"}, []string{`--provider "nope" is not a provider of --operation summarize_executions, which takes direct`, "the providers are direct, go-test"}},
		{[]string{"--provider", "go-test"}, []string{"which takes direct", "--provider go-test is taken by --operation compare_benchmarks, compare_profiles, preview_artifact, summarize_benchmarks"}},
		{[]string{"--provider", "direct", "--operation", "summarize_benchmarks"}, []string{"which takes go-test", "--provider direct is taken by --operation preview_artifact, summarize_executions"}},
		{[]string{"--provider", "direct", "--operation", "bogus"}, []string{`--operation "bogus" has no capture; give one of compare_benchmarks`}},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append(append([]string{"capture"}, tc.args...), "--", "true"), strings.NewReader(""), &out, &errb)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errb.String(), w) {
				t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb.String(), w)
			}
		}
	}
	var out, errb bytes.Buffer
	Run(context.Background(), []string{"mcp", "--help"}, strings.NewReader(""), &out, &errb)
	if !strings.Contains(out.String(), "16384 to 4194304") {
		t.Errorf("mcp --help does not give the --max-result-bytes range:\n%s", out.String())
	}
}
