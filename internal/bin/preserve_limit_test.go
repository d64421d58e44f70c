package bin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreserveStopsAtMaxPreserveRows (issue 36 case 5): preserving a
// search_strings result holds at most max_preserve_rows rows; a selection
// with more is partial and says so, one that fits exactly is complete.
// The limit is lowered to 1,000 here (the default is 1,048,576), with GNU
// strings counting the file's strings in the same run.
func TestPreserveStopsAtMaxPreserveRows(t *testing.T) {
	needTool(t, "strings")
	old := maxPreserveRows
	maxPreserveRows = 1000
	t.Cleanup(func() { maxPreserveRows = old })
	for _, c := range []struct {
		n        int
		complete bool
	}{{999, true}, {1000, true}, {1001, false}, {1500, false}, {25_000, false}} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			var b strings.Builder
			for i := range c.n {
				fmt.Fprintf(&b, "s%07d\n", i)
			}
			p := filepath.Join(t.TempDir(), "s.txt")
			if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			ref := strings.Count(run(t, "strings", "-a", "-n", "4", p), "\n")
			if ref != c.n {
				t.Fatalf("GNU strings finds %d strings, want %d", ref, c.n)
			}
			r := registry(t, t.TempDir())
			m := mustCall(t, r, "search_strings", map[string]any{"path": p, "encodings": []string{"ascii"}, "limit": 10})
			pres := mustCall(t, r, "preserve_evidence", map[string]any{"analysis_id": data(m)["analysis_id"]})
			man := data(pres)["manifest"].(map[string]any)
			mc := man["coverage"].(map[string]any)
			wantRows := min(ref, maxPreserveRows)
			lim := fmt.Sprint(mc["limitations"])
			if fmt.Sprint(mc["rows"]) != fmt.Sprint(wantRows) || (man["status"] == "complete") != c.complete || mc["complete"] != c.complete ||
				strings.Contains(lim, "max_preserve_rows") == c.complete {
				t.Errorf("%d strings (GNU strings %d): preserved rows %v status %v complete %v limitations %s; want %d rows, complete %v", c.n, ref, mc["rows"], man["status"], mc["complete"], lim, wantRows, c.complete)
			}
		})
	}
}
