package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/cli"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the CLI transcripts under testdata/script: one behaviour
// per file, the inquest command running in-process.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkpprof": mkpprof,
			"lastlog": lastlog,
		},
		Setup: func(e *testscript.Env) error {
			for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
				dir := e.WorkDir + "/" + k
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return err
				}
				e.Setenv(k, dir)
			}
			// INQUEST_BIN is the inquest command the scripts run: the path
			// `inquest setup` registers, for cmpenv golden files.
			for _, d := range filepath.SplitList(e.Getenv("PATH")) {
				if _, err := os.Stat(filepath.Join(d, "inquest")); err == nil {
					e.Setenv("INQUEST_BIN", filepath.Join(d, "inquest"))
					break
				}
			}
			return nil
		},
	})
}

func init() {
	testscriptCommands["inquest"] = func() int {
		return cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
}
