//go:build linux

package capture

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	_ "net/http/pprof"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func TestLoopbackURL(t *testing.T) {
	for _, tc := range []struct {
		url      string
		loopback bool // refusal wraps ErrNotLoopback
		ok       bool
		path     string // of the accepted base URL
	}{
		{"http://127.0.0.1:6060", true, true, ""},
		{"http://127.8.9.10:6060/prefix", true, true, "/prefix"},
		{"http://[::1]:6060", true, true, ""},
		{"http://[::ffff:127.0.0.1]:6060", true, true, ""},
		{"http://localhost:6060", true, true, ""},
		// The handler prefix itself is the base's /debug/pprof.
		{"http://127.0.0.1:6061/debug/pprof/", true, true, ""},
		{"http://127.0.0.1:6061/debug/pprof", true, true, ""},
		{"http://127.0.0.1:6061/svc/debug/pprof//", true, true, "/svc"},
		{"http://127.0.0.1:6061/debug/pprof/heap", true, false, ""},
		{"http://127.0.0.1:6061/debug/pprof/heap/debug/pprof", true, false, ""},
		{"http://127.0.0.1:6061/redir?", true, false, ""},
		{"http://127.0.0.1:6061/redir#", true, false, ""},
		{"http://10.0.0.1:6060", false, false, ""},
		{"http://0.0.0.0:6060", false, false, ""},
		{"http://[::]:6060", false, false, ""},
		{"http://192.168.1.1:6060", false, false, ""},
		{"http://example.com:6060", false, false, ""},
		{"http://0x7f000001:6060", false, false, ""},
		{"http://127.0.0.1.nip.io:6060", false, false, ""},
		{"http://[fe80::1%25lo]:6060", false, false, ""},
		{"https://127.0.0.1:6060", true, false, ""},
		{"http://127.0.0.1", true, false, ""},
		{"http://user@127.0.0.1:1", true, false, ""},
		{"http://127.0.0.1:6060/?x=1", true, false, ""},
		{"http://127.0.0.1:99999", true, false, ""},
		{"::not a url", true, false, ""},
	} {
		u, addrs, err := LoopbackURL(context.Background(), tc.url)
		if tc.ok {
			if err != nil || len(addrs) == 0 {
				t.Errorf("%s: %v", tc.url, err)
				continue
			}
			if u.Path != tc.path {
				t.Errorf("%s: base path %q, want %q", tc.url, u.Path, tc.path)
			}
			for _, a := range addrs {
				if !a.IsLoopback() {
					t.Errorf("%s: dials %s", tc.url, a)
				}
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", tc.url)
		} else if !tc.loopback && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("%s: %v does not wrap ErrNotLoopback", tc.url, err)
		}
		// Refusals become tool messages, which never echo rejected input.
		if u, perr := url.Parse(tc.url); !tc.loopback && err != nil && perr == nil && u.Hostname() != "" && strings.Contains(err.Error(), u.Hostname()) {
			t.Errorf("%s: the refusal echoes the host: %v", tc.url, err)
		}
	}
}

