package host

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/ipc"
)

// dispatchData calls method on session s and decodes data.
func dispatchData(t *testing.T, h *Host, s *Session, method string, args any) (map[string]any, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := h.Dispatch(context.Background(), s, method, b)
	if err != nil {
		return nil, err
	}
	var d map[string]any
	out, _ := json.Marshal(res.Data)
	json.Unmarshal(out, &d)
	return d, nil
}

// Entering Log view invalidates the cursors of live listings and live
// captures made before it: in Log view and after
// returning to Live they are CURSOR_INVALID, while listings and captures
// made afterwards page normally.
func TestLogViewInvalidatesLiveCursors(t *testing.T) {
	h := testHost(t, time.Hour, nil)
	bs := h.NewSession()
	defer bs.Close()
	MarkMCPBridge(bs)
	tuiS := h.NewSession()
	defer tuiS.Close()
	MarkLocalFace(tuiS)
	self := h.Ref(h.Sampler().Latest().Find(int32(os.Getpid())).ID())

	// live pages with a next cursor: a process listing and a finished capture
	startPages := func() (listCursor, capID, capCursor string) {
		t.Helper()
		l, err := dispatchData(t, h, bs, "list_processes", map[string]any{"limit": 1})
		if err != nil {
			t.Fatal(err)
		}
		listCursor, _ = l["next_cursor"].(string)
		c, err := dispatchData(t, h, bs, "start_capture", map[string]any{"kind": capture.KindModules, "process_ref": self, "wait_ms": 30000})
		if err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(time.Minute); c["state"] == "running" && time.Now().Before(end); {
			if c, err = dispatchData(t, h, bs, "get_job", map[string]any{"job_id": c["job_id"], "wait_ms": 1000}); err != nil {
				t.Fatal(err)
			}
		}
		capID, _ = c["capture_id"].(string)
		r, err := dispatchData(t, h, bs, "read_capture", map[string]any{"capture_id": capID, "limit": 1})
		if err != nil {
			t.Fatal(err)
		}
		capCursor, _ = r["next_cursor"].(string)
		if listCursor == "" || capCursor == "" {
			t.Fatalf("no live cursors: list %v, capture %v", l, r)
		}
		return
	}
	listCursor, capID, capCursor := startPages()
	// they page before Log view
	if _, err := dispatchData(t, h, bs, "read_capture", map[string]any{"capture_id": capID, "limit": 1, "cursor": capCursor}); err != nil {
		t.Fatalf("capture cursor in Live: %v", err)
	}

	if _, err := dispatchData(t, h, tuiS, ActivityMethod, map[string]any{"activity": "log"}); err != nil {
		t.Fatal(err)
	}
	_, err := dispatchData(t, h, bs, "read_capture", map[string]any{"capture_id": capID, "limit": 1, "cursor": capCursor})
	if contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("live capture cursor in Log view: %v", err)
	}
	if _, err := dispatchData(t, h, tuiS, ActivityMethod, map[string]any{"activity": "live"}); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]struct {
		method string
		args   map[string]any
	}{
		"capture cursor after Log view": {"read_capture", map[string]any{"capture_id": capID, "limit": 1, "cursor": capCursor}},
		"listing cursor after Log view": {"list_processes", map[string]any{"limit": 1, "cursor": listCursor}},
	} {
		_, err := dispatchData(t, h, bs, c.method, c.args)
		if e := contract.AsError(err); e == nil || e.Code != contract.CodeCursorInvalid || e.Details["cause"] != "log_view" {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// the capture itself is still readable from its first page, and new
	// listings and captures page again
	if _, err := dispatchData(t, h, bs, "read_capture", map[string]any{"capture_id": capID, "limit": 1}); err != nil {
		t.Fatalf("first page of the capture after Log view: %v", err)
	}
	listCursor, capID, capCursor = startPages()
	if _, err := dispatchData(t, h, bs, "list_processes", map[string]any{"limit": 1, "cursor": listCursor}); err != nil {
		t.Fatalf("new listing cursor: %v", err)
	}
	if _, err := dispatchData(t, h, bs, "read_capture", map[string]any{"capture_id": capID, "limit": 1, "cursor": capCursor}); err != nil {
		t.Fatalf("new capture cursor: %v", err)
	}
}

// Entering Log view cancels the live jobs of CLI connections too (an
// `inquest wait` or `inquest lsof` of the same user), not only those of
// MCP bridges; the jobs of TUI views (hello client tui_view) are theirs and
// go on.
func TestLogViewCancelsCLILiveJobs(t *testing.T) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	release := make(chan struct{})
	defer close(release)
	testHookJobRun = func(ctx context.Context, kind string) {
		select {
		case <-ctx.Done():
		case <-release:
		}
	}
	defer func() { testHookJobRun = nil }()
	h := testHost(t, time.Hour, nil)
	ep := ipc.NewHostEndpoint(h.IPCService(), "", nil)
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	defer ep.Disable()
	ctx := context.Background()
	conn := func(client string) *ipc.Client {
		c, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: "test", Client: client})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	cli, view := conn(""), conn(ipc.ClientTUIView)
	cliJob := mustIPC(t, cli, "start_capture", map[string]any{"kind": capture.KindNetwork})
	cliWait := mustIPC(t, cli, "wait_condition", map[string]any{"condition": "process_present", "process_name": "inquest-no-such-process", "timeout_ms": 60000, "wait_ms": 0})
	// another TUI: the in-process session of a TUI host
	face := h.NewSession()
	defer face.Close()
	MarkLocalFace(face)
	otherJob, err := dispatchData(t, h, face, "start_capture", map[string]any{"kind": capture.KindNetwork})
	if err != nil {
		t.Fatal(err)
	}
	if d := mustIPC(t, view, ActivityMethod, map[string]any{"activity": "log"}); d["activity"] != "log" {
		t.Fatalf("set_activity: %v", d)
	}
	wantLogViewCancelled(t, "CLI capture", mustIPC(t, cli, "get_job", map[string]any{"job_id": cliJob["job_id"]}))
	wantLogViewCancelled(t, "CLI wait", mustIPC(t, cli, "get_job", map[string]any{"job_id": cliWait["job_id"]}))
	if d, _ := dispatchData(t, h, face, "get_job", map[string]any{"job_id": otherJob["job_id"]}); d["state"] != "running" || d["cancellation_requested"] != false {
		t.Fatalf("another TUI view's capture in Log view: %v", d)
	}
}

