package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/config"
)

// recording_directory returns to its default: `settings unset` and
// `settings set recording_directory ""` both remove it from inquest.toml,
// and `settings get` then names the default directory.
func TestRecordingDirectoryUnset(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "inquest.toml")
	data := t.TempDir()
	t.Setenv("INQUEST_CONFIG", cfg)
	t.Setenv("XDG_DATA_HOME", data)
	def := filepath.Join(data, "inquest", "recordings")
	custom := filepath.Join(t.TempDir(), "rec")
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d %s", args, code, errb.String())
		}
		return out.String()
	}
	for _, reset := range [][]string{{"settings", "unset", "recording_directory"}, {"settings", "set", "recording_directory", ""}} {
		run("settings", "set", "recording_directory", custom)
		if got := run("settings", "get", "recording_directory"); got != "recording_directory = "+custom+" (setting)\n" {
			t.Fatalf("after set: %q", got)
		}
		if got := run(reset...); got != "recording_directory = "+def+" (default)\n" {
			t.Fatalf("%q: %q", reset, got)
		}
		if got := run("settings", "get", "recording_directory"); got != "recording_directory = "+def+" (default)\n" {
			t.Fatalf("after %q: %q", reset, got)
		}
		if f, err := config.LoadFrom(cfg); err != nil || f.RecordingDirectory != "" {
			t.Fatalf("file after %q: %+v %v", reset, f, err)
		}
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"settings", "unset", "no_such_key"}, strings.NewReader(""), &out, &errb); code == 0 {
		t.Fatal("unset of an unknown key succeeded")
	}
}
