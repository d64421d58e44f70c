package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// runCLI runs inquest with args over an in-process host and a private
// inquest.toml.
func runInvCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), code
}

// runInvCLIFail runs a command expected to fail in text mode: it returns
// its standard error after checking standard output is empty (text-mode
// errors are told on standard error only).
func runInvCLIFail(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	if out.Len() > 0 {
		t.Errorf("%q: a failing text-mode command wrote to stdout: %s", args, out.String())
	}
	return errb.String(), code
}

func TestTrackProfileHistoryCLI(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "inquest.toml")
	t.Setenv("INQUEST_CONFIG", cfg)
	t.Setenv(inProcessEnv, "1")

	out, code := runInvCLI(t, "track", "add", "Postgres")
	if code != 0 || !strings.Contains(out, "succeeded") || !strings.Contains(out, "postgres") {
		t.Fatalf("track add: %d %s", code, out)
	}
	// Persisted: a new host (a new command) sees it.
	out, code = runInvCLI(t, "track", "list")
	if code != 0 || !strings.Contains(out, "names: postgres") {
		t.Fatalf("track list: %d %s", code, out)
	}
	out, code = runInvCLIFail(t, "track", "add", "x", "--expected-revision", "stale-1")
	if code != 1 || !strings.Contains(out, "STATE_CONFLICT") {
		t.Fatalf("stale revision: %d %s", code, out)
	}
	out, code = runInvCLI(t, "profile", "save-as", "db")
	if code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("save-as: %d %s", code, out)
	}
	out, code = runInvCLIFail(t, "profile", "save-as", "DB")
	if code != 1 || !strings.Contains(out, "STATE_CONFLICT") {
		t.Fatalf("duplicate: %d %s", code, out)
	}
	out, code = runInvCLI(t, "profile", "list")
	if code != 0 || !strings.Contains(out, "*") || !strings.Contains(out, "postgres") {
		t.Fatalf("profile list: %d %s", code, out)
	}
	out, code = runInvCLI(t, "history", "--metric", "memory_total_bytes,process_count")
	if code != 0 || !strings.Contains(out, "memory_total_bytes") || !strings.Contains(out, "SAMPLES") {
		t.Fatalf("history: %d %s", code, out)
	}
	// Naming a CPU rate makes the in-process host's first call wait for
	// its second sample, so two samples are retained.
	out, code = runInvCLI(t, "history", "--metric", "process_count,system_cpu_percent", "--raw", "--limit", "1")
	if code != 0 || strings.Count(out, "\n") < 3 {
		t.Fatalf("history raw (two samples over two pages): %d %s", code, out)
	}
	out, code = runInvCLIFail(t, "wait", "present", "no-such-process-inquest", "--timeout", "1500ms")
	if code != 1 || !strings.Contains(out, "TIMEOUT") || !strings.Contains(out, "last observation:") {
		t.Fatalf("wait timeout: %d %s", code, out)
	}
	out, code = runInvCLI(t, "wait", "metric", "memory_total_bytes", ">", "0", "--system", "--timeout", "60s")
	if code != 0 || !strings.Contains(out, `"satisfied": true`) {
		t.Fatalf("wait metric: %d %s", code, out)
	}
}

