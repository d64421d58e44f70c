package bin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestSearchStringsCancelledCoverage: a search_strings call cancelled
// mid-scan of a large file the test writes says in coverage.examined
// that it examined the scanned range, not the whole file; preserving it
// records that range in the record's arguments, and inspect_evidence's
// next_action (the replay on the stored artifact) searches exactly that
// range: the same rows, each string once, and no string beyond it.
func TestSearchStringsCancelledCoverage(t *testing.T) {
	const n = 2_000_000 // 9 bytes each: an 18 MB file
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "s%07d\n", i)
	}
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	r := registry(t, t.TempDir())
	raw, _ := json.Marshal(map[string]any{"path": p, "regex": "00$", "encodings": []string{"ascii"}, "limit": 1000})
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(8)
	res, err := r.Call(ctx, "search_strings", raw)
	if err != nil {
		t.Fatalf("cancelled search: %v", err)
	}
	body, _ := contract.Marshal(res, nil)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	d := data(m)
	if _, dup := d["coverage"]; dup {
		t.Error("data repeats the envelope's coverage")
	}
	cov := m["coverage"].(map[string]any)
	sc, _ := cov["scanned"].(map[string]any)
	if cov["cancelled"] != true || sc == nil {
		t.Fatalf("not cancelled mid-scan: coverage %v", cov)
	}
	var to int
	fmt.Sscan(sc["to"].(string), &to)
	if to <= 0 || to >= n*9 {
		t.Fatalf("scanned to %d of %d bytes: not mid-scan", to, n*9)
	}
	ex, _ := cov["examined"].(string)
	if !strings.Contains(ex, fmt.Sprintf("[0, %d)", to)) {
		t.Errorf("coverage.examined %q; scanned %v", ex, sc)
	}
	live := rows(m)
	if len(live) == 0 {
		t.Fatal("no rows in the scanned range")
	}

	pres := mustCall(t, r, "preserve_evidence", map[string]any{"analysis_id": d["analysis_id"]})
	ev := data(pres)["evidence_id"]
	ie := mustCall(t, r, "inspect_evidence", map[string]any{"evidence_id": ev})
	next, _ := ie["next_action"].(map[string]any)
	if next == nil || next["tool"] != "search_strings" {
		t.Fatalf("inspect_evidence names no replay: %v", ie["next_action"])
	}
	args := next["arguments"].(map[string]any)
	rg, _ := args["range"].(map[string]any)
	if rg["from"] != sc["from"] || rg["to"] != sc["to"] {
		t.Fatalf("replay range %v, scanned %v", args["range"], sc)
	}
	replayed, _, warnings := follow(t, context.Background(), r, "search_strings", args)
	var want []string
	for _, row := range live {
		b, _ := json.Marshal(row)
		want = append(want, string(b))
	}
	if strings.Join(replayed, "\n") != strings.Join(want, "\n") {
		t.Errorf("replay: %d rows, the cancelled call %d (first %v / %v)", len(replayed), len(want), replayed[:min(1, len(replayed))], want[:1])
	}
	if len(warnings) > 0 {
		t.Errorf("replay of the scanned range warns %v", warnings)
	}
	// The range argument on its own: strings starting in [from, to)
	// only, with the range named as what was examined.
	one := mustCall(t, r, "search_strings", map[string]any{"path": p, "encodings": []string{"ascii"}, "range": map[string]any{"from": "9", "to": "27"}})
	if got := rows(one); len(got) != 2 || got[0].(map[string]any)["text"] != "s0000001" || got[1].(map[string]any)["text"] != "s0000002" {
		t.Errorf("range [9, 27): rows %v", got)
	}
	if ex := one["coverage"].(map[string]any)["examined"]; !strings.Contains(fmt.Sprint(ex), "[9, 27)") {
		t.Errorf("range [9, 27): examined %v", ex)
	}
	// A string starting before to runs past it whole.
	mid := mustCall(t, r, "search_strings", map[string]any{"path": p, "encodings": []string{"ascii"}, "range": map[string]any{"from": "9", "to": "10"}})
	if got := rows(mid); len(got) != 1 || got[0].(map[string]any)["text"] != "s0000001" {
		t.Errorf("range [9, 10): rows %v", got)
	}
	for _, bad := range []map[string]any{{"from": "5", "to": "5"}, {"from": "0", "to": fmt.Sprint(n*9 + 1)}, {"from": "x", "to": "1"}, {"from": "1"}} {
		if _, err := call(t, r, "search_strings", map[string]any{"path": p, "range": bad}); contract.CodeOf(err) != contract.CodeInvalidArgument {
			t.Errorf("range %v: %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}
