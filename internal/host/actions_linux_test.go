package host

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/testbuild"
)

// startLoader starts the testbuild loader on lib with extra open files
// (fds 3, 4, ...) and waits for its "ready" line; the process ends when
// the test does.
func startLoader(t *testing.T, loader, lib string, extra ...*os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(loader, lib)
	cmd.ExtraFiles = extra
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
	return cmd
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// captureRows runs start_capture kind for ref to its end and reads every
// row (one page) and the page's data.
func captureRows(t *testing.T, h *Host, s *Session, kind, ref string) ([]map[string]any, map[string]any) {
	t.Helper()
	return jobRows(t, h, s, "start_capture", map[string]any{"kind": kind, "process_ref": ref})
}

// jobRows runs the job tool method with args to its end and reads every
// row (one page) and the page's data.
func jobRows(t *testing.T, h *Host, s *Session, method string, args map[string]any) ([]map[string]any, map[string]any) {
	t.Helper()
	d, _, err := dispatch(t, h, s, method, args)
	if err != nil {
		t.Fatal(err)
	}
	id := d["job_id"].(string)
	waitFor(t, 3*time.Minute, "the capture job", func() bool {
		d, _, _ = dispatch(t, h, s, "get_job", map[string]any{"job_id": id})
		return d["state"] != "running"
	})
	if d["state"] != "succeeded" {
		t.Fatalf("job: %v", d)
	}
	p, _, err := dispatch(t, h, s, "read_capture", map[string]any{"capture_id": d["capture_id"], "limit": 5000})
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, r := range p["rows"].([]any) {
		rows = append(rows, r.(map[string]any))
	}
	return rows, p
}

func rowByPath(rows []map[string]any, path string) map[string]any {
	for _, r := range rows {
		if r["path"] == path {
			return r
		}
	}
	return nil
}

func actionsOf(t *testing.T, r map[string]any) []any {
	t.Helper()
	a, ok := r["actions"].([]any)
	if !ok {
		t.Fatalf("row without an actions list: %v", r)
	}
	return a
}

// TestRowActionsInspectBinary: a process maps a library the test built
// (kept) and another maps a copy the test then deleted, and holds a
// regular file, an unlinked file and a directory open. modules and
// open_files rows name inspect_binary exactly for the regular files still
// at their paths; the page names the call template once; get_process_info
// names the concrete call for the executable.
func TestRowActionsInspectBinary(t *testing.T) {
	dl := testbuild.BuildDLOpen(t)
	dir := t.TempDir()
	keep, gone := filepath.Join(dir, "libkeep.so"), filepath.Join(dir, "libgone.so")
	copyFile(t, dl.LibA, keep)
	copyFile(t, dl.LibB, gone)
	regular, unlinked := filepath.Join(dir, "data.txt"), filepath.Join(dir, "unlinked.txt")
	for _, p := range []string{regular, unlinked} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var extra []*os.File
	for _, p := range []string{regular, unlinked, dir} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		extra = append(extra, f)
	}
	a := startLoader(t, dl.Loader, keep, extra...)
	b := startLoader(t, dl.Loader, gone)
	if err := os.Remove(unlinked); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}

	h, s := captureHost(t)
	refA := refOfPID(t, h, s, a.Process.Pid)
	refB := refOfPID(t, h, s, b.Process.Pid)

	wantTemplate := func(p map[string]any, arg string) {
		t.Helper()
		acts, _ := p["actions"].([]any)
		if len(acts) != 1 {
			t.Fatalf("data.actions: %v", p["actions"])
		}
		tpl := acts[0].(map[string]any)
		from, _ := tpl["arguments_from_row"].(map[string]any)
		if tpl["tool"] != "inspect_binary" || from["path"] != arg {
			t.Fatalf("data.actions template: %v", tpl)
		}
	}

	mods, p := captureRows(t, h, s, "modules", refA)
	wantTemplate(p, "inspect_path")
	for _, r := range mods {
		path, _ := r["path"].(string)
		want := 0
		if path != "" && r["deleted"] == false && r["replaced"] != true {
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
				want = 1
			}
		}
		if got := actionsOf(t, r); len(got) != want || (want == 1 && got[0] != "inspect_binary") {
			t.Errorf("modules row %q: actions %v, want %d", path, got, want)
		}
		if want == 1 && r["inspect_path"] != path {
			t.Errorf("modules row %q: inspect_path %v (same mount namespace: the path itself)", path, r["inspect_path"])
		}
	}
	if r := rowByPath(mods, keep); r == nil || len(actionsOf(t, r)) != 1 {
		t.Fatalf("the mapped library %s: %v", keep, r)
	}
	if r := rowByPath(mods, dl.Loader); r == nil || len(actionsOf(t, r)) != 1 {
		t.Fatalf("the executable %s: %v", dl.Loader, r)
	}

	modsB, _ := captureRows(t, h, s, "modules", refB)
	r := rowByPath(modsB, gone)
	if r == nil || r["deleted"] != true || len(actionsOf(t, r)) != 0 {
		t.Fatalf("the deleted library %s: %v", gone, r)
	}

	files, p := captureRows(t, h, s, "open_files", refA)
	wantTemplate(p, "inspect_path")
	cases := []struct {
		path string
		want int
	}{{regular, 1}, {unlinked, 0}, {dir, 0}}
	for _, c := range cases {
		r := rowByPath(files, c.path)
		if r == nil {
			t.Fatalf("open_files has no row for %s: %v", c.path, files)
		}
		if got := actionsOf(t, r); len(got) != c.want {
			t.Errorf("open_files %s (kind %v, deleted %v): actions %v, want %d", c.path, r["kind"], r["deleted"], got, c.want)
		}
	}

	// A projection without path or actions has no template to fill.
	d, _, _ := dispatch(t, h, s, "start_capture", map[string]any{"kind": "open_files", "process_ref": refA})
	id := d["job_id"].(string)
	waitFor(t, 3*time.Minute, "the capture job", func() bool {
		d, _, _ = dispatch(t, h, s, "get_job", map[string]any{"job_id": id})
		return d["state"] != "running"
	})
	p, _, err := dispatch(t, h, s, "read_capture", map[string]any{"capture_id": d["capture_id"], "projection": []string{"fd", "path"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p["actions"]; ok {
		t.Fatalf("data.actions without the actions field: %v", p["actions"])
	}

	// get_process_info names the concrete call for the executable; the
	// result without exe names none.
	_, p = jobRows(t, h, s, "get_process_info", map[string]any{"process_ref": refA})
	acts, _ := p["actions"].([]any)
	if len(acts) != 1 {
		t.Fatalf("get_process_info data.actions: %v", p["actions"])
	}
	act := acts[0].(map[string]any)
	args, _ := act["arguments"].(map[string]any)
	if act["tool"] != "inspect_binary" || args["path"] != dl.Loader {
		t.Fatalf("get_process_info action: %v", act)
	}
	_, p = jobRows(t, h, s, "get_process_info", map[string]any{"process_ref": refA, "fields": []string{"cwd"}})
	if acts, ok := p["actions"].([]any); !ok || len(acts) != 0 {
		t.Fatalf("get_process_info without exe: data.actions %v, want []", p["actions"])
	}
}

// TestMappedByMethod: the host's mapped_by refuses a path that is not a
// regular file, and counts the caller's own mapping only when it is not
// excluded.
func TestMappedByMethod(t *testing.T) {
	h, s := captureHost(t)
	if _, _, err := dispatch(t, h, s, MappedByMethod, map[string]any{"path": t.TempDir()}); contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Fatalf("a directory: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	d, _, err := dispatch(t, h, s, MappedByMethod, map[string]any{"path": exe})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range d["processes"].([]any) {
		found = found || p.(map[string]any)["pid"] == float64(self)
	}
	if !found || d["count"].(float64) < 1 {
		t.Fatalf("the test binary maps itself: %v", d)
	}
	d, _, err = dispatch(t, h, s, MappedByMethod, map[string]any{"path": exe, "exclude_pid": self})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d["processes"].([]any) {
		if p.(map[string]any)["pid"] == float64(self) {
			t.Fatalf("exclude_pid listed: %v", d)
		}
	}
}
