package host

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/openmetrics"
)

// BenchmarkScrapeVsTick: the exporter with 500 tracked lifetimes (500
// real processes, copies of sleep named omtick) serves a scrape in less
// time than one sampler tick. Each iteration takes one sampler tick
// (collect every process of this machine from /proc, apply it to the
// retained history) and then one scrape (HTTP GET /metrics with
// Prometheus' Accept header, body read whole) of the host's exporter, so
// both are measured in the same run, interleaved; tick-ns and scrape-ns
// are their means, scrape/tick their ratio (target < 1).
//
//	go test ./internal/host -run '^$' -bench ScrapeVsTick -benchtime 100x
func BenchmarkScrapeVsTick(b *testing.B) {
	const lifetimes = 500
	b.Setenv("INQUEST_CONFIG", filepath.Join(b.TempDir(), "inquest.toml"))
	dir := b.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		b.Skip("no sleep")
	}
	bin := filepath.Join(dir, "omtick")
	data, err := os.ReadFile(sleep)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < lifetimes; i++ {
		c := exec.Command(bin, "3600")
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	h, err := New(Options{Version: "bench", Interval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Stop()
	s := h.NewSession()
	defer s.Close()
	dispatch := func(method string, args map[string]any) map[string]any {
		raw, _ := json.Marshal(args)
		res, err := h.Dispatch(context.Background(), s, method, raw)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := json.Marshal(res.Data)
		var m map[string]any
		json.Unmarshal(out, &m)
		return m
	}
	if _, err := h.sampler.Step(); err != nil {
		b.Fatal(err)
	}
	rev := dispatch("get_tracking", map[string]any{})["revision"]
	dispatch("update_tracking", map[string]any{"operation_id": "bench", "expected_revision": rev, "action": "add", "process_name": "omtick"})
	// Fill the newest history block as a running host has it.
	for i := 0; i < 64; i++ {
		if _, err := h.sampler.Step(); err != nil {
			b.Fatal(err)
		}
	}
	srv := openmetrics.NewServer(&openmetrics.Exporter{Source: h.OpenMetricsSource()})
	if err := srv.Apply("127.0.0.1:0", false); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	url := "http://" + srv.Addr() + "/metrics"
	client := &http.Client{}
	scrape := func() []byte {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("scrape: %d %v", resp.StatusCode, err)
		}
		return body
	}
	if n := bytes.Count(scrape(), []byte("\ninquest_process_rss_bytes{name=\"omtick\"")); n != lifetimes {
		b.Fatalf("the exposition holds %d omtick lifetimes, want %d", n, lifetimes)
	}
	var tick, scr time.Duration
	var size int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := h.sampler.Step(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		size = len(scrape())
		t2 := time.Now()
		tick += t1.Sub(t0)
		scr += t2.Sub(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(tick.Nanoseconds())/float64(b.N), "tick-ns")
	b.ReportMetric(float64(scr.Nanoseconds())/float64(b.N), "scrape-ns")
	b.ReportMetric(float64(scr)/float64(tick), "scrape/tick")
	b.ReportMetric(float64(size), "body-bytes")
}
