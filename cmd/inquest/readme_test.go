package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestReadmeCommands: every `inquest ...` command in README.md's shell
// blocks is run, as written or with its placeholders filled in, by
// testdata/script/readme.txtar (TestScripts runs it), and every `go ...`
// command by .ci/run. A command added to the README without a run fails
// here and names itself.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "script", "readme.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, l := range strings.Split(string(script), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "!"))
		if rest, ok := strings.CutPrefix(l, "exec inquest "); ok {
			ran[commandPath(rest)] = true
		}
	}
	n := 0
	for _, cmd := range readmeShellCommands(string(readme)) {
		switch {
		case strings.HasPrefix(cmd, "inquest "):
			n++
			if p := commandPath(strings.TrimPrefix(cmd, "inquest ")); !ran[p] {
				t.Errorf("README command %q: no `exec inquest %s` in testdata/script/readme.txtar", cmd, p)
			}
		case strings.HasPrefix(cmd, "go "):
			n++
			if !strings.Contains(string(ci), cmd) && !strings.Contains(string(ci), strings.ReplaceAll(cmd, "$(go env GOPATH)", "$GOPATH")) {
				t.Errorf("README command %q is not run by .ci/run", cmd)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d inquest and go commands in README.md's shell blocks; the parser lost them", n)
	}
}

// readmeShellCommands returns the commands of README.md's ```sh blocks:
// one per line or per `;`, comments removed.
func readmeShellCommands(md string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(md))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			in = !in && strings.TrimPrefix(l, "```") == "sh"
			continue
		}
		if !in {
			continue
		}
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		for _, part := range strings.Split(l, ";") {
			for _, c := range strings.Split(part, "&&") {
				if c = strings.TrimSpace(c); c != "" {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

var flagOrArg = regexp.MustCompile(`^(-|'|"|/|\.|\$|[A-Z])`)

// commandPath is the subcommand words of a command line: the words before
// the first flag, path, quoted argument or placeholder ("log export").
func commandPath(args string) string {
	var words []string
	for _, w := range strings.Fields(args) {
		if flagOrArg.MatchString(w) || strings.Contains(w, ".") || len(words) == 2 {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// mkpprof FILE writes a small CPU profile (two functions, 10 ms samples)
// for the README's `inquest analyze summarize_profile cpu.pprof`.
func mkpprof(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: mkpprof FILE")
	}
	fnMain := &profile.Function{ID: 1, Name: "main.main", SystemName: "main.main", Filename: "main.go"}
	fnWork := &profile.Function{ID: 2, Name: "main.work", SystemName: "main.work", Filename: "main.go"}
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "prog", HasFunctions: true}
	locMain := &profile.Location{ID: 1, Mapping: m, Address: 0x401000, Line: []profile.Line{{Function: fnMain, Line: 10}}}
	locWork := &profile.Location{ID: 2, Mapping: m, Address: 0x402000, Line: []profile.Line{{Function: fnWork, Line: 20}}}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        int64(10 * time.Millisecond),
		TimeNanos:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		DurationNanos: int64(time.Second),
		Sample: []*profile.Sample{
			{Location: []*profile.Location{locWork, locMain}, Value: []int64{80, 800_000_000}},
			{Location: []*profile.Location{locMain}, Value: []int64{20, 200_000_000}},
		},
		Location: []*profile.Location{locMain, locWork},
		Function: []*profile.Function{fnMain, fnWork},
		Mapping:  []*profile.Mapping{m},
	}
	f, err := os.Create(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("%v", err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		ts.Fatalf("%v", err)
	}
}

// lastlog VAR sets VAR to the file name of the newest .log in this
// script's recording directory (what `inquest log list` prints under NAME).
func lastlog(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: lastlog VAR")
	}
	dir := filepath.Join(ts.Getenv("XDG_DATA_HOME"), "inquest", "recordings")
	ents, err := os.ReadDir(dir)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	newest := ""
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") && e.Name() > newest {
			newest = e.Name()
		}
	}
	if newest == "" {
		ts.Fatalf("no .log in %s", dir)
	}
	ts.Setenv(args[0], newest)
}
