package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSoleCommand: `inquest NAME ...` for a command registered with
// registerNamed builds that command alone, and prints what the full tree
// prints (help, usage errors, flag errors, its own argument errors) with
// the same exit status; the name matches the command's own.
func TestSoleCommand(t *testing.T) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	if len(namedCommands) == 0 {
		t.Fatal("no command is registered with its name")
	}
	run := func(full bool, args []string) (string, string, int) {
		fullTree = full
		defer func() { fullTree = false }()
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	for name, c := range namedCommands {
		if got := c(&Env{}).Name(); got != name {
			t.Fatalf("registered as %q, the command is %q", name, got)
		}
		if root := newRootCmd(&Env{}, []string{name}); len(root.Commands()) != 1 {
			t.Fatalf("%s: the tree holds %d commands, want it alone", name, len(root.Commands()))
		}
		for _, extra := range [][]string{{"--help"}, {"-h"}, {"--bogus"}, {"extra"}, {"help"}, {"--version"},
			{"--limit", "0"}, {"--limit", "abc"}, {"--sort", "bogus"}, {"--order", "up"}} {
			args := append([]string{name}, extra...)
			so, se, sc := run(false, args)
			fo, fe, fc := run(true, args)
			if so != fo || se != fe || sc != fc {
				t.Errorf("%q: alone: exit %d, stdout %q, stderr %q; in the full tree: exit %d, stdout %q, stderr %q", args, sc, so, se, fc, fo, fe)
			}
		}
	}
	// Other first words still see the whole tree: help lists every command.
	out, _, code := run(false, []string{"--help"})
	if code != 0 || !strings.Contains(out, "ps ") || !strings.Contains(out, "bin ") {
		t.Fatalf("inquest --help (%d):\n%s", code, out)
	}
}
