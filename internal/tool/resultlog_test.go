package tool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestCheckResultLog checks the result check itself on logs it writes:
// results that match their data schema pass; a member of the wrong type,
// a partial result whose only warning is a paging note, data that
// repeats an envelope member, text promising a next call the fields do
// not name, and a tool without a schema are each reported, naming the
// tool.
func TestCheckResultLog(t *testing.T) {
	data := json.RawMessage(`{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object","properties":{"pid":{"type":"number"}}}}}}`)
	schema, err := OutputSchema(data)
	if err != nil {
		t.Fatal(err)
	}
	partial := func(w string) *contract.Result {
		r := contract.NewResult("live", time.Time{}, map[string]any{"rows": []any{}})
		r.Warn(w)
		return r
	}
	tests := []struct {
		name string
		res  *contract.Result
		want string // "" when the result passes
	}{
		{"matches", contract.NewResult("live", time.Time{}, map[string]any{"rows": []any{map[string]any{"pid": 1, "extra": "x"}}}), ""},
		{"wrong member type", contract.NewResult("live", time.Time{}, map[string]any{"rows": []any{map[string]any{"pid": "1"}}}), "does not match"},
		{"partial with a reason", partial("3 processes could not be read"), ""},
		{"partial for paging", partial(BudgetWarning), "paging is not missing evidence"},
		{"coverage twice", contract.NewResult("live", time.Time{}, map[string]any{"rows": []any{}, "coverage": map[string]any{}}), "data repeats the envelope's coverage"},
		{"next_action twice", contract.NewResult("live", time.Time{}, map[string]any{"rows": []any{}, "next_action": nil, "status": "complete"}), "data repeats the envelope's status, next_action"},
		{"a next call promised", contract.NewResult("live", time.Time{}, map[string]any{"rows": []any{}, "notes": []string{"follow next_action for the rest"}}), "next_action is null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, _ := json.Marshal(tc.res)
			os.WriteFile(filepath.Join(dir, "t.jsonl"), append(b, '\n'), 0o644)
			counts, problems := CheckResultLog(dir, func(n string) json.RawMessage {
				if n == "t" {
					return schema
				}
				return nil
			})
			if counts["t"] != 1 {
				t.Errorf("checked %d results, want 1", counts["t"])
			}
			got := strings.Join(problems, "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("problems %q, want one containing %q", got, tc.want)
			}
		})
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nosuch.jsonl"), []byte("{}\n"), 0o644)
	if _, p := CheckResultLog(dir, func(string) json.RawMessage { return nil }); len(p) != 1 || !strings.Contains(p[0], "nosuch: no output schema") {
		t.Errorf("a tool without a schema: problems %q", p)
	}

}
