//go:build linux

package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// TestLongCommandLine: a process with a 206 KB command line (2,000
// arguments of 102 bytes): list_processes cuts it at
// sample.RowCommandLineBytes with command_line_truncated, the full length
// and sha256 of /proc/PID/cmdline (wc -c and sha256sum agree), and
// get_process_info pages through all of it by command_line_offset with
// every result within 64 KiB; the pages joined are the argv.
func TestLongCommandLine(t *testing.T) {
	args := []string{"-c", "sleep 600; :", "longargs"}
	for i := 0; i < 2000; i++ {
		a := strconv.Itoa(i) + "-"
		args = append(args, a+strings.Repeat("x", 102-len(a)))
	}
	cmd := exec.Command("/bin/sh", args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	ref := refOfPID(t, h, s, cmd.Process.Pid)
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	wantSum := hex.EncodeToString(sum[:])
	if out, err := exec.Command("sha256sum", "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/cmdline").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) == 0 || f[0] != wantSum {
			t.Fatalf("sha256sum says %q, Go says %s", out, wantSum)
		}
	}
	want := append([]string{"/bin/sh"}, args...)
	if len(raw) < 200000 {
		t.Fatalf("command line is %d bytes", len(raw))
	}

	d, res := mustCall(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"pid": cmd.Process.Pid}, "projection": []string{"command_line"}})
	rows, _ := d["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("rows %d", len(rows))
	}
	r := rows[0].(map[string]any)
	cl, _ := r["command_line"].(map[string]any)
	vals, _ := cl["value"].([]any)
	used := 0
	for i, v := range vals {
		if v != want[i] {
			t.Fatalf("row argument %d differs", i)
		}
		used += len(want[i]) + 1
	}
	if r["command_line_truncated"] != true || r["command_line_bytes"] != strconv.Itoa(len(raw)) || r["command_line_sha256"] != wantSum ||
		r["command_line_arguments"] != float64(len(want)) || r["command_line_next_offset"] != float64(len(vals)) || used > sample.RowCommandLineBytes || len(vals) == 0 {
		t.Errorf("row: truncated %v bytes %v sha %v arguments %v next %v; %d arguments in %d bytes",
			r["command_line_truncated"], r["command_line_bytes"], r["command_line_sha256"], r["command_line_arguments"], r["command_line_next_offset"], len(vals), used)
	}
	if res.Status != "partial" || covOf(res)["command_line_truncated"] != float64(1) {
		t.Errorf("list status %s coverage %v", res.Status, covOf(res))
	}

	var got []string
	off := 0
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("paging does not end")
		}
		a := map[string]any{"process_ref": ref, "fields": []string{"command_line"}}
		if pages > 0 {
			a["command_line_offset"] = off
		}
		d, res, err := dispatch(t, h, s, "get_process_info", a)
		if err != nil {
			t.Fatal(err)
		}
		for d["state"] == "running" {
			d, res, err = dispatch(t, h, s, "get_job", map[string]any{"job_id": d["job_id"], "wait_ms": 5000})
			if err != nil {
				t.Fatal(err)
			}
		}
		if d["state"] != "succeeded" {
			t.Fatalf("page %d: job %v", pages, d["state"])
		}
		capID := d["capture_id"]
		d, res, err = dispatch(t, h, s, "read_capture", map[string]any{"capture_id": capID})
		if err != nil {
			t.Fatal(err)
		}
		// the default first page is the whole answer: one row
		if b, _ := json.Marshal(res); len(b) > 64<<10 {
			t.Fatalf("page %d: %d bytes", pages, len(b))
		}
		var rows []map[string]any
		rs, _ := d["rows"].([]any)
		for _, r := range rs {
			rows = append(rows, r.(map[string]any))
		}
		if _, _, err := dispatch(t, h, s, "release_capture", map[string]any{"capture_id": capID}); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Fatalf("page %d rows %d", pages, len(rows))
		}
		r := rows[0]
		cl, _ := r["command_line"].(map[string]any)
		vals, _ := cl["value"].([]any)
		for _, v := range vals {
			got = append(got, v.(string))
		}
		if r["command_line_truncated"] != true || r["command_line_sha256"] != wantSum || r["command_line_bytes"] != strconv.Itoa(len(raw)) {
			t.Fatalf("page %d: %v %v %v", pages, r["command_line_truncated"], r["command_line_sha256"], r["command_line_bytes"])
		}
		next, ok := r["command_line_next_offset"].(float64)
		if !ok {
			break
		}
		if int(next) != off+len(vals) {
			t.Fatalf("page %d: next %v after %d+%d", pages, next, off, len(vals))
		}
		off = int(next)
	}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("pages joined: %d arguments, want %d", len(got), len(want))
	}
}
