package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// startMapper starts the testbuild loader, which dlopens lib and blocks
// until its stdin closes (at the end of the test).
func startMapper(t *testing.T, loader, lib string) int {
	t.Helper()
	cmd := exec.Command(loader, lib)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("loader: %q %v", line, err)
	}
	go io.Copy(io.Discard, out)
	return cmd.Process.Pid
}

// fuserPIDs is fuser(1)'s answer for path: the PIDs it reports using the
// file (a mapped file is access "m"), sorted.
func fuserPIDs(t *testing.T, path string) []int {
	t.Helper()
	out, err := exec.Command("fuser", path).Output() // PIDs on stdout, the rest on stderr
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
		t.Fatalf("fuser %s: %v", path, err)
	}
	var pids []int
	for _, m := range regexp.MustCompile(`\d+`).FindAllString(string(out), -1) {
		n, _ := strconv.Atoi(m)
		pids = append(pids, n)
	}
	slices.Sort(pids)
	return pids
}

// TestInspectBinaryMappedBy: two live processes map a library the test
// built; inspect_binary on it names them (with process_refs the proc tools
// accept), as fuser(1) does in the same run; a copy nobody maps has count
// 0; before any proc host runs mapped_by is unknown and none is started.
func TestInspectBinaryMappedBy(t *testing.T) {
	if _, err := exec.LookPath("fuser"); err != nil {
		t.Skip("fuser (psmisc) not installed; .ci/run installs it")
	}
	dl := testbuild.BuildDLOpen(t)
	base := t.TempDir()
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, filepath.Join(base, k))
	}
	t.Setenv("INQUEST_CONFIG", filepath.Join(base, "inquest.toml"))
	t.Setenv("INQUEST_DATA_DIR", "")
	dir := t.TempDir()
	mapped, unmapped := filepath.Join(dir, "libmapped.so"), filepath.Join(dir, "libunmapped.so")
	for _, p := range [][2]string{{dl.LibA, mapped}, {dl.LibB, unmapped}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pids := []int{startMapper(t, dl.Loader, mapped), startMapper(t, dl.Loader, mapped)}
	slices.Sort(pids)

	rt, err := newRuntime(context.Background(), runtimeOptions{MCP: true, InProcess: true, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	call := func(name string, args any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(args)
		res, err := rt.Registry.Call(context.Background(), name, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var d map[string]any
		raw, _ := json.Marshal(res.Data)
		json.Unmarshal(raw, &d)
		return d
	}
	mappedBy := func(path string) map[string]any {
		t.Helper()
		m, ok := call("inspect_binary", map[string]any{"path": path})["mapped_by"].(map[string]any)
		if !ok {
			t.Fatalf("inspect_binary %s: no mapped_by", path)
		}
		return m
	}

	// No proc tool was called: the in-process host does not run, and
	// inspect_binary does not start it.
	if m := mappedBy(mapped); m["state"] != "unknown" || m["reason"] == "" {
		t.Fatalf("mapped_by before any host: %v", m)
	}
	call("list_processes", map[string]any{"limit": 1})

	m := mappedBy(mapped)
	want := fuserPIDs(t, mapped)
	if !slices.Equal(want, pids) {
		t.Fatalf("fuser %s = %v, want the loaders %v", mapped, want, pids)
	}
	// complete says whether every process's maps could be read (fuser
	// reads the same files with the same rights: its answer is the same
	// lower bound).
	if m["state"] != "known" || m["complete"] != (m["processes_unreadable"] == float64(0)) || m["count"] != float64(len(want)) {
		t.Fatalf("mapped_by of %s: %v, fuser says %v", mapped, m, want)
	}
	var got []int
	for _, p := range m["processes"].([]any) {
		row := p.(map[string]any)
		got = append(got, int(row["pid"].(float64)))
		ref, _ := row["process_ref"].(string)
		if ref == "" || row["name"] != "loader" {
			t.Fatalf("mapped_by row %v: want a process_ref and name loader", row)
		}
		info := call("get_process_info", map[string]any{"process_ref": ref})
		if rows, _ := info["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["pid"] != row["pid"] {
			t.Fatalf("get_process_info with a mapped_by process_ref: %v", info)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("mapped_by pids %v, fuser %v", got, want)
	}

	m = mappedBy(unmapped)
	if w := fuserPIDs(t, unmapped); len(w) != 0 {
		t.Fatalf("fuser says %v map %s", w, unmapped)
	}
	if m["state"] != "known" || m["count"] != float64(0) || len(m["processes"].([]any)) != 0 {
		t.Fatalf("mapped_by of an unmapped copy: %v", m)
	}
}
