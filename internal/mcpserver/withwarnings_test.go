package mcpserver

import (
	"bytes"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestWithWarningsMatchesMarshal: replacing the warnings of an encoded
// envelope gives the bytes contract.Marshal writes for the result with
// those warnings, for results without and with warnings, with data that
// itself holds a "warnings" member and text that encoding/json escapes.
func TestWithWarningsMatchesMarshal(t *testing.T) {
	for _, tt := range []struct {
		name      string
		before    []string
		after     []string
		data      any
		timestamp bool
	}{
		{"none to one", nil, []string{"over budget <&>"}, map[string]any{"rows": []int{1, 2}}, false},
		{"two to three", []string{"a \"q\"", "é \u2028"}, []string{"a \"q\"", "é \u2028", "x"}, map[string]any{"warnings": []string{"inner"}}, true},
		{"data with the key text", []string{"w"}, []string{"w", "v"}, map[string]any{"s": `,"warnings":["no"]`}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := contract.NewResult("file", time.Unix(1e9, 5), nil)
			if !tt.timestamp {
				res.CapturedAt = nil
			}
			res.Warnings, res.Data = tt.before, tt.data
			body, _ := contract.Marshal(res, nil)
			got, delta, ok := withWarnings(body, tt.after)
			res.Warnings = tt.after
			want, _ := contract.Marshal(res, nil)
			if !ok || !bytes.Equal(got, want) {
				t.Fatalf("ok %v\n got %s\nwant %s", ok, got, want)
			}
			if DeliveredBytes(body)+delta != DeliveredBytes(want) {
				t.Fatalf("delta %d: delivered %d before, %d after", delta, DeliveredBytes(body), DeliveredBytes(want))
			}
		})
	}
	if _, _, ok := withWarnings([]byte(`{"error":{}}`), []string{"x"}); ok {
		t.Error("a failure body has no warnings member to replace")
	}
}
