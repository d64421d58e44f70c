package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestToolsDeclarations walks the proc toolset in both delivery modes:
// every tool has one arguments type that agrees with its schema, a host
// handler, a unique name, and the same schema properties in both modes.
func TestToolsDeclarations(t *testing.T) {
	seen := map[string]bool{}
	raw := map[string]Decl{}
	for _, d := range ToolsFor(Delivery{Raw: true}) {
		raw[d.Name] = d
	}
	for _, d := range Tools() {
		if seen[d.Name] {
			t.Errorf("%s declared twice", d.Name)
		}
		seen[d.Name] = true
		if err := tool.CheckArgs(d.Tool); err != nil {
			t.Error(err)
		}
		if err := tool.CheckArgs(raw[d.Name].Tool); err != nil {
			t.Errorf("raw mode: %v", err)
		}
		if d.Run == nil || d.Handler != nil {
			t.Errorf("%s: Run must be set and Handler nil (the bridge binds it)", d.Name)
		}
		if d.Toolset != tool.Proc {
			t.Errorf("%s: toolset %q", d.Name, d.Toolset)
		}
	}
	if len(raw) != len(seen) {
		t.Errorf("raw mode declares %d tools, normal %d", len(raw), len(seen))
	}
}

// TestDispatchLogsUntypedFailures: a host-side handler that panics or
// returns a plain error gives INTERNAL_ERROR, logged once through slog
// with the tool name; a typed error is returned as it is and not logged.
func TestDispatchLogsUntypedFailures(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	h := testHost(t, 250*time.Millisecond, nil)
	s := h.NewSession()
	h.Handle("test_panic", func(context.Context, *Session, json.RawMessage) (*contract.Result, error) { panic("boom") })
	h.Handle("test_plain", func(context.Context, *Session, json.RawMessage) (*contract.Result, error) {
		return nil, errors.New("plain failure")
	})
	h.Handle("test_typed", func(context.Context, *Session, json.RawMessage) (*contract.Result, error) {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "typed failure")
	})
	for _, tc := range []struct {
		method string
		code   contract.Code
		logged string
	}{
		{"test_panic", contract.CodeInternalError, "boom"},
		{"test_plain", contract.CodeInternalError, "plain failure"},
		{"test_typed", contract.CodeInvalidArgument, ""},
	} {
		buf.Reset()
		_, err := h.Dispatch(context.Background(), s, tc.method, nil)
		if got := contract.CodeOf(err); got != tc.code {
			t.Errorf("%s: code %s, want %s", tc.method, got, tc.code)
		}
		log := buf.String()
		if tc.logged == "" {
			if log != "" {
				t.Errorf("%s: typed failure logged: %s", tc.method, log)
			}
			continue
		}
		if strings.Count(log, "tool="+tc.method) != 1 || !strings.Contains(log, tc.logged) {
			t.Errorf("%s: want one log line naming the tool and %q, got %q", tc.method, tc.logged, log)
		}
	}
}
