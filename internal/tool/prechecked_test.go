package tool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestCallPrechecked: CallPrechecked hands the caller's arguments to the
// handler without compiling or applying the input schema (a schema that
// does not compile is never read), normalizes absent arguments and
// integral decimals as Call does, and keeps Call's unknown-tool error and
// typed failures; Call on the same registry still validates.
func TestCallPrechecked(t *testing.T) {
	var got demoArgs
	tl := Define(Tool{Name: "demo", Toolset: Proc, Input: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"limit":{"type":"integer","minimum":1,"maximum":"not a number"}}}`)},
		func(ctx context.Context, a demoArgs) (*contract.Result, error) {
			got = a
			if a.Limit == 7 {
				return nil, contract.Errorf(contract.CodeReferenceInvalid, "seven")
			}
			return contract.NewResult("test", time.Time{}, map[string]any{}), nil
		})
	r := NewRegistry()
	r.MustAdd(tl)
	if _, err := r.CallPrechecked(context.Background(), "demo", json.RawMessage(`{"limit":3.0}`)); err != nil || got.Limit != 3 {
		t.Fatalf("CallPrechecked: %v, decoded %+v", err, got)
	}
	got = demoArgs{Limit: -1}
	if _, err := r.CallPrechecked(context.Background(), "demo", nil); err != nil || got.Limit != 0 {
		t.Fatalf("CallPrechecked without arguments: %v, decoded %+v", err, got)
	}
	if _, err := r.CallPrechecked(context.Background(), "demo", json.RawMessage(`{"limit":7}`)); contract.AsError(err).Code != contract.CodeReferenceInvalid {
		t.Fatalf("handler error: %v", err)
	}
	if _, err := r.CallPrechecked(context.Background(), "nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	// The schema was never compiled: Call compiles it and reports it.
	if _, err := r.Call(context.Background(), "demo", json.RawMessage(`{"limit":3}`)); contract.AsError(err).Code != contract.CodeInternalError {
		t.Fatalf("Call with a schema that does not compile: %v", err)
	}
}