// TestFetchPprof fetches a heap profile and a one-second CPU profile from
// a real net/http/pprof server on 127.0.0.1 and decodes them with pprof's
// own parser.
func TestFetchPprof(t *testing.T) {
	srv := httptest.NewServer(http.DefaultServeMux)
	defer srv.Close()
	u, addrs, err := LoopbackURL(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, kind := range []string{"heap", "goroutine", "cpu"} {
		dst := filepath.Join(dir, kind)
		f, err := FetchPprof(context.Background(), u, addrs, kind, 1, 64<<20, dst)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if f.Status != 200 || f.Bytes == 0 {
			t.Fatalf("%s: %+v", kind, f)
		}
		fh, _ := os.Open(dst)
		p, err := profile.Parse(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if len(p.SampleType) == 0 {
			t.Fatalf("%s: no sample types", kind)
		}
	}
	// A base URL ending in /debug/pprof/ (as the service's index page is
	// usually given) fetches the same handler, not .../debug/pprof/debug/pprof/heap.
	ui, ai, err := LoopbackURL(context.Background(), srv.URL+"/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := FetchPprof(context.Background(), ui, ai, "heap", 1, 64<<20, filepath.Join(dir, "index")); err != nil || f.Status != 200 || f.URL != srv.URL+"/debug/pprof/heap" {
		t.Fatalf("base URL ending in /debug/pprof/: %+v %v", f, err)
	}
	// A 404 is an error naming the status, and the size bound holds.
	if _, err := FetchPprof(context.Background(), u, addrs, "heap", 1, 10, filepath.Join(dir, "small")); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("size bound: %v", err)
	}
	nf := httptest.NewServer(http.NotFoundHandler())
	defer nf.Close()
	u2, a2, _ := LoopbackURL(context.Background(), nf.URL)
	if f, err := FetchPprof(context.Background(), u2, a2, "heap", 1, 1<<20, filepath.Join(dir, "nf")); err == nil || f.Status != 404 {
		t.Fatalf("404: %+v %v", f, err)
	}
}

// perfRecord records cmd with perf record -g and returns perf.data's path;
// it skips when perf cannot record here.
func perfRecord(t *testing.T, dir string, argv ...string) string {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed")
	}
	if a := ProbePerfEvents(); !a.Allowed {
		t.Skipf("perf cannot record here: %s", a.Guidance)
	}
	data := filepath.Join(dir, "perf.data")
	out, err := exec.Command("perf", append([]string{"record", "-q", "-g", "-o", data, "--"}, argv...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	return data
}

// TestFoldPerfScriptMatchesStackcollapse folds perf script of a real
// recording and compares every stack and count with perf's own
// stackcollapse.py run on the same perf.data.
func TestFoldPerfScriptMatchesStackcollapse(t *testing.T) {
	script := ""
	for _, p := range []string{"/usr/lib/perf-core/scripts/python/stackcollapse.py", "/usr/libexec/perf-core/scripts/python/stackcollapse.py", "/usr/share/perf-core/scripts/python/stackcollapse.py"} {
		if _, err := os.Stat(p); err == nil {
			script = p
		}
	}
	dir := t.TempDir()
	// A C program with named frames, so stacks have real symbols.
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	src := filepath.Join(dir, "spin.c")
	os.WriteFile(src, []byte(`#include <stdio.h>
volatile unsigned long sink;
__attribute__((noinline)) void leaf_a(int n) { for (int i = 0; i < n; i++) sink += i * 7; }
__attribute__((noinline)) void leaf_b(int n) { for (int i = 0; i < n; i++) sink ^= i * 13; }
__attribute__((noinline)) void middle(int n) { leaf_a(n); leaf_b(2 * n); }
int main(void) { for (int r = 0; r < 60; r++) middle(200000); printf("%lu\n", sink); return 0; }
`), 0o644)
	bin := filepath.Join(dir, "spin prog")
	if out, err := exec.Command("cc", "-O0", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	data := perfRecord(t, dir, bin)
	text, err := exec.Command("perf", "script", "-i", data, "-F", PerfScriptFields).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	st, err := FoldPerfScript(bytes.NewReader(text), &got)
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples == 0 || st.SkippedLines != 0 || !strings.Contains(got.String(), "main;middle;leaf_b") {
		t.Fatalf("stats %+v\n%s", st, got.String())
	}
	if script == "" {
		t.Skip("perf's stackcollapse.py is not installed; the reference cannot run")
	}
	want, err := exec.Command("perf", "script", "-i", data, "-s", script).Output()
	if err != nil {
		t.Fatalf("perf script -s stackcollapse.py: %v", err)
	}
	if got.String() != string(want) {
		t.Fatalf("folded stacks differ from perf's stackcollapse.py\n--- ours\n%s\n--- stackcollapse.py\n%s", got.String(), want)
	}
}

func TestFoldPerfScriptShapes(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"no frames", "a b \n\n", "a_b 1\n"},
		{"semicolon", "x \n\t  1 f;g\n\t  2 main\n\n", "x;main;f:g 1\n"},
		{"unknown", "x \n\t  0 [unknown]\n\n", "x;[unknown] 1\n"},
		{"bad frame", "x \n\tzz nothex\n\t 1 main\n", "x;main 1\n"},
	} {
		var out bytes.Buffer
		_, err := FoldPerfScript(strings.NewReader(tc.in), &out)
		if tc.want == "" {
			if !errors.Is(err, ErrNoSamples) {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err != nil || out.String() != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.name, out.String(), err, tc.want)
		}
	}
}

func FuzzFoldPerfScript(f *testing.F) {
	f.Add("sh \n\t  1489e get_common\n\t  0 [unknown]\n\n")
	f.Add("a b \n\n\t\n x\n")
	f.Fuzz(func(t *testing.T, s string) {
		var out bytes.Buffer
		st, err := FoldPerfScript(strings.NewReader(s), &out)
		if err != nil {
			return
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != st.Stacks || st.Samples == 0 {
			t.Fatalf("stats %+v for %d lines", st, len(lines))
		}
	})
}

// TestDetectCgroup compares the layout with what stat -f (coreutils)
// reports for /sys/fs/cgroup and /sys/fs/cgroup/unified in the same run;
// on a cgroup v1 or hybrid machine no memory.max can be used.
func TestDetectCgroup(t *testing.T) {
	fsType := func(p string) string {
		out, _ := exec.Command("stat", "-f", "-c", "%T", p).Output()
		return strings.TrimSpace(string(out))
	}
	fs, unified := fsType("/sys/fs/cgroup"), fsType("/sys/fs/cgroup/unified")
	if fs == "" {
		t.Skip("no /sys/fs/cgroup")
	}
	c := DetectCgroup()
	want := CgroupLegacy
	switch {
	case fs == "cgroup2fs":
		want = CgroupUnified
	case unified == "cgroup2fs":
		want = CgroupHybrid
	}
	if c.Layout != want && !(want == CgroupLegacy && c.Layout == CgroupNone) {
		t.Fatalf("stat says %s (unified: %s), detection %+v", fs, unified, c)
	}
	switch c.Layout {
	case CgroupLegacy, CgroupNone:
		if c.Usable || c.Memory || !strings.HasPrefix(CgroupStatus(), "not used") {
			t.Fatalf("detection %+v", c)
		}
	case CgroupHybrid:
		// v1 holds the memory controller: no memory.max in v2.
		if c.Memory || !strings.Contains(c.Reason, "v1 controllers") || !strings.Contains(c.Reason, "RLIMIT_AS") {
			t.Fatalf("detection %+v", c)
		}
	}
	// Writable is access(2) W_OK on the cgroup directory, as test -w says.
	if c.Hierarchy != "" && c.Path != "" {
		w := exec.Command("test", "-w", filepath.Join(c.Hierarchy, c.Path)).Run() == nil
		if w != c.Writable || c.Usable != w {
			t.Fatalf("test -w says %v, detection %+v", w, c)
		}
	}
}

// TestLeafKillsEscapees: where a leaf is usable, the workload runs in it
// and a descendant that left the process group and scrubbed the ownership
// marker from its environment is still killed (cgroup.kill); the leaf is
// removed afterwards.
func TestLeafKillsEscapees(t *testing.T) {
	if !DetectCgroup().Usable {
		t.Skip("no writable cgroup v2 delegation here: " + DetectCgroup().Reason)
	}
	s := spec(t, "sh", "-c", `cat /proc/self/cgroup > cg; setsid env -u `+MarkerEnv+` sleep 1000 & echo $! > esc; while [ ! -s esc ]; do sleep 0.01; done; exit 0`)
	ex, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if ex.CgroupLeaf == "" || !strings.HasPrefix(ex.Containment, "cgroup_leaf+") {
		t.Fatalf("no leaf: %+v", ex)
	}
	cg, _ := os.ReadFile(filepath.Join(s.Dir, "cg"))
	if !strings.Contains(string(cg), "/"+filepath.Base(ex.CgroupLeaf)) {
		t.Fatalf("workload cgroup %q, leaf %s", cg, ex.CgroupLeaf)
	}
	for _, p := range readPids(t, s.Dir, "esc") {
		if alive(p) {
			t.Errorf("escaped pid %d survived", p)
		}
	}
	if ex.LeftoverKilled < 1 {
		t.Errorf("leftover_processes_killed = %d", ex.LeftoverKilled)
	}
	if _, err := os.Stat(ex.CgroupLeaf); err == nil {
		t.Errorf("leaf %s was not removed", ex.CgroupLeaf)
	}
}

func FuzzLoopbackURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:6060", "http://[::1]:1/x", "http://localhost:80", "http://10.0.0.1:1", "http://[::ffff:127.0.0.1]:2", "http://0x7f.1:3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, addrs, err := LoopbackURL(context.Background(), s)
		if err != nil {
			return
		}
		if u.Scheme != "http" || len(addrs) == 0 || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			t.Fatalf("%q accepted as %v %v", s, u, addrs)
		}
		// The base never holds the handler prefix FetchPprof appends.
		if strings.Contains(u.Path+"/", "/debug/pprof/") {
			t.Fatalf("%q accepted with base path %q", s, u.Path)
		}
		for _, a := range addrs {
			if !a.IsLoopback() {
				t.Fatalf("%q dials %s", s, a)
			}
		}
	})
}
