package bin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestSearchStringsCancelsWithinLongStrings (issue 36 case 4): a file of
// long printable runs (64 strings of 1 MiB after a marker) is polled for
// cancellation by bytes scanned, not only every 4,096 strings: a
// cancelled search returns at once, partial, with the marker, the
// scanned range short of the file's end and coverage.cancelled. GNU
// strings finds the same first string.
func TestSearchStringsCancelsWithinLongStrings(t *testing.T) {
	needTool(t, "strings")
	var b bytes.Buffer
	b.WriteString("INQUEST-MARKER\n")
	run1 := bytes.Repeat([]byte{'a'}, 1<<20)
	for range 64 {
		b.Write(run1)
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "long.txt")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(run(t, "strings", "-a", p), "\n"); first != "INQUEST-MARKER" {
		t.Fatalf("GNU strings' first string %q", first)
	}
	r := registry(t, t.TempDir())
	raw, _ := json.Marshal(map[string]any{"path": p, "encodings": []string{"ascii"}, "limit": 1000})
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(8)
	res, err := r.Call(ctx, "search_strings", raw)
	if err != nil {
		t.Fatalf("cancelled search: %v", err)
	}
	body, _ := contract.Marshal(res, nil)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	cov := m["coverage"].(map[string]any)
	sc, _ := cov["scanned"].(map[string]any)
	got := rows(m)
	if m["status"] != "partial" || cov["cancelled"] != true || sc == nil || len(got) == 0 {
		t.Fatalf("status %v coverage %v, %d rows", m["status"], cov, len(got))
	}
	if txt := got[0].(map[string]any)["text"]; txt != "INQUEST-MARKER" {
		t.Errorf("first row %v, want the marker", got[0])
	}
	var to int
	fmt.Sscan(sc["to"].(string), &to)
	if to <= 0 || to >= b.Len() {
		t.Errorf("scanned to %d of %d bytes: not cut short", to, b.Len())
	}
}
