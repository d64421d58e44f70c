//go:build linux

package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startedLine matches the --verbose line of a started execution.
var startedLine = regexp.MustCompile(`^inquest capture: execution 1/1 started \(case target, block 0\): pid (\d+), process_ref (\S+)$`)

// TestCaptureCLINamesWorkload: `inquest capture --verbose` prints each
// execution's start (pid, process_ref) and end on stderr, and only the
// result on stdout. Without a running host the process_ref is unknown and
// says why, and no host is started; with one (serve --detach), the line
// names the workload's process_ref while it still runs (it blocks on a
// FIFO the test writes), the proc tools accept it, and the JSON result's
// execution row names the same pid and process_ref.
func TestCaptureCLINamesWorkload(t *testing.T) {
	e := newHeEnv(t)
	dir := t.TempDir()
	cmd := exec.Command(e.bin, "capture", "--verbose", "--provider", "direct", "--cwd", dir, "--", "true")
	cmd.Env = e.env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "inquest capture: execution 1/1 started (case target, block 0): pid ") ||
		!strings.Contains(lines[0], "process_ref unknown: no proc host could be reached") ||
		!regexp.MustCompile(`^inquest capture: execution 1/1 ended \(case target, block 0\): pid \d+ exited 0 after `).MatchString(lines[1]) {
		t.Fatalf("stderr without a host:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "inquest capture:") || !strings.Contains(stdout.String(), "CASE") {
		t.Fatalf("stdout is not the result table alone:\n%s", stdout.String())
	}
	if e.hostPID() != 0 {
		t.Fatal("a capture started a host")
	}

	if out, code := e.run("serve", "--detach"); code != 0 {
		t.Fatalf("serve --detach: %s", out)
	}
	fifo := filepath.Join(dir, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(e.bin, "capture", "--verbose", "--json", "--provider", "direct", "--cwd", dir, "--", "sh", "-c", `read x < "$0"`, fifo)
	cmd.Env = e.env
	stdout.Reset()
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.WriteString("x\n")
				f.Close()
			}
		}
	}
	defer func() {
		// A failed test may leave the capture running: end it (its
		// workload dies with it) rather than block on the FIFO.
		if !released {
			cmd.Process.Kill()
		}
		cmd.Wait()
	}()
	sc := bufio.NewScanner(errPipe)
	if !sc.Scan() {
		t.Fatalf("no stderr line: %v", sc.Err())
	}
	m := startedLine.FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("started line %q", sc.Text())
	}
	pid, ref := m[1], m[2]
	b := e.bridge()
	info := b.mustCall("get_process_info", map[string]any{"process_ref": ref})
	rows, _ := dig(info, "data", "rows").([]any)
	if len(rows) != 1 || strconv.Itoa(int(rows[0].(map[string]any)["pid"].(float64))) != pid || rows[0].(map[string]any)["comm"] != "sh" {
		t.Fatalf("get_process_info %s while the capture runs: %v", ref, info)
	}
	release()
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("capture: %v %s", err, rest)
	}
	if len(rest) != 1 || !strings.HasPrefix(rest[0], "inquest capture: execution 1/1 ended (case target, block 0): pid "+pid+" exited 0 after ") {
		t.Fatalf("stderr after the start: %q", rest)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &env); err != nil {
		t.Fatalf("stdout is not one JSON envelope: %v\n%s", err, stdout.String())
	}
	row := dig(env, "data", "capture", "executions").([]any)[0].(map[string]any)
	if strconv.Itoa(int(row["pid"].(float64))) != pid || row["process_ref"] != ref {
		t.Fatalf("execution row %v, want pid %s process_ref %s", row, pid, ref)
	}
}
