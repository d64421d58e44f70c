package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestCPURateCallsWaitForSecondSample: Start returns after one sample; a
// call naming cpu_percent waits for the second and gets a value for this
// process, while a call that names no rate is answered from the first
// snapshot without waiting on it.
func TestCPURateCallsWaitForSecondSample(t *testing.T) {
	h := startedDefaultHost(t)
	s := h.NewSession()
	if _, err := h.Dispatch(context.Background(), s, "get_status", nil); err != nil {
		t.Fatalf("get_status: %v", err)
	}
	ref := h.Ref(h.Sampler().Latest().Find(int32(os.Getpid())).ID())
	args, _ := json.Marshal(map[string]any{"metric_ids": []string{"cpu_percent"}, "targets": []any{map[string]any{"process_ref": ref}}})
	res, err := h.Dispatch(context.Background(), s, "get_metrics", args)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Data)
	var d struct {
		Samples []struct {
			Values      map[string]any `json:"values"`
			Unavailable map[string]any `json:"unavailable"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(b, &d); err != nil || len(d.Samples) != 1 {
		t.Fatalf("get_metrics data %s (%v)", b, err)
	}
	if _, ok := d.Samples[0].Values["cpu_percent"]; !ok {
		t.Fatalf("cpu_percent missing after the wait for the second sample: %s", b)
	}
	if seq := h.Sampler().Latest().Seq; seq < 1 { // the first snapshot is seq 0
		t.Fatalf("snapshot seq %d after a cpu_percent call, want >= 1", seq)
	}
}

func TestNeedsRates(t *testing.T) {
	tests := []struct {
		method, args string
		want         bool
	}{
		{"get_status", `{}`, false},
		{"list_processes", `{"sort":"pid"}`, false},
		{"list_processes", `{"metric_ids":["rss_bytes","cpu_percent"]}`, true},
		{"get_metrics", `{"metric_ids":["system_cpu_percent"]}`, true},
		{"get_metrics", `{"metric_ids":["rss_bytes"]}`, false},
		{"get_system_info", `{}`, true},
		{"rank_processes", `{"metric_id":"cpu_percent"}`, true},
	}
	for _, tc := range tests {
		if got := needsRates(tc.method, json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("needsRates(%s, %s) = %v, want %v", tc.method, tc.args, got, tc.want)
		}
	}
}

// TestListProcessesMetricIDs: metric_ids put each row's values from the
// listing's snapshot on the row, the same values get_metrics gives for the
// same refs from that snapshot (the 1 h interval keeps it the latest).
func TestListProcessesMetricIDs(t *testing.T) {
	h := testHost(t, time.Hour, nil)
	s := h.NewSession()
	ids := []string{"cpu_percent", "rss_bytes", "threads", "fd_count"}
	d, _ := mustCall(t, h, s, "list_processes", map[string]any{"metric_ids": ids, "limit": 50})
	rows := d["rows"].([]any)
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	var targets []any
	for _, r := range rows {
		targets = append(targets, map[string]any{"process_ref": r.(map[string]any)["process_ref"]})
	}
	m, _ := mustCall(t, h, s, "get_metrics", map[string]any{"metric_ids": ids, "targets": targets})
	samples := m["samples"].([]any)
	if len(samples) != len(rows) {
		t.Fatalf("%d samples for %d rows", len(samples), len(rows))
	}
	for i, r := range rows {
		row, sm := r.(map[string]any), samples[i].(map[string]any)
		for _, id := range ids {
			rv, rok := row["values"].(map[string]any)[id]
			sv, sok := sm["values"].(map[string]any)[id]
			if rok != sok || rv != sv {
				t.Fatalf("pid %v %s: list_processes %v (%v), get_metrics %v (%v)", row["pid"], id, rv, rok, sv, sok)
			}
			if !rok {
				if _, ok := row["unavailable"].(map[string]any)[id]; !ok {
					t.Fatalf("pid %v %s: neither a value nor unavailable", row["pid"], id)
				}
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"metric_ids": []string{"system_cpu_percent"}})
	_, err := h.Dispatch(context.Background(), s, "list_processes", b)
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Code != contract.CodeInvalidArgument || ce.Field != "/metric_ids/0" {
		t.Fatalf("system metric in metric_ids: %v, want INVALID_ARGUMENT at /metric_ids/0", err)
	}
}

// TestStatusMethodsAreTools: get_status data.methods names exactly the
// proc tools (what an agent can call), and data.local_methods the host
// methods no MCP tool exposes, each sorted, disjoint.
func TestStatusMethodsAreTools(t *testing.T) {
	h := startedDefaultHost(t)
	res, err := h.Dispatch(context.Background(), h.NewSession(), "get_status", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Data)
	var d struct {
		Methods []string `json:"methods"`
		Local   []string `json:"local_methods"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tl := range Tools() {
		want = append(want, tl.Name)
	}
	slices.Sort(want)
	if !slices.Equal(d.Methods, want) {
		t.Errorf("methods %v, want the proc tools %v", d.Methods, want)
	}
	for _, m := range []string{ResolvePIDMethod, ConfirmMethod, PendingConfirmationsMethod, MappedByMethod} {
		if !slices.Contains(d.Local, m) {
			t.Errorf("local_methods %v lacks %s", d.Local, m)
		}
	}
	for _, m := range d.Local {
		if slices.Contains(want, m) {
			t.Errorf("%s is both a tool and a local method", m)
		}
	}
	if !slices.IsSorted(d.Local) {
		t.Errorf("local_methods not sorted: %v", d.Local)
	}
}

// startedDefaultHost starts a host with the default options and a config
// file of its own, stopped when the test ends.
func startedDefaultHost(t *testing.T) *Host {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	h, err := New(Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}
