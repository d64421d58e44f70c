package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every capability the server advertises in initialize is exercised here;
// one without a probe (a capability nobody implemented, such as the SDK's
// default logging, or tools.listChanged without list change
// notifications) fails the test.
func TestAdvertisedCapabilitiesAreImplemented(t *testing.T) {
	reg := tool.NewRegistry()
	err := reg.Add(tool.Tool{Name: "echo_args", Toolset: tool.Bin, Title: "Echo", Description: "Echoes. No required arguments.",
		Input: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			return contract.NewResult("", time.Time{}, map[string]any{"ok": true}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	s := New(reg, Options{Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var caps map[string]json.RawMessage
	b, _ := json.Marshal(cs.InitializeResult().Capabilities)
	json.Unmarshal(b, &caps)
	probes := map[string]func(raw json.RawMessage) error{
		"tools": func(raw json.RawMessage) error {
			var tc struct {
				ListChanged bool `json:"listChanged"`
			}
			json.Unmarshal(raw, &tc)
			if tc.ListChanged {
				t.Errorf("tools.listChanged advertised, but the tool list never changes and no notification is sent")
			}
			lt, err := cs.ListTools(ctx, nil)
			if err != nil {
				return err
			}
			if len(lt.Tools) != 1 {
				t.Errorf("tools/list: %d tools", len(lt.Tools))
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo_args", Arguments: map[string]any{}})
			if err != nil {
				return err
			}
			if res.IsError {
				t.Errorf("tools/call failed: %v", res.Content)
			}
			return nil
		},
	}
	if len(caps) == 0 {
		t.Fatal("no capabilities advertised")
	}
	for name, raw := range caps {
		probe, ok := probes[name]
		if !ok {
			t.Errorf("capability %q is advertised but nothing implements it", name)
			continue
		}
		if err := probe(raw); err != nil {
			t.Errorf("capability %q: %v", name, err)
		}
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err == nil {
		t.Error("logging/setLevel succeeded although logging is not advertised")
	}
}
