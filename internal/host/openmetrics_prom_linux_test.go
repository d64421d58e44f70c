package host

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/openmetrics"
	"github.com/inquest-dev/inquest/internal/recording"
)

// needProm finds a tool of Debian's prometheus package; absent, the test
// skips, except under CI=true (.ci/run installs it), where it fails.
func needProm(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (Debian package prometheus, which .ci/run installs)", name)
		}
		t.Skipf("%s is not installed (Debian package prometheus; .ci/run installs it)", name)
	}
	return p
}

// startPrometheus runs Debian's prometheus on a free loopback port with
// config (YAML) and the TSDB in dir, waits until /-/ready answers and
// returns its base URL; the server is killed when the test ends.
func startPrometheus(t *testing.T, config, dir string) string {
	t.Helper()
	bin := needProm(t, "prometheus")
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(t.TempDir(), "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+dir, "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		logf.Close()
	})
	base := "http://" + addr
	waitFor(t, 3*time.Minute, "prometheus ready", func() bool {
		select {
		case <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("prometheus exited:\n%s", b)
		default:
		}
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return base
}

// promSeries is one series of a Prometheus range-vector answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// promQuery evaluates query (a range selector, which returns the stored
// samples themselves, not the lookback's evaluation) at time at.
func promQuery(t *testing.T, base, query string, at time.Time) []promSeries {
	t.Helper()
	q := url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	resp, err := http.Get(base + "/api/v1/query?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s %s", query, err, r.Status, r.Error)
	}
	return r.Data.Result
}

// promPoints turns a series' [seconds, "value"] pairs into ms -> value.
func promPoints(t *testing.T, s promSeries) map[int64]float64 {
	t.Helper()
	out := map[int64]float64{}
	for _, v := range s.Values {
		sec, _ := v[0].(float64)
		f, err := strconv.ParseFloat(v[1].(string), 64)
		if err != nil {
			t.Fatalf("value %v: %v", v[1], err)
		}
		out[int64(math.Round(sec*1000))] = f
	}
	return out
}

// historyPoints reads get_history's raw rss_bytes rows as ms -> value.
func historyPoints(t *testing.T, h *Host, s *Session, args map[string]any) map[int64]float64 {
	t.Helper()
	d, _ := mustCall(t, h, s, "get_history", args)
	out := map[int64]float64{}
	for _, r := range d["rows"].([]any) {
		row := r.(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, row["at"].(string))
		if err != nil {
			t.Fatalf("row time %v: %v", row["at"], err)
		}
		v, ok := row["values"].(map[string]any)["rss_bytes"].(string)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("rss_bytes %q: %v", v, err)
		}
		out[at.UnixMilli()] = float64(n)
	}
	return out
}

// growingChild starts a python3 child whose resident memory grows by 256
// KiB every 300 ms (so the compared series changes), killed at the end.
func growingChild(t *testing.T) *exec.Cmd {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-c", "import time\nb=[]\nwhile len(b) < 2000:\n    b.append(bytearray(256*1024))\n    time.sleep(0.3)\ntime.sleep(600)\n")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestPrometheusScrapesExporter: Debian's prometheus scrapes the host's
// exporter every second while the host tracks a real child and records
// it. (1) After about 20 points, Prometheus' HTTP API returns the child's
// inquest_process_rss_bytes series, labelled name, pid and start_time
// (and Prometheus' job and instance, nothing else), whose every stored
// value equals get_history's sample at the same millisecond (the
// exposition carries each sample's own timestamp), and the metadata API
// reports the CPU time family as a counter in seconds. (2) The recording
// of the same child, exported to OpenMetrics, loaded with `promtool tsdb
// create-blocks-from openmetrics` and queried (explicit evaluation time,
// a range selector: the default 5-minute lookback would otherwise hide
// samples) from a second prometheus started on those blocks, gives the
// series get_history returns with source log, under the same labels.
func TestPrometheusScrapesExporter(t *testing.T) {
	promtool := needProm(t, "promtool")
	needProm(t, "prometheus")
	const points = 20
	h := testHost(t, time.Second, nil)
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	s := h.NewSession()
	defer s.Close()
	child := growingChild(t)
	pid := child.Process.Pid
	ref := refOfPID(t, h, s, pid)
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "om-track", "expected_revision": revision(t, h, s), "action": "add", "process_ref": ref})
	rec, _ := mustCall(t, h, s, "start_recording", map[string]any{"operation_id": "om-rec", "expected_revision": revision(t, h, s), "interval_seconds": 1})
	out := rec["outcome"].(map[string]any)

	srv := openmetrics.NewServer(&openmetrics.Exporter{Source: h.OpenMetricsSource()})
	if err := srv.Apply("127.0.0.1:0", false); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	live := startPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: inquest
    static_configs:
      - targets: ['%s']
