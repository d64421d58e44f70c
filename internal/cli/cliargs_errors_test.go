package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArgErrorsTyped holds every command-line mistake a command checks
// itself (a bad flag value, a wrong count of positional arguments, an
// unknown subcommand, a tool's one-of-required or range error) to the
// failure contract of docs/errors.md: without --json, "inquest: CODE:
// message" naming what the person typed and a line naming the flag or
// argument on standard error, nothing on standard output; with --json,
// exactly one JSON document, the error envelope, on standard output, its
// details.field the flag as typed.
func TestArgErrorsTyped(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "data"))
	cases := []struct {
		name string
		args []string
		want []string // stderr patterns without --json
		// field is the envelope's details.field with --json ("" for
		// none); noJSON skips the --json run.
		field  string
		noJSON bool
	}{
		{"ps --sort", []string{"ps", "--sort", "bogus"},
			[]string{`^inquest: INVALID_ARGUMENT: --sort "bogus" is not a sort key`, `\n  flag: --sort "bogus"\n`}, "--sort", false},
		{"ps -o", []string{"ps", "-o", "pid,bogus"},
			[]string{`^inquest: INVALID_ARGUMENT: -o "bogus": unknown column`, `\n  flag: -o "pid,bogus"\n`}, "-o", false},
		{"ps --columns", []string{"ps", "--columns", "pid,bogus"},
			[]string{`^inquest: INVALID_ARGUMENT: --columns "bogus": unknown column`, `\n  flag: --columns "pid,bogus"\n`}, "--columns", false},
		{"ps -o empty", []string{"ps", "-o", ""},
			[]string{`^inquest: INVALID_ARGUMENT: -o needs at least one column`, `\n  flag: -o\n`}, "-o", false},
		{"ps --limit 0", []string{"ps", "--limit", "0"},
			[]string{`^inquest: INVALID_ARGUMENT: --limit 0 is out of range`, `\n  flag: --limit "0"\n`}, "--limit", false},
		{"ps extra argument", []string{"ps", "extra-arg"},
			[]string{`^inquest: INVALID_ARGUMENT: ps takes no arguments \(got extra-arg\)\n`, `\n  arguments: extra-arg\n`}, "", false},
		{"bin symbols two files", []string{"bin", "symbols", "a", "b"},
			[]string{`^inquest: INVALID_ARGUMENT: bin symbols takes one FILE, got 2 `, `\n  argument: FILE\n`, `\n  arguments: a, b\n`}, "FILE", false},
		{"bin inspect no file", []string{"bin", "inspect"},
			[]string{`^inquest: INVALID_ARGUMENT: bin inspect takes at least one FILE, got none `, `\n  argument: FILE\n`}, "FILE", false},
		{"bin diff one file", []string{"bin", "diff", "a"},
			[]string{`^inquest: INVALID_ARGUMENT: bin diff takes LEFT and RIGHT, got 1 `}, "LEFT RIGHT", false},
		{"lsof bad PID", []string{"lsof", "0"},
			[]string{`^inquest: INVALID_ARGUMENT: PID "0" is not a positive integer\n`, `\n  argument: PID "0"\n`}, "PID", true},
		{"record unknown subcommand", []string{"record", "stpo"},
			[]string{`^inquest: INVALID_ARGUMENT: unknown command "stpo" for "inquest record" \(did you mean stop\?\)`}, "COMMAND", true},
		{"evidence query --to before --from", []string{"evidence", "query", "--from", "2h", "--to", "3h"},
			[]string{`^inquest: INVALID_ARGUMENT: --to 3h is before --from 2h `, `\n  flag: --to "3h"\n`}, "--to", false},
		{"evidence show bad id", []string{"evidence", "show", "ev-nonexistent"},
			[]string{`^inquest: INVALID_ARGUMENT: EVIDENCE_ID must be "ev-"`, `\n  argument: EVIDENCE_ID "ev-nonexistent"\n`}, "", false},
		{"call unknown tool", []string{"call", "no_such_tool"},
			[]string{`^inquest: INVALID_ARGUMENT: unknown tool "no_such_tool"; run ` + "`inquest mcp inspect`", `\n  tool: no_such_tool\n`}, "", false},
		{"mcp inspect unknown tool", []string{"mcp", "inspect", "--tool", "no_such_tool"},
			[]string{`^inquest: INVALID_ARGUMENT: unknown tool "no_such_tool"`}, "", true},
		{"settings set unknown key", []string{"settings", "set", "bogus", "1"},
			[]string{`^inquest: INVALID_ARGUMENT: unknown setting "bogus"\n`, `\n  argument: KEY "bogus"\n`, `\n  accepted: mcp_connections_disabled, recording_directory, `}, "", true},
		{"settings set relative directory", []string{"settings", "set", "recording_directory", "rel"},
			[]string{`^inquest: INVALID_ARGUMENT: recording_directory takes an absolute directory path\n`, `\n  argument: VALUE "rel"\n`}, "", true},
		{"settings set not a bool", []string{"settings", "set", "mcp_connections_disabled", "maybe"},
			[]string{`^inquest: INVALID_ARGUMENT: mcp_connections_disabled takes true or false\n`, `\n  argument: VALUE "maybe"\n`}, "", true},
		{"settings unset unknown key", []string{"settings", "unset", "nope"},
			[]string{`^inquest: INVALID_ARGUMENT: unknown setting "nope"\n`, `\n  argument: KEY "nope"\n`}, "", true},
		{"capture --experiment missing", []string{"capture", "--experiment", "/nonexistent/experiment.json"},
			[]string{`^inquest: INVALID_ARGUMENT: --experiment: open /nonexistent/experiment.json: no such file or directory\n`, `\n  flag: --experiment "/nonexistent/experiment.json"\n`}, "--experiment", false},
		{"capture --experiment directory", []string{"capture", "--experiment", "/"},
			[]string{`^inquest: INVALID_ARGUMENT: --experiment: / is a directory; give a JSON file\n`}, "--experiment", false},
		{"capture without ARGV", []string{"capture"},
			[]string{`^inquest: INVALID_ARGUMENT: give the target after --`, `\n  argument: ARGV\n`}, "ARGV", false},
		{"sockets -o", []string{"sockets", "-o", "bogus"},
			[]string{`^inquest: INVALID_ARGUMENT: -o "bogus": unknown column`, `\n  flag: -o "bogus"\n`}, "-o", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
			if code != 1 || out.Len() != 0 {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out.String(), errb.String())
			}
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(errb.String()) {
					t.Errorf("stderr does not match %q:\n%s", w, errb.String())
				}
			}
			for _, tool := range []string{"symbol, start", "created_to", "evidence_id"} {
				if strings.Contains(errb.String(), tool) {
					t.Errorf("stderr names the tool argument %s:\n%s", tool, errb.String())
				}
			}
			if c.noJSON {
				return
			}
			out.Reset()
			errb.Reset()
			code = Run(context.Background(), append(append([]string{}, c.args...), "--json"), strings.NewReader(""), &out, &errb)
			var env struct {
				Error *struct {
					Code    string         `json:"code"`
					Details map[string]any `json:"details"`
				} `json:"error"`
			}
			dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
			if err := dec.Decode(&env); err != nil || env.Error == nil || dec.More() {
				t.Fatalf("--json: exit %d, stdout is not one error envelope (%v):\n%s\nstderr:\n%s", code, err, out.String(), errb.String())
			}
			if code != 1 || env.Error.Code != "INVALID_ARGUMENT" || errb.Len() != 0 {
				t.Errorf("--json: exit %d, code %s, stderr %q", code, env.Error.Code, errb.String())
			}
			if got, _ := env.Error.Details["field"].(string); got != c.field {
				t.Errorf("--json: details.field %q, want %q", got, c.field)
			}
		})
	}
}