// get_operation reports add_graphs and export_graphs operations by their
// operation_id (given or generated): the outcome of one that succeeded,
// the error of one that failed.
func TestGraphOperationsInGetOperation(t *testing.T) {
	h := testHost(t, time.Hour, nil)
	bs := h.NewSession()
	defer bs.Close()
	MarkMCPBridge(bs)
	add, err := dispatchData(t, h, bs, "add_graphs", map[string]any{"metrics": []any{map[string]any{"metric_id": "load1"}}})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := add["operation_id"].(string)
	got, err := dispatchData(t, h, bs, "get_operation", map[string]any{"operation_id": id})
	if err != nil {
		t.Fatalf("get_operation %s: %v", id, err)
	}
	out, _ := got["outcome"].(map[string]any)
	if got["state"] != "succeeded" || got["tool"] != "add_graphs" || out == nil || len(out["added"].([]any)) != 1 || got["finished_at"] == nil {
		t.Fatalf("get_operation of add_graphs: %v", got)
	}
	if _, err := dispatchData(t, h, bs, "export_graphs", map[string]any{"operation_id": "exp-1", "output_directory": t.TempDir(), "range": "ab"}); contract.CodeOf(err) != contract.CodeStateConflict {
		t.Fatalf("export without markers: %v", err)
	}
	got, err = dispatchData(t, h, bs, "get_operation", map[string]any{"operation_id": "exp-1"})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := got["error"].(map[string]any)
	if got["state"] != "failed" || got["tool"] != "export_graphs" || e["code"] != string(contract.CodeStateConflict) {
		t.Fatalf("get_operation of a failed export_graphs: %v", got)
	}
	if _, err := dispatchData(t, h, bs, "get_operation", map[string]any{"operation_id": "no-such-op"}); contract.CodeOf(err) != contract.CodeOperationUnknown {
		t.Fatalf("unknown operation: %v", err)
	}
}
