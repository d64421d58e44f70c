package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestRankChecksBeforeDispatch: rank_processes arguments the schema cannot
// reject (exclusive window forms, to without from, an aggregate that does
// not suit the metric) fail in the bridge without reaching a backend, so
// no host is started for them.
func TestRankChecksBeforeDispatch(t *testing.T) {
	reached := false
	get := func(context.Context) (Backend, error) {
		reached = true
		return nil, errors.New("no backend in this test")
	}
	var handler func(context.Context, json.RawMessage) (*contract.Result, error)
	for _, tl := range Tools(get, Mode{}) {
		if tl.Name == "rank_processes" {
			handler = tl.Handler
		}
	}
	if handler == nil {
		t.Fatal("rank_processes is not a proc tool")
	}
	for args, field := range map[string]string{
		`{"metric_id":"cpu_time_ns","last_seconds":60,"from":"2026-01-01T00:00:00Z"}`: "/from",
		`{"metric_id":"cpu_time_ns","last_seconds":60,"to":"2026-01-01T00:00:00Z"}`:   "/to",
		`{"metric_id":"cpu_time_ns","to":"2026-01-01T00:00:00Z"}`:                     "/from",
		`{"metric_id":"cpu_time_ns","aggregate":"max"}`:                               "/aggregate",
	} {
		_, err := handler(context.Background(), json.RawMessage(args))
		e := contract.AsError(err)
		if e == nil || e.Code != contract.CodeInvalidArgument || e.Field != field {
			t.Errorf("%s: %v, want INVALID_ARGUMENT at %s", args, err, field)
		}
	}
	if reached {
		t.Fatal("an invalid call reached the backend")
	}
	if _, err := handler(context.Background(), json.RawMessage(`{"metric_id":"cpu_time_ns"}`)); err == nil || !reached {
		t.Fatal("a valid call did not reach the backend")
	}
}