// inquest confirm lists and decides pending confirmations on a host; the
// profile delete it confirms was requested by another session.
func TestConfirmCommand(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	h, err := host.New(host.Options{Version: "test", Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	client := h.NewSession()
	human := h.NewSession()
	call := func(s *host.Session) hostCaller {
		return func(ctx context.Context, method string, args any) (*contract.Result, error) {
			b, _ := json.Marshal(args)
			if args == nil {
				b = []byte("{}")
			}
			return h.Dispatch(ctx, s, method, b)
		}
	}
	get := func(method string, args any) map[string]any {
		res, err := call(client)(context.Background(), method, args)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		remarshal(res.Data, &d)
		return d
	}
	rev := get("get_tracking", nil)["revision"]
	d := get("update_profile", map[string]any{"operation_id": "s1", "expected_revision": rev, "action": "save_as", "name": "p"})
	prof := d["outcome"].(map[string]any)["profile"].(map[string]any)
	rev = get("get_tracking", nil)["revision"]
	d = get("update_profile", map[string]any{"operation_id": "del", "expected_revision": rev, "action": "delete", "profile_id": prof["profile_id"], "profile_revision": prof["revision"]})
	if d["state"] != "pending_confirmation" {
		t.Fatalf("delete %v", d)
	}
	var out bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &out}
	if err := runConfirm(context.Background(), env, call(human), nil, false, false); err != nil || !strings.Contains(out.String(), "del (update_profile)") {
		t.Fatalf("list: %v %s", err, out.String())
	}
	out.Reset()
	if err := runConfirm(context.Background(), env, call(client), []string{"del"}, false, false); contract.CodeOf(err) != contract.CodePermissionDenied {
		t.Fatalf("the requester confirmed its own action: %v %s", err, out.String())
	}
	out.Reset()
	if err := runConfirm(context.Background(), env, call(human), []string{"del"}, false, false); err != nil || !strings.Contains(out.String(), "del: succeeded") {
		t.Fatalf("confirm: %v %s", err, out.String())
	}
	if ps := get("list_profiles", nil)["profiles"].([]any); len(ps) != 0 {
		t.Fatalf("profile not deleted: %v", ps)
	}
}

// An in-process host (INQUEST_IN_PROCESS=1, like `inquest mcp
// --in-process`) cannot receive a local decision: a profile delete fails
// at once with UNSUPPORTED naming the shared host, never a pending state
// that could only time out, and the profile stays.
func TestInProcessRefusesConfirmation(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv(inProcessEnv, "1")
	if out, code := runInvCLI(t, "profile", "save-as", "p3"); code != 0 {
		t.Fatalf("save-as: %d %s", code, out)
	}
	out, code := runInvCLIFail(t, "profile", "delete", "p3")
	if code != 1 || !strings.Contains(out, "UNSUPPORTED") || !strings.Contains(out, "in-process") || strings.Contains(out, "pending_confirmation") {
		t.Fatalf("delete on an in-process host: %d %s", code, out)
	}
	if out, _ := runInvCLI(t, "profile", "list"); !strings.Contains(out, "p3") {
		t.Fatalf("profile gone: %s", out)
	}
}

// Tracked names and profile names are user-controlled: tables and
// operation lines show their control characters escaped, never raw ESC
// sequences or line breaks.
func TestTrackProfileEscapeControls(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv(inProcessEnv, "1")
	for _, args := range [][]string{
		{"track", "add", "ev\x1b[31mil\nNM"},
		{"track", "list"},
		{"profile", "save-as", "pr\x1b[2Jof\nX"},
		{"profile", "list"},
	} {
		out, code := runInvCLI(t, args...)
		if code != 0 {
			t.Fatalf("%q: %d %s", args, code, out)
		}
		if strings.ContainsAny(out, "\x1b\u009b") || strings.Contains(out, "il\nNM") || strings.Contains(out, "of\nX") {
			t.Fatalf("%q printed raw control characters: %q", args, out)
		}
		if args[1] != "save-as" && !strings.Contains(out, `\x1b`) {
			t.Fatalf("%q: escaped name missing: %q", args, out)
		}
	}
}

// printPending escapes control characters in the operation id and in the
// action block, including C1 controls that encoding/json leaves raw.
func TestPrintPendingEscapes(t *testing.T) {
	res := contract.NewResult("live", time.Time{}, map[string]any{"operations": []any{map[string]any{
		"operation_id": "op\x1b[2J", "tool": "update_profile",
		"confirmation": map[string]any{"expires_at": "2026-01-01T00:00:00Z", "action": map[string]any{"name": "a\u009b31mb\x7f"}},
	}}})
	var out bytes.Buffer
	if err := printPending(&out, res); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\u009b\x7f") || !strings.Contains(out.String(), `op\x1b[2J`) {
		t.Fatalf("%q", out.String())
	}
}

// Explicit out-of-range size flags reach the tools, whose schemas reject
// them: INVALID_ARGUMENT and exit 1, never a silent default.
func TestSizeFlagsOutOfRange(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	t.Setenv(inProcessEnv, "1")
	for _, args := range [][]string{
		{"history", "--metric", "memory_total_bytes", "--limit", "0"},
		{"history", "--metric", "memory_total_bytes", "--raw", "--limit", "-3"},
		{"history", "--metric", "memory_total_bytes", "--raw", "--limit", "5001"},
		{"evidence", "query", "--page-size", "0"},
		{"evidence", "query", "--page-size", "201"},
	} {
		out, code := runInvCLIFail(t, args...) // text mode: the error on stderr only
		if code != 1 || !strings.Contains(out, "INVALID_ARGUMENT") {
			t.Fatalf("%q: exit %d\n%s", args, code, out)
		}
	}
	if out, code := runInvCLI(t, "history", "--metric", "memory_total_bytes", "--raw", "--limit", "1"); code != 0 {
		t.Fatalf("--limit 1: %d %s", code, out)
	}
}

// A failing proc command in text mode tells its error on stderr only
// (`inquest lsof PID > out` leaves out empty); with --json the error
// envelope is its stdout.
func TestTextModeErrorsOnStderrOnly(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv(inProcessEnv, "1")
	// The largest Linux PID, which no process has here.
	const gone = "4194304"
	if _, err := os.Stat("/proc/" + gone); err == nil {
		t.Skip("a process has PID " + gone)
	}
	for _, args := range [][]string{{"lsof", gone}, {"threads", gone}, {"history", "--metric", "rss_bytes", "--pid", gone}, {"top", "--metric", "no_such_metric"}} {
		errText, code := runInvCLIFail(t, args...)
		if code != 1 || !strings.HasPrefix(errText, "inquest") || strings.Contains(errText, `"error"`) {
			t.Errorf("%q: exit %d, stderr %q", args, code, errText)
		}
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"lsof", gone, "--json"}, strings.NewReader(""), &out, &errb)
	var env map[string]any
	if code != 1 || json.Unmarshal(out.Bytes(), &env) != nil || env["error"] == nil {
		t.Fatalf("lsof --json: exit %d, stdout %q", code, out.String())
	}
}
