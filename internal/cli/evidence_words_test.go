package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// runWords runs the CLI in process and returns its streams and exit status.
func runWords(args ...string) (string, string, int) {
	var out, errb strings.Builder
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestFlagErrorJSON: a flag the parser rejects, given with --json, prints
// the error envelope on standard output (as every other --json failure
// does) naming the flag as typed; without --json the same error is text
// on standard error.
func TestFlagErrorJSON(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	cases := []struct {
		args  []string
		field string
		words string
	}{
		{[]string{"evidence", "query", "--json", "--bogus"}, "--bogus", "unknown flag: --bogus"},
		{[]string{"evidence", "query", "--bogus", "--json"}, "--bogus", "unknown flag: --bogus"},
		{[]string{"evidence", "location", "--json", "-z"}, "-z", "unknown shorthand flag"},
		{[]string{"evidence", "query", "--json", "--page-size", "abc"}, "--page-size", `--page-size "abc" is not an integer`},
		{[]string{"evidence", "query", "--json", "--page-size"}, "--page-size", "needs an argument"},
		{[]string{"evidence", "sweep", "--json", "--older-than", "soon"}, "--older-than", "is not a duration"},
	}
	for _, c := range cases {
		out, errs, code := runWords(c.args...)
		var env struct {
			Error struct {
				Code    string         `json:"code"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		if code != 1 || errs != "" || json.Unmarshal([]byte(out), &env) != nil {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want the error envelope on stdout only", c.args, code, out, errs)
			continue
		}
		if env.Error.Code != "INVALID_ARGUMENT" || env.Error.Details["field"] != c.field || !strings.Contains(env.Error.Message, c.words) {
			t.Errorf("%v: %+v, want INVALID_ARGUMENT naming %s (%q)", c.args, env.Error, c.field, c.words)
		}
		text := append([]string{}, c.args...)
		for i, a := range text {
			if a == "--json" {
				text = append(text[:i:i], text[i+1:]...)
				break
			}
		}
		out, errs, code = runWords(text...)
		if code != 1 || out != "" || !strings.Contains(errs, "INVALID_ARGUMENT: ") || !strings.Contains(errs, c.words) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want the text error on stderr", text, code, out, errs)
		}
	}
}

// TestEvidenceLocationNumbers: location's counts are JSON numbers, in a
// store that does not exist yet and in one that does; what is unknown
// stays null.
func TestEvidenceLocationNumbers(t *testing.T) {
	for _, exists := range []bool{false, true} {
		store := filepath.Join(t.TempDir(), "store")
		t.Setenv("INQUEST_DATA_DIR", store)
		if exists {
			if _, _, code := runWords("evidence", "sweep"); code != 0 {
				t.Fatal("sweep")
			}
			// The first preserve creates the store; sweep of an absent
			// store does not, so open it through query.
			if _, _, code := runWords("evidence", "query", "--json"); code != 0 {
				t.Fatal("query")
			}
		}
		out, _, code := runWords("evidence", "location", "--json")
		var env struct {
			Data map[string]any `json:"data"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &env) != nil {
			t.Fatalf("location: exit %d %q", code, out)
		}
		for _, k := range []string{"records", "unreadable_manifests", "unreferenced_objects", "unreferenced_bytes"} {
			v, has := env.Data[k]
			if !has {
				continue
			}
			if _, num := v.(float64); !num && v != nil {
				t.Errorf("exists %v: data.%s = %#v, want a JSON number (or null when unknown)", exists, k, v)
			}
		}
		if _, num := env.Data["records"].(float64); !num {
			t.Errorf("exists %v: data.records = %#v, want a number", exists, env.Data["records"])
		}
	}
}

// TestEvidenceShowEmptySection: a manifest section with no entries (no
// provenance recorded) is said to be empty, never printed as a heading
// with nothing under it.
func TestEvidenceShowEmptySection(t *testing.T) {
	for _, k := range []string{"arguments", "limits", "coverage", "producers", "provenance"} {
		m := map[string]any{"evidence_id": "ev-x", "arguments": map[string]any{"a": 1.0}, "limits": map[string]any{"b": 2.0}, "coverage": map[string]any{"c": true}, "producers": map[string]any{"inquest": "1"}, "provenance": map[string]any{"cwd": "/"}}
		m[k] = map[string]any{}
		var b strings.Builder
		renderEvidenceShow(&b, map[string]any{"manifest": m})
		label := strings.ToUpper(k[:1]) + k[1:]
		if strings.Contains(b.String(), "\n"+label+":\n") || !strings.Contains(b.String(), "\n"+label+": none\n") {
			t.Errorf("empty %s:\n%s", k, b.String())
		}
	}
}

// TestEvidenceQueryHelpWords: the query flags' help names the result
// field the cursor comes from and every toolset the filter accepts.
func TestEvidenceQueryHelpWords(t *testing.T) {
	out, _, code := runWords("evidence", "query", "--help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, want := range []string{"next_cursor", "(perf, bin, proc)"} {
		if !strings.Contains(out, want) {
			t.Errorf("evidence query --help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "from next_page") {
		t.Errorf("evidence query --help names next_page, a field query_evidence does not return:\n%s", out)
	}
}
