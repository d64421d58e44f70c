package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLIErrorsNameFlags runs each command's failure modes through Run (the
// whole command line, as a person types it) and holds standard error to
// name the flag or positional argument that was typed, never the tool's
// argument pointer, and to say what to run next. The same command with
// --json prints the error envelope on stdout with the tool's field path
// unchanged.
func TestCLIErrorsNameFlags(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "data"))
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nonexist")
	cases := []struct {
		name string
		args []string
		// stderr must match every pattern, and must not contain field
		// (the tool's pointer), when field is set.
		want  []string
		field string
	}{
		{"history process metric without --pid", []string{"history", "--metric", "rss_bytes"},
			[]string{`^inquest: INVALID_ARGUMENT: .*give --pid PID or --ref REF\n`, `\n  flag: --metric "rss_bytes"\n`, `\n  next: inquest ps --name NAME to find the PID, then inquest history --metric rss_bytes --pid PID\n`}, "/metric_ids/0"},
		{"history unknown metric", []string{"history", "--metric", "bogus", "--pid", "1"},
			[]string{`\(at --metric\)`, `flag: --metric "bogus"`, `accepted: one of cpu_percent, `}, "/metric_ids/0"},
		{"history unknown pid", []string{"history", "--metric", "rss_bytes", "--pid", "4194303"},
			[]string{`^inquest: REFERENCE_INVALID: `, `flag: --pid "4194303"`, `next: inquest ps --name NAME`}, "/pid"},
		{"history bad --from", []string{"history", "--metric", "load1", "--from", "yesterday"},
			[]string{`flag: --from "yesterday"`}, "/from"},
		{"sockets unknown --state", []string{"sockets", "--state", "bogus"},
			[]string{`^inquest: INVALID_ARGUMENT: not a socket state; use one ss prints \(listen, estab, `, `flag: --state "bogus"`}, "/filter/state"},
		{"sockets --listen with another --state", []string{"sockets", "--listen", "--state", "estab"},
			[]string{`^inquest: INVALID_ARGUMENT: --listen and --state estab exclude each other`}, ""},
		{"bin inspect missing file", []string{"bin", "inspect", missing},
			[]string{`^inquest: INVALID_ARGUMENT: the file named by FILE does not exist\n`, `argument: FILE "` + regexp.QuoteMeta(missing) + `"`, `next: check the path: ls -ld ` + regexp.QuoteMeta(missing)}, "/path"},
		{"bin inspect not a binary", []string{"bin", "inspect", text},
			[]string{`^inquest: UNSUPPORTED_FORMAT: `, `accepted formats: `}, ""},
		{"bin symbols bad --limit", []string{"bin", "symbols", "--limit", "0", text},
			[]string{`\(at --limit\)`, `flag: --limit "0"`, `accepted: an integer of at least 1`}, "/limit"},
		{"bin strings bad --min-length", []string{"bin", "strings", "--min-length", "1", text},
			[]string{`flag: --min-length "1"`, `accepted: an integer`}, "/min_length"},
		{"bin disasm bad --syntax", []string{"bin", "disasm", "--syntax", "att", "--symbol", "main", text},
			[]string{`flag: --syntax "att"`, `accepted: one of `}, "/syntax"},
		{"analyze undeclared format", []string{"analyze", "summarize_profile", text},
			[]string{`^inquest: UNSUPPORTED_FORMAT: .*declare it with --format\n`, `\n  flag: --format\n`, `accepted formats: pprof, folded`, `next: inquest analyze summarize_profile --format pprof PATH`}, "/sources/0/format"},
		{"analyze bad --format", []string{"analyze", "summarize_profile", "--format", "nope", text},
			[]string{`flag: --format "nope"`, `accepted: one of `}, "/sources/0/format"},
		{"lsof unknown pid", []string{"lsof", "4194303"},
			[]string{`^inquest: REFERENCE_INVALID: no process with pid 4194303 is running or retained\n`, `\n  argument: PID "4194303"\n`, `next: inquest ps --name NAME \(running processes and their PIDs\)`}, "/pid"},
		{"threads unknown pid", []string{"threads", "4194303"},
			[]string{`^inquest: REFERENCE_INVALID: `, `argument: PID "4194303"`, `next: inquest ps`}, "/pid"},
		{"sockets unknown pid", []string{"sockets", "--pid", "4194303"},
			[]string{`^inquest: REFERENCE_INVALID: `, `flag: --pid "4194303"`, `next: inquest ps`}, "/pid"},
		{"sockets bad --state", []string{"sockets", "--state", "bad state!"},
			[]string{`flag: --state "bad state!"`}, "/filter/state"},
		{"ps bad --order", []string{"ps", "--order", "up"},
			[]string{`\(at --order\)`, `flag: --order "up"`, `accepted: one of asc, desc`}, "/order"},
		{"ps --name too long", []string{"ps", "--name", strings.Repeat("x", 257)},
			[]string{`flag: --name "xxx`}, "/filter/name"},
		{"top unknown metric", []string{"top", "--metric", "bogus"},
			[]string{`\(at --metric\)`, `flag: --metric "bogus"`, `accepted: one of cpu_percent`}, "/metric_id"},
		{"top aggregate of a counter", []string{"top", "--metric", "time", "--aggregate", "slope"},
			[]string{`flag: --aggregate "slope"`, `increase, last`}, "/aggregate"},
		{"top --by of a counter", []string{"top", "--metric", "time", "--by", "slope"},
			[]string{`flag: --by "slope"`, `increase, last`}, "/aggregate"},
		{"wait exit unknown pid", []string{"wait", "exit", "--pid", "4194303", "--timeout", "1s"},
			[]string{`^inquest: PROCESS_EXITED: `, `flag: --pid "4194303"`, `next: inquest ps`}, "/pid"},
		{"log export bad --from", []string{"log", "export", filepath.Join("..", "recording", "testdata", "complete.log"), "--format", "csv", "--from", "2026-11-30T10:00:05Z", "--to", "2026-11-30T10:00:01Z"},
			[]string{`flag: --from "2026-11-30T10:00:05Z"`}, "/from"},
		// inquest call: the person typed the JSON, so the pointer is what
		// they typed and stays.
		{"call keeps the pointer", []string{"call", "list_processes", `{"limit":0}`},
			[]string{`\n  field: /limit\n`, `accepted: an integer of at least 1`}, ""},
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
			if c.field != "" && strings.Contains(errb.String(), c.field) {
				t.Errorf("stderr names the tool field %s:\n%s", c.field, errb.String())
			}
			if c.field == "" || c.field == "/pid" {
				return
			}
			// --json: the envelope, with the tool's pointer.
			out.Reset()
			errb.Reset()
			args := append([]string{}, c.args[:1]...)
			if c.args[0] == "bin" || c.args[0] == "log" || c.args[0] == "wait" {
				args = append(args, c.args[1])
				args = append(args, "--json")
				args = append(args, c.args[2:]...)
			} else {
				args = append(args, "--json")
				args = append(args, c.args[1:]...)
			}
			if code := Run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 1 {
				t.Fatalf("--json: exit %d", code)
			}
			if c.args[0] == "log" {
				return // log export has no --json
			}
			var env struct {
				Error struct {
					Field string `json:"field"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out.Bytes(), &env); err != nil || env.Error.Field != c.field {
				t.Fatalf("--json: field %q (want %q), %v:\n%s\n%s", env.Error.Field, c.field, err, out.String(), errb.String())
			}
		})
	}
}

// TestTypedArg: the pointer to flag or argument mapping itself, for
// pointers no command line above reaches.
func TestTypedArg(t *testing.T) {
	fullTree = true
	defer func() { fullTree = false }()
	root := newRootCmd(&Env{}, nil)
	cases := []struct {
		path []string
		ptr  string
		want string
	}{
		{[]string{"analyze"}, "/sources/1/path", "PATH"},
		{[]string{"analyze"}, "/start_ns", "--arguments start_ns"},
		{[]string{"analyze"}, "/limits/max_rows", "--page-size"},
		{[]string{"bin", "diff"}, "/left", "LEFT"},
		{[]string{"bin", "inspect"}, "/paths/3", "FILE"},
		{[]string{"history"}, "target", "--pid"},
		{[]string{"history"}, "/target/process_ref", "--ref"},
		{[]string{"sockets"}, "/filter/protocol", "--proto"},
		{[]string{"fuser"}, "/path_bytes", "PATH"},
		{[]string{"call"}, "/limit", ""},
		{[]string{"ps"}, "/no_such", ""},
	}
	for _, c := range cases {
		cmd, _, err := root.Find(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := typedArg(cmd, c.ptr); got != c.want {
			t.Errorf("%v %s: %q, want %q", c.path, c.ptr, got, c.want)
		}
	}
}

// TestReplacePointer: the pointer is replaced where it is a word, never
// inside a longer path.
func TestReplacePointer(t *testing.T) {
	for _, c := range []struct{ msg, ptr, typed, want string }{
		{"the file named by /path does not exist", "/path", "FILE", "the file named by FILE does not exist"},
		{"bad (at /limit)", "/limit", "--limit", "bad (at --limit)"},
		{"/path/to/file and /path", "/path", "FILE", "/path/to/file and FILE"},
		{"/pathname", "/path", "FILE", "/pathname"},
	} {
		if got := replacePointer(c.msg, c.ptr, c.typed); got != c.want {
			t.Errorf("%q: %q, want %q", c.msg, got, c.want)
		}
	}
}
