//go:build linux

package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loadDuration is how long the four bridges of TestFourMixedBridgesLoad
// call the host.
const loadDuration = 60 * time.Second

// procStatus returns VmRSS (bytes) and the open file count of pid, not
// counting the files it holds under /proc: the sampler keeps a few open
// per process it samples, so their number follows how many processes
// the machine runs, not the calls the host served.
func procStatus(t *testing.T, pid int) (rss int64, fds int) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("host %d: %v", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(target, "/proc/") {
			continue
		}
		fds++
	}
	return rss, fds
}

// checkEnvelope checks that one tool answer is a well-formed result envelope
// and returns it decoded: a success has api_version, status complete or
// partial, warnings, coverage, data and next_action; an error has
// error.code, message and retryable.
func checkEnvelope(res *mcp.CallToolResult) (map[string]any, error) {
	if res == nil || len(res.Content) != 1 {
		return nil, fmt.Errorf("not one content item")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return nil, fmt.Errorf("content is not text")
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &m); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if res.IsError {
		e, _ := m["error"].(map[string]any)
		if _, ok := e["code"].(string); !ok {
			return m, fmt.Errorf("error without code")
		}
		if _, ok := e["retryable"].(bool); !ok {
			return m, fmt.Errorf("error without retryable")
		}
		return m, fmt.Errorf("error %v: %v", e["code"], e["message"])
	}
	if m["api_version"] == nil || (m["status"] != "complete" && m["status"] != "partial") {
		return m, fmt.Errorf("success without api_version or with status %v", m["status"])
	}
	for _, k := range []string{"warnings", "coverage", "data", "next_action"} {
		if _, ok := m[k]; !ok {
			return m, fmt.Errorf("success without %s", k)
		}
	}
	return m, nil
}

