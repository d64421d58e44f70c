package ipc

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// budgetService answers every call with the result budget its context
// carried on the host side.
type budgetService struct{ fakeService }

func (b *budgetService) NewSession(Peer) Session { return budgetSession{} }

type budgetSession struct{}

func (budgetSession) Call(ctx context.Context, _ string, _ json.RawMessage) (*contract.Result, error) {
	return contract.NewResult("live", time.Time{}, map[string]int{"budget": tool.ResultBudget(ctx)}), nil
}
func (budgetSession) Close() {}

// TestResultBudgetCrossesIPC: the bridge's result budget (`inquest mcp
// --max-result-bytes`) reaches the host's handler, so proc tools that page
// on the host size pages by the session's budget; the default is not
// sent, and a host of IPC minor 0 (which refuses unknown request fields)
// is never sent the field.
func TestResultBudgetCrossesIPC(t *testing.T) {
	_, path := startServer(t, &budgetService{})
	c := dialClient(t, path)
	if c.Welcome.IPCMinor != Minor || Minor < 1 {
		t.Fatalf("welcome minor %d, package minor %d", c.Welcome.IPCMinor, Minor)
	}
	seen := func(ctx context.Context) int {
		t.Helper()
		res, err := c.Call(ctx, "any", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Data)
		var d struct{ Budget int }
		json.Unmarshal(b, &d)
		return d.Budget
	}
	if got := seen(context.Background()); got != tool.DefaultResultBytes {
		t.Errorf("no budget: the host saw %d, want the default %d", got, tool.DefaultResultBytes)
	}
	if got := seen(tool.WithResultBudget(context.Background(), 300<<10)); got != 300<<10 {
		t.Errorf("a 300 KiB budget: the host saw %d", got)
	}
	if got := seen(tool.WithResultBudget(context.Background(), 20<<10)); got != 20<<10 {
		t.Errorf("a 20 KiB budget: the host saw %d", got)
	}
	// As if the host were of minor 0: the field is not sent (the host
	// then runs the call with its default) and the connection survives.
	c.Welcome.IPCMinor = 0
	if got := seen(tool.WithResultBudget(context.Background(), 300<<10)); got != tool.DefaultResultBytes {
		t.Errorf("minor-0 host: the host saw %d", got)
	}
}
