package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeWSHAR writes a Chrome-shaped HAR with one WebSocket connection of n
// alternating text frames (frame i's payload "m<i>", "M<i>" at position
// changed); frames=false leaves _webSocketMessages out.
func writeWSHAR(t *testing.T, path string, n, changed int, frames bool) {
	t.Helper()
	var ms []map[string]any
	for i := 1; i <= n; i++ {
		typ, data := "send", fmt.Sprintf("m%d", i)
		if i%2 == 0 {
			typ = "receive"
		}
		if i == changed {
			data = fmt.Sprintf("M%d", i)
		}
		ms = append(ms, map[string]any{"type": typ, "time": 1764439200 + float64(i), "opcode": 1, "data": data})
	}
	e := map[string]any{"time": 1, "_resourceType": "websocket",
		"request":  map[string]any{"method": "GET", "url": "ws://127.0.0.1:9/ws"},
		"response": map[string]any{"status": 101, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}}}
	if frames {
		e["_webSocketMessages"] = ms
	}
	b, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": []any{e}}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHARWebSocketCommands: har show lists the connection and its frames;
// har diff names the first differing frame with both digests, and a
// capture without frames is unavailable.
func TestHARWebSocketCommands(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	dir := t.TempDir()
	a, b, none := filepath.Join(dir, "a.har"), filepath.Join(dir, "b.har"), filepath.Join(dir, "none.har")
	writeWSHAR(t, a, 50, 0, true)
	writeWSHAR(t, b, 50, 37, true)
	writeWSHAR(t, none, 0, 0, false)

	out, errs, code := runCLI(t, "har", "show", "--complete", a)
	if code != 0 || !strings.Contains(out, "WebSocket connections") || !strings.Contains(out, "ws://127.0.0.1:9/ws") || !strings.Contains(out, "25 (1×25)") || !strings.Contains(out, "complete") {
		t.Errorf("har show: %d %s %s", code, out, errs)
	}
	out, errs, code = runCLI(t, "har", "show", "--frames", "0", "--limit", "3", a)
	if code != 0 || !strings.Contains(out, `"m3"`) || strings.Contains(out, `"m4"`) || !strings.Contains(errs, "--cursor") {
		t.Errorf("har show --frames: %d %s %s", code, out, errs)
	}
	out, _, code = runCLI(t, "har", "show", "--frames", "0", none)
	if code != 0 || !strings.Contains(out, "frames unavailable") {
		t.Errorf("har show --frames without frames: %d %s", code, out)
	}
	out, errs, code = runCLI(t, "har", "show", "--frames", "7", a)
	if code != 1 || out != "" || !strings.Contains(errs, "INVALID_ARGUMENT") {
		t.Errorf("har show --frames of a missing connection: %d %s", code, out)
	}
	out, errs, code = runCLI(t, "har", "diff", "--left-complete", "--right-complete", a, b)
	if code != 0 || !strings.Contains(out, "first differing frame: send position 19") || !strings.Contains(out, "position 37") || !strings.Contains(out, `"m37"`) || !strings.Contains(out, `"M37"`) || !strings.Contains(out, "independent_difference") {
		t.Errorf("har diff: %d %s %s", code, out, errs)
	}
	out, _, code = runCLI(t, "har", "diff", "--left-complete", "--right-complete", a, none)
	if code != 0 || !strings.Contains(out, "\nunavailable  GET") || strings.Contains(out, "\"equal\"") || strings.Contains(out, "\nequal") {
		t.Errorf("har diff without frames: %d %s", code, out)
	}
	// A cancelled context (SIGINT/SIGTERM in cmd/inquest) ends the command
	// with CANCELLED.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e strings.Builder
	if code := Run(ctx, []string{"har", "diff", "--json", a, b}, strings.NewReader(""), &o, &e); code == 0 || !strings.Contains(o.String()+e.String(), "CANCELLED") {
		t.Errorf("cancelled: %d %s %s", code, o.String(), e.String())
	}
}
