package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUnknownSubcommandFails: every command that only groups others
// fails (exit 1) on an argument that names none of its commands, naming
// it and suggesting the near one, and prints its help (exit 0) alone.
func TestUnknownSubcommandFails(t *testing.T) {
	var groups []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Annotations[groupAnnotation] != "" {
				groups = append(groups, s)
			}
			walk(s)
		}
	}
	walk(newRootCmd(&Env{}, nil))
	var names []string
	for _, g := range groups {
		names = append(names, g.Name())
	}
	for _, want := range []string{"record", "log", "evidence", "bin", "har", "profile", "track", "settings"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("group commands %v: %s is missing", names, want)
		}
	}
	for _, g := range groups {
		path := strings.Fields(g.CommandPath())[1:]
		var out, errb bytes.Buffer
		if code := Run(context.Background(), append(path, "bogus"), strings.NewReader(""), &out, &errb); code != 1 {
			t.Errorf("%v bogus: exit %d, want 1 (stdout %q)", path, code, out.String())
		}
		if want := `unknown command "bogus" for "` + g.CommandPath() + `"`; !strings.Contains(errb.String(), want) {
			t.Errorf("%v bogus: stderr %q, want it to say %s", path, errb.String(), want)
		}
		out.Reset()
		errb.Reset()
		if code := Run(context.Background(), path, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "Available Commands") {
			t.Errorf("%v alone: exit %d, stdout %q; want its help and 0", path, code, out.String())
		}
	}
	var errb bytes.Buffer
	Run(context.Background(), []string{"record", "stpo"}, strings.NewReader(""), &bytes.Buffer{}, &errb)
	if !strings.Contains(errb.String(), "did you mean stop?") {
		t.Errorf("record stpo: stderr %q, want the suggestion stop", errb.String())
	}
}
