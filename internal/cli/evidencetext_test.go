package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEvidenceText: without --json the evidence commands print for
// people (a query table shaped like ls -l's columns of facts, labelled
// lines for show/location/sweep, human sizes, local times), never the
// envelope; the next page is the command to run, on stderr.
func TestEvidenceText(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("INQUEST_DATA_DIR", store)
	p := filepath.Join(t.TempDir(), "a.csv")
	if err := os.WriteFile(p, []byte("k,v\na,1\nb,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		var out, errb strings.Builder
		code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, errs, code := run("evidence", "query"); code != 0 || out != "" || !strings.Contains(errs, "no evidence records match") {
		t.Fatalf("empty store query: exit %d %q %q", code, out, errs)
	}
	var ids []string
	for range 2 {
		m, code := runAnalyzeCLI(t, "analyze", "preview_artifact", p, "--preserve")
		if code != 0 {
			t.Fatalf("preserve: %v", m)
		}
		ids = append(ids, m["data"].(map[string]any)["preserved"].(map[string]any)["evidence_id"].(string))
	}
	stamp := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`
	cases := []struct {
		args      []string
		stdout    []string // regexps, each must match a line
		stderr    []string
		notStdout []string
	}{
		{[]string{"evidence", "query"},
			[]string{`^EVIDENCE_ID +CREATED +TOOLSET +OPERATION +ARTIFACTS +SIZE +FORMATS +STATUS$`, `^` + ids[1] + ` ` + stamp + ` perf +preview_artifact +1 +12B csv +complete$`, `^` + ids[0] + ` `},
			nil, []string{`"api_version"`}},
		{[]string{"evidence", "query", "--page-size", "1"},
			[]string{`^` + ids[1] + ` `},
			[]string{`^more records: inquest evidence query --page-size 1 --cursor \S+$`}, []string{ids[0], `"api_version"`}},
		{[]string{"evidence", "show", ids[0]},
			[]string{`^Evidence ID: +` + ids[0] + `$`, `^Operation: +preview_artifact$`, `^Created: +` + stamp + ` \(`, `^    source-0: ` + regexp.QuoteMeta(p) + `$`, `max_input_bytes: [0-9.]+G \(\d+ bytes\)$`, `^  source-0 +analysis_source +csv +12B [0-9a-f]{64} ` + regexp.QuoteMeta(store) + `/objects/`},
			nil, []string{`"api_version"`}},
		{[]string{"evidence", "location"},
			[]string{`^Store: +` + regexp.QuoteMeta(store) + `$`, `^Chosen by: +INQUEST_DATA_DIR$`, `^Records: +2$`, `^Unreferenced objects: +0 \(0B\)$`},
			nil, []string{`"api_version"`}},
		{[]string{"evidence", "sweep", "--dry-run"},
			[]string{`^Would remove: +0 objects \(0B\)$`, `^Kept, too recent: +0 objects \(0B\), modified in the last 10m0s$`, `^Referenced: +1 of 1 objects$`},
			nil, []string{`"api_version"`}},
	}
	for _, c := range cases {
		out, errs, code := run(c.args...)
		if code != 0 {
			t.Errorf("%v: exit %d\n%s%s", c.args, code, out, errs)
			continue
		}
		for _, want := range c.stdout {
			if !regexp.MustCompile(`(?m)` + want).MatchString(out) {
				t.Errorf("%v: no stdout line matches %q:\n%s", c.args, want, out)
			}
		}
		for _, want := range c.stderr {
			if !regexp.MustCompile(`(?m)` + want).MatchString(errs) {
				t.Errorf("%v: no stderr line matches %q:\n%s", c.args, want, errs)
			}
		}
		for _, bad := range c.notStdout {
			if strings.Contains(out, bad) {
				t.Errorf("%v: stdout holds %q:\n%s", c.args, bad, out)
			}
		}
		if strings.Contains(errs, "next_action") {
			t.Errorf("%v: stderr speaks of next_action: %s", c.args, errs)
		}
		// --json still prints the envelope.
		if m, code := runAnalyzeCLI(t, c.args...); code != 0 || m["api_version"] == nil {
			t.Errorf("%v --json: exit %d %v", c.args, code, m)
		}
	}
}