// TestFourMixedBridgesLoad runs four `inquest mcp --toolsets
// proc,perf,bin` bridges against one host for 60 s, each calling in a
// loop a mix of the three toolsets (list_processes, get_status,
// inspect_binary of /bin/ls (its mapped_by asks the host), preview_artifact
// and preserve_evidence, capture_and_summarize_executions of /bin/true).
// Every answer must be a well-formed success (no BUSY: one host
// connection per bridge), no bridge session or the host may die (the same
// host pid at the end), every record a preserve returned must verify in
// the store afterwards, and the host's RSS and open files (and each
// bridge's RSS) must stay bounded (against the level after a warm-up
// round). The loop runs for 60 s of wall time; nothing is timed.
func TestFourMixedBridgesLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a minute")
	}
	bin := filepath.Join(t.TempDir(), "inquest")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/inquest").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	base := t.TempDir()
	for _, d := range []string{"run", "config", "state", "data", "tmp"} {
		os.MkdirAll(filepath.Join(base, d), 0o700)
	}
	store := filepath.Join(base, "data", "evidence")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base, "XDG_RUNTIME_DIR=" + filepath.Join(base, "run"),
		"XDG_CONFIG_HOME=" + filepath.Join(base, "config"), "XDG_STATE_HOME=" + filepath.Join(base, "state"),
		"XDG_DATA_HOME=" + filepath.Join(base, "data"), "TMPDIR=" + filepath.Join(base, "tmp"), "INQUEST_DATA_DIR=" + store}
	hostPID := func() int {
		b, _ := os.ReadFile(filepath.Join(base, "run", "inquest", "host.lock"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	defer func() {
		if pid := hostPID(); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	csv := filepath.Join(base, "tmp", "rows.csv")
	if err := os.WriteFile(csv, []byte("k,v\na,1\nb,2\nc,3\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	type bridge struct {
		cmd *exec.Cmd
		cs  *mcp.ClientSession
	}
	var bridges []bridge
	for i := range 4 {
		cmd := exec.Command(bin, "mcp", "--toolsets", "proc,perf,bin")
		cmd.Env = env
		cmd.Stderr = os.Stderr
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load-e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		cancel()
		if err != nil {
			t.Fatalf("bridge %d: %v", i, err)
		}
		defer cs.Close()
		bridges = append(bridges, bridge{cmd, cs})
	}

	type step struct {
		tool string
		args func(prev map[string]any) map[string]any
	}
	steps := []step{
		{"list_processes", func(map[string]any) map[string]any { return map[string]any{"limit": 5} }},
		{"inspect_binary", func(map[string]any) map[string]any { return map[string]any{"path": "/bin/ls"} }},
		{"preview_artifact", func(map[string]any) map[string]any {
			return map[string]any{"sources": []any{map[string]any{"kind": "path", "path": csv}}}
		}},
		{"preserve_evidence", func(prev map[string]any) map[string]any {
			return map[string]any{"analysis_id": prev["data"].(map[string]any)["analysis_id"]}
		}},
		{"get_status", func(map[string]any) map[string]any { return map[string]any{} }},
		{"capture_and_summarize_executions", func(map[string]any) map[string]any {
			return map[string]any{"target": map[string]any{"argv": []string{"/bin/true"}, "cwd": "/tmp"}, "provider": map[string]any{"kind": "direct"}}
		}},
	}
	round := func(b bridge, ids *[]string, counts map[string]int) error {
		var prev map[string]any
		for _, s := range steps {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			res, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args(prev)})
			cancel()
			if err != nil {
				return fmt.Errorf("%s: the session failed: %v", s.tool, err)
			}
			m, err := checkEnvelope(res)
			if err != nil {
				return fmt.Errorf("%s: %v", s.tool, err)
			}
			counts[s.tool]++
			if s.tool == "preserve_evidence" {
				id, _ := m["data"].(map[string]any)["evidence_id"].(string)
				if !evidence.ValidID(id) {
					return fmt.Errorf("preserve_evidence returned evidence_id %q", id)
				}
				*ids = append(*ids, id)
			}
			prev = m
		}
		return nil
	}

	// A warm-up round on every bridge (the first starts the host), then
	// the host's footprint to compare with.
	var ids [4][]string
	counts := make([]map[string]int, 4)
	for i, b := range bridges {
		counts[i] = map[string]int{}
		if err := round(b, &ids[i], counts[i]); err != nil {
			t.Fatalf("bridge %d warm-up: %v", i, err)
		}
	}
	pid := hostPID()
	if pid <= 0 {
		t.Fatal("no host started")
	}
	warmRSS, warmFDs := procStatus(t, pid)
	peakRSS := warmRSS
	var bridgeWarm [4]int64
	for i, b := range bridges {
		bridgeWarm[i], _ = procStatus(t, b.cmd.Process.Pid)
	}

	var wg sync.WaitGroup
	errs := make([]error, 4)
	stop := time.Now().Add(loadDuration)
	for i, b := range bridges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if err := round(b, &ids[i], counts[i]); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for time.Now().Before(stop) {
			if rss, _ := procStatus(t, pid); rss > peakRSS {
				peakRSS = rss
			}
			time.Sleep(time.Second)
		}
	}()
	wg.Wait()
	<-sampled
	for i, err := range errs {
		if err != nil {
			t.Errorf("bridge %d: %v", i, err)
		}
	}
	if t.Failed() {
		return
	}
	endRSS, endFDs := procStatus(t, pid)
	for i, b := range bridges {
		if rss, _ := procStatus(t, b.cmd.Process.Pid); rss > 2*bridgeWarm[i]+64<<20 {
			t.Errorf("bridge %d RSS %d MiB, %d MiB after warm-up", i, rss>>20, bridgeWarm[i]>>20)
		}
	}
	if got := hostPID(); got != pid {
		t.Fatalf("the host changed from pid %d to %d under load", pid, got)
	}
	for i, b := range bridges {
		if err := b.cmd.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("bridge %d died: %v", i, err)
		}
	}
	total, preserved := 0, 0
	for i := range counts {
		for _, n := range counts[i] {
			total += n
		}
		preserved += len(ids[i])
	}
	t.Logf("%d calls over 4 bridges (%v); %d records preserved; host RSS %d MiB after warm-up, peak %d MiB, end %d MiB; fds %d -> %d",
		total, counts, preserved, warmRSS>>20, peakRSS>>20, endRSS>>20, warmFDs, endFDs)
	// Bounded: what the host holds does not grow with the calls served.
	if limit := 2*warmRSS + 64<<20; peakRSS > limit {
		t.Errorf("host RSS peaked at %d MiB, more than twice its %d MiB after warm-up plus 64 MiB", peakRSS>>20, warmRSS>>20)
	}
	if endFDs > warmFDs+16 {
		t.Errorf("host holds %d files, %d after warm-up", endFDs, warmFDs)
	}

	// No record lost: every preserved id verifies in the store.
	for _, b := range bridges {
		b.cs.Close()
	}
	st, err := evidence.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range ids {
		for _, id := range ids[i] {
			m, err := st.Get(id)
			if err != nil {
				t.Fatalf("record %s: %v", id, err)
			}
			for _, a := range m.Artifacts {
				if err := st.VerifyArtifact(context.Background(), m, a.Name); err != nil {
					t.Fatalf("record %s artifact %s: %v", id, a.Name, err)
				}
			}
		}
	}
	loc, err := st.Location(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if loc.Records != int64(preserved) || loc.Unreadable != 0 {
		t.Fatalf("store holds %d records (%d unreadable), %d were preserved", loc.Records, loc.Unreadable, preserved)
	}
}
