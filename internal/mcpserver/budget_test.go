package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// budgetRegistry holds two tools: see_budget reports the result budget its
// call carried; big_result returns n rows of 100 bytes, one result that is
// not a page.
func budgetRegistry(t *testing.T) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	err := reg.Add(
		tool.Tool{Name: "see_budget", Toolset: tool.Bin, Title: "Budget", Description: "Reports its budget. No required arguments.",
			Input: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
			Handler: func(ctx context.Context, _ json.RawMessage) (*contract.Result, error) {
				return contract.NewResult("", time.Time{}, map[string]any{"budget": tool.ResultBudget(ctx), "row_budget": tool.RowBudget(ctx)}), nil
			}},
		tool.Tool{Name: "big_result", Toolset: tool.Bin, Title: "Big", Description: "Returns n rows. Requires n.",
			Input: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer","minimum":0}}}`),
			Handler: func(ctx context.Context, raw json.RawMessage) (*contract.Result, error) {
				var a struct{ N int }
				json.Unmarshal(raw, &a)
				rows := make([]string, a.N)
				for i := range rows {
					rows[i] = strconv.Itoa(i) + ":" + strings.Repeat("x", 98-len(strconv.Itoa(i)))
				}
				return contract.NewResult("", time.Time{}, map[string]any{"rows": rows}), nil
			}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func budgetSession(t *testing.T, opts Options) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := New(budgetRegistry(t), opts).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type envelope struct {
	Status   string   `json:"status"`
	Warnings []string `json:"warnings"`
	Data     struct {
		Budget    int      `json:"budget"`
		RowBudget int      `json:"row_budget"`
		Rows      []string `json:"rows"`
	} `json:"data"`
}

func callEnvelope(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (envelope, int) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %v", name, err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	sc, _ := json.Marshal(res.StructuredContent)
	var e envelope
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		t.Fatal(err)
	}
	// As delivered: structuredContent, and the text block as the JSON
	// string it travels as (escaped).
	tj, _ := json.Marshal(text)
	return e, len(tj) + len(sc)
}

// TestResultBudget: every call carries the session's budget (the default,
// or --max-result-bytes, clamped to the hard limit), and a result larger
// than the budget that is not a page is delivered whole with a warning
// naming its size and the budget.
func TestResultBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want int
	}{
		{"default", 0, tool.DefaultResultBytes},
		{"raised", 200 << 10, 200 << 10},
		{"lowered", 20 << 10, 20 << 10},
		{"above the hard limit", 64 << 20, tool.HardResultBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := budgetSession(t, Options{Version: "test", MaxResultBytes: tc.max})
			e, _ := callEnvelope(t, cs, "see_budget", nil)
			if e.Data.Budget != tc.want {
				t.Errorf("call saw budget %d, want %d", e.Data.Budget, tc.want)
			}
			if e.Data.RowBudget >= tc.want/2 || e.Data.RowBudget < 1 {
				t.Errorf("row budget %d does not leave room for the second copy and the envelope of a %d-byte budget", e.Data.RowBudget, tc.want)
			}
			if len(e.Warnings) != 0 {
				t.Errorf("a small result carries warnings: %q", e.Warnings)
			}
		})
	}

	cs := budgetSession(t, Options{Version: "test", MaxResultBytes: 20 << 10})
	// 80 rows of ~100 bytes: ~8.5 KB of envelope, 17 KB delivered: within.
	e, size := callEnvelope(t, cs, "big_result", map[string]any{"n": 80})
	if len(e.Warnings) != 0 || size > 20<<10 {
		t.Fatalf("within the budget (%d bytes): warnings %q", size, e.Warnings)
	}
	// 300 rows: over the budget; delivered whole, with the size named.
	e, size = callEnvelope(t, cs, "big_result", map[string]any{"n": 300})
	if len(e.Data.Rows) != 300 {
		t.Fatalf("the over-budget result lost rows: %d of 300", len(e.Data.Rows))
	}
	if e.Status != "complete" {
		t.Errorf("status %q: the result is whole", e.Status)
	}
	if len(e.Warnings) != 1 {
		t.Fatalf("warnings %q, want the one size warning", e.Warnings)
	}
	w := e.Warnings[0]
	// The named size is what was measured before the warning was added;
	// the delivered size is that plus two copies of the warning.
	var named int
	for _, f := range strings.Fields(w) {
		if n, err := strconv.Atoi(f); err == nil {
			named = n
			break
		}
	}
	wj, _ := json.Marshal(w)
	if named <= 20<<10 || named+2*(len(wj)+1) < size-8 || named > size {
		t.Errorf("warning names %d bytes; delivered %d: %q", named, size, w)
	}
	if !strings.Contains(w, strconv.Itoa(20<<10)) || !strings.Contains(w, "--max-result-bytes") {
		t.Errorf("warning does not name the budget and how to raise it: %q", w)
	}
	// big_result has no argument that narrows it: none is advised.
	if strings.Contains(w, "narrow") || strings.Contains(w, "limit") || strings.Contains(w, "filter") {
		t.Errorf("warning advises arguments big_result lacks: %q", w)
	}
}

// TestNarrowing: the over-budget warning advises only the narrowing
// arguments the tool's input schema has.
func TestNarrowing(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"n":{}}}`, "[]"},
		{`{"type":"object","properties":{"path":{},"limit":{},"cursor":{}}}`, "[limit]"},
		{`{"type":"object","properties":{"page_size":{},"filter":{},"projection":{}}}`, "[filter projection page_size]"},
		{`not json`, "[]"},
	} {
		if got := fmt.Sprint(Narrowing(json.RawMessage(tc.schema))); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.schema, got, tc.want)
		}
	}
	if w := OverBudgetWarning(70000, 65536, "limit"); !strings.Contains(w, "narrow the call (limit) or raise the budget") {
		t.Errorf("%q", w)
	}
}