`, srv.Addr()), t.TempDir())

	sel := fmt.Sprintf(`inquest_process_rss_bytes{pid="%d"}[1h]`, pid)
	var series promSeries
	waitFor(t, 5*time.Minute, fmt.Sprintf("%d points of the child's rss in prometheus", points), func() bool {
		r := promQuery(t, live, sel, time.Now())
		if len(r) != 1 {
			return false
		}
		series = r[0]
		return len(series.Values) >= points
	})
	labels := map[string]bool{}
	for k := range series.Metric {
		labels[k] = true
	}
	if len(labels) != 6 || !labels["__name__"] || !labels["name"] || !labels["pid"] || !labels["start_time"] || !labels["job"] || !labels["instance"] {
		t.Fatalf("series labels %v, want __name__ name pid start_time (and job, instance)", series.Metric)
	}
	hist := historyPoints(t, h, s, map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "mode": "raw", "limit": 5000})
	prom := promPoints(t, series)
	distinct := map[float64]bool{}
	for ms, v := range prom {
		hv, ok := hist[ms]
		if !ok {
			t.Fatalf("prometheus has a sample at %d ms that get_history does not (%d history rows)", ms, len(hist))
		}
		if hv != v {
			t.Fatalf("at %d ms prometheus stores %v, get_history says %v", ms, v, hv)
		}
		distinct[v] = true
	}
	if len(prom) < points || len(distinct) < 2 {
		t.Fatalf("%d points, %d distinct values: the growing child's rss did not change", len(prom), len(distinct))
	}
	resp, err := http.Get(live + "/api/v1/metadata?metric=inquest_process_cpu_seconds")
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(meta), `"type":"counter"`) || !strings.Contains(string(meta), `"unit":"seconds"`) {
		t.Fatalf("metadata of inquest_process_cpu_seconds: %s", meta)
	}

	// (2) The recording, through promtool, into a prometheus of its own.
	mustCall(t, h, s, "stop_recording", map[string]any{"operation_id": "om-stop", "recording_session_id": out["recording_session_id"]})
	path := filepath.Join(data, "inquest", "recordings", out["name"].(string))
	log, err := recording.Load(path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	om := filepath.Join(t.TempDir(), "rec.om")
	f, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Export(f, recording.ExportOptions{Format: recording.FormatOpenMetrics}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db := t.TempDir()
	if b, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, db).CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, b)
	}
	blocks := startPrometheus(t, "global:\n  scrape_interval: 1m\nscrape_configs: []\n", db)
	var last int64
	for _, p := range log.Procs {
		if int(p.PID) == pid {
			last = p.Last
		}
	}
	if last == 0 {
		t.Fatalf("the recording holds no lifetime of pid %d", pid)
	}
	r := promQuery(t, blocks, fmt.Sprintf(`inquest_process_rss_bytes{pid="%d"}[1d]`, pid), time.UnixMilli(last+1000))
	if len(r) != 1 {
		t.Fatalf("the loaded blocks hold %d rss series of pid %d", len(r), pid)
	}
	for _, k := range []string{"name", "pid", "start_time"} {
		if r[0].Metric[k] != series.Metric[k] {
			t.Fatalf("label %s: recording %q, live %q", k, r[0].Metric[k], series.Metric[k])
		}
	}
	logID := logIDs(t, h, s)[out["name"].(string)]
	logRef, _, _ := openLogRef(t, h, s, logID)
	procs, _ := mustCall(t, h, s, "list_processes", map[string]any{"source": "log", "log_ref": logRef, "scope": "all", "filter": map[string]any{"pid": pid}})
	rows := procs["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("the log lists %d lifetimes of pid %d", len(rows), pid)
	}
	logHist := historyPoints(t, h, s, map[string]any{"source": "log", "log_ref": logRef, "target": map[string]any{"process_ref": rows[0].(map[string]any)["process_ref"]}, "metric_ids": []string{"rss_bytes"}, "mode": "raw", "limit": 5000})
	loaded := promPoints(t, r[0])
	if len(loaded) != len(logHist) || len(loaded) < 2 {
		t.Fatalf("prometheus holds %d samples of the recording, get_history source log %d", len(loaded), len(logHist))
	}
	for ms, v := range logHist {
		if pv, ok := loaded[ms]; !ok || pv != v {
			t.Fatalf("at %d ms get_history (log) says %v, prometheus %v (present %v)", ms, v, pv, ok)
		}
	}
}
