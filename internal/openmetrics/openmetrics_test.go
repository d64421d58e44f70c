package openmetrics

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// lookTool finds a reference tool; absent, the test skips, except under
// CI=true (.ci/run installs it), where that is a failure.
func lookTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (Debian package %s, which .ci/run installs)", name, pkg)
		}
		t.Skipf("%s is not installed (Debian package %s; .ci/run installs it)", name, pkg)
	}
	return p
}

// TestFamiliesGolden: the exported family of every catalog metric (name,
// type, unit, nanoseconds scaled to seconds) is a contract with
// dashboards and recorded data: testdata/families.txt.
func TestFamiliesGolden(t *testing.T) {
	var b strings.Builder
	for _, fams := range [][]Family{SystemFamilies(), ProcessFamilies()} {
		for _, f := range fams {
			fmt.Fprintf(&b, "%-28s %-45s %-7s %-7s nanos=%t\n", f.Metric.ID, f.SampleName(), f.Type, f.Unit, f.Nanos)
		}
	}
	golden := filepath.Join("testdata", "families.txt")
	if *update {
		os.WriteFile(golden, []byte(b.String()), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("families differ from %s (go test -update):\n%s", golden, b.String())
	}
	seen := map[string]string{}
	for _, fams := range [][]Family{SystemFamilies(), ProcessFamilies()} {
		for i, f := range fams {
			if f.Metric.Index != i {
				t.Errorf("%s: slot %d at %d", f.Name, f.Metric.Index, i)
			}
			if other, dup := seen[f.Name]; dup {
				t.Errorf("%s and %s share family %s", other, f.Metric.ID, f.Name)
			}
			seen[f.Name] = f.Metric.ID
			if got, ok := Lookup(f.SampleName()); !ok || got.Name != f.Name {
				t.Errorf("Lookup(%s) = %v %v", f.SampleName(), got.Name, ok)
			}
		}
	}
}

func TestAppendValue(t *testing.T) {
	rss := ProcessFamilies()[sample.PRSS]
	cpu := ProcessFamilies()[sample.PCPUTime]
	pct := ProcessFamilies()[sample.PCPUPercent]
	for _, c := range []struct {
		f    Family
		v    uint64
		want string
		ok   bool
	}{
		{rss, 0, "0", true},
		{rss, 18446744073709551615, "18446744073709551615", true},
		{cpu, 0, "0", true},
		{cpu, 1, "0.000000001", true},
		{cpu, 1_500_000_000, "1.5", true},
		{cpu, 12_000_000_000, "12", true},
		{cpu, 123_456_789_012, "123.456789012", true},
		{pct, sample.F(12.5), "12.5", true},
		{pct, sample.F(0.1), "0.1", true},
		{pct, sample.F(1e21), "1e+21", true},
		{pct, sample.F(mathNaN()), "", false},
	} {
		got, ok := AppendValue(nil, c.f, c.v)
		if string(got) != c.want || ok != c.ok {
			t.Errorf("%s %d: %q %v, want %q %v", c.f.Name, c.v, got, ok, c.want, c.ok)
		}
	}
}

func mathNaN() float64 { var z float64; return z / z }

func TestProcessLabels(t *testing.T) {
	for _, c := range []struct {
		name  string
		pid   int32
		start time.Time
		want  string
	}{
		{"postgres", 42, time.UnixMilli(1764639140530), `{name="postgres",pid="42",start_time="1764639140.530"}`},
		{`a"b\c` + "\n", 1, time.UnixMilli(5), `{name="a\"b\\c\n",pid="1",start_time="0.005"}`},
		{"bad\xffutf8", 7, time.UnixMilli(-1), `{name="bad` + "\uFFFD" + `utf8",pid="7",start_time="-1.999"}`},
	} {
		if got := ProcessLabels(c.name, c.pid, c.start); got != c.want {
			t.Errorf("ProcessLabels(%q) = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	var remote *RemoteError
	var bad *ListenError
	for _, c := range []struct {
		listen string
		allow  bool
		want   any // nil, &remote or &bad
	}{
		{"", false, nil},
		{"127.0.0.1:9935", false, nil},
		{"127.1.2.3:0", false, nil},
		{"[::1]:9935", false, nil},
		{"localhost:9935", false, nil},
		{"0.0.0.0:9935", false, &remote},
		{":9935", false, &remote},
		{"192.0.2.1:9935", false, &remote},
		{"example.com:9935", false, &remote},
		{"0.0.0.0:9935", true, nil},
		{":9935", true, nil},
		{"127.0.0.1", false, &bad},
		{"127.0.0.1:http", false, &bad},
		{"127.0.0.1:65536", false, &bad},
		{"127.0.0.1:+1", false, &bad},
		{"127.0.0.1:-1", false, &bad},
	} {
		err := CheckListen(c.listen, c.allow)
		switch w := c.want.(type) {
		case nil:
			if err != nil {
				t.Errorf("%q allow=%v: %v", c.listen, c.allow, err)
			}
		case **RemoteError:
			if !errors.As(err, w) || !strings.Contains(err.Error(), SettingAllowRemote) {
				t.Errorf("%q allow=%v: %v, want a RemoteError naming %s", c.listen, c.allow, err, SettingAllowRemote)
			}
		case **ListenError:
			if !errors.As(err, w) || !strings.Contains(err.Error(), SettingListen) {
				t.Errorf("%q allow=%v: %v, want a ListenError naming %s", c.listen, c.allow, err, SettingListen)
			}
		}
	}
}

// FuzzCheckListen: any setting value gets an answer, never a panic; one
// accepted without openmetrics_allow_remote is a loopback HOST:PORT, and
// one refused for being remote is accepted with it.
func FuzzCheckListen(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9935", "[::1]:0", ":1", "localhost:x", "[fe80::1%eth0]:9", "[::ffff:127.0.0.1]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, listen string) {
		err := CheckListen(listen, false)
		var re *RemoteError
		switch {
		case err == nil && listen != "":
			host, _, serr := net.SplitHostPort(listen)
			ip := net.ParseIP(host)
			if serr != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
				t.Fatalf("%q accepted as loopback", listen)
			}
		case errors.As(err, &re):
			if err := CheckListen(listen, true); err != nil {
				t.Fatalf("%q: remote, and still refused when allowed: %v", listen, err)
			}
		}
	})
}

// realSource is an exporter source over a real snapshot of this machine:
// the system and n real processes as the tracked lifetimes.
func realSource(t testing.TB, n int) Source {
	t.Helper()
	c, err := sample.NewCollector()
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Collect(first) // a second one has interval rates
	if err != nil {
		t.Fatal(err)
	}
	return snapshotSource(snap, n)
}

func snapshotSource(snap *sample.Snapshot, n int) Source {
	at := snap.Time.UnixMilli()
	sys := &Point{At: at, Avail: snap.System.Avail, Vals: snap.System.Vals[:]}
	var procs []Lifetime
	for i := range snap.Procs {
		if len(procs) == n {
			break
		}
		p := &snap.Procs[i]
		procs = append(procs, Lifetime{Name: p.Name, PID: p.PID, StartTime: p.StartTime, Last: Point{At: at, Avail: p.Avail, Vals: p.Vals[:]}})
	}
	return func() Snapshot { return Snapshot{System: sys, Procs: procs} }
}

func startServer(t *testing.T, x *Exporter) string {
	t.Helper()
	s := NewServer(x)
	if err := s.Apply("127.0.0.1:0", false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return "http://" + s.Addr()
}

func get(t *testing.T, method, url, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// prometheusAccept is the Accept header Prometheus 2.x scrapes with.
const prometheusAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// TestScrapeReferenceParsers scrapes a real exposition (this machine's
// system and 50 of its processes) over HTTP and hands it to the reference
// readers: `promtool check metrics` (lint and parse of the text format a
// plain GET gets) and prometheus_client's OpenMetrics parser (the format
// Prometheus' own Accept header gets), which must see every family with
// the catalog's type and every sample written.
func TestScrapeReferenceParsers(t *testing.T) {
	promtool := lookTool(t, "promtool", "prometheus")
	x := &Exporter{Source: realSource(t, 50)}
	base := startServer(t, x)

	resp, text := get(t, "GET", base+"/metrics", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ContentTypeText {
		t.Fatalf("plain GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}

	resp, om := get(t, "GET", base+"/metrics", prometheusAccept)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ContentTypeOpenMetrics {
		t.Fatalf("Prometheus' GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.HasSuffix(om, []byte("\n# EOF\n")) {
		t.Fatalf("the OpenMetrics body does not end with # EOF")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3 for the OpenMetrics reference parser")
	}
	if exec.Command(py, "-c", "import prometheus_client").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-prometheus-client is not installed (.ci/run installs it)")
		}
		t.Skip("python3-prometheus-client is not installed")
	}
	script := `
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for f in text_string_to_metric_families(sys.stdin.read()):
    print(f.name, f.type, f.unit or "-", len(f.samples))
`
	pc := exec.Command(py, "-c", script)
	pc.Stdin = bytes.NewReader(om)
	out, err := pc.CombinedOutput()
	if err != nil {
		t.Fatalf("the OpenMetrics parser rejects the exposition: %v\n%s", err, out)
	}
	st, _ := x.Write(io.Discard, OpenMetrics)
	samples := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var name, typ, unit string
		var n int
		if _, err := fmt.Sscanf(line, "%s %s %s %d", &name, &typ, &unit, &n); err != nil {
			t.Fatalf("parser output %q: %v", line, err)
		}
		if strings.HasPrefix(name, "inquest_exporter_") {
			continue
		}
		f, ok := Lookup(name)
		if !ok || f.Name != name {
			t.Fatalf("family %s is not in the catalog", name)
		}
		wantUnit := f.Unit
		if wantUnit == "" {
			wantUnit = "-"
		}
		if typ != f.Type || unit != wantUnit {
			t.Errorf("%s: parsed %s unit %s, want %s unit %s", name, typ, unit, f.Type, wantUnit)
		}
		samples += n
	}
	if samples != st.Series || st.Series == 0 {
		t.Fatalf("the parser read %d samples, the exporter wrote %d series", samples, st.Series)
	}
}

// TestHTTPRules: only GET and HEAD of /metrics; other paths 404, other
// methods 405 with Allow; Apply moves and closes the listener; a remote
// address without the second setting leaves it off with a RemoteError.
func TestHTTPRules(t *testing.T) {
	x := &Exporter{Source: func() Snapshot { return Snapshot{} }}
	s := NewServer(x)
	defer s.Close()
	if err := s.Apply("127.0.0.1:0", false); err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr()
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/metrics", 200},
		{"HEAD", "/metrics", 200},
		{"GET", "/", 404},
		{"GET", "/metrics/x", 404},
		{"GET", "/debug/pprof/", 404},
		{"POST", "/metrics", 405},
		{"PUT", "/metrics", 405},
		{"DELETE", "/metrics", 405},
	} {
		resp, body := get(t, c.method, base+c.path, "")
		if resp.StatusCode != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.code)
		}
		if c.code == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", c.method, c.path, resp.Header.Get("Allow"))
		}
		if c.method == "HEAD" && len(body) != 0 {
			t.Errorf("HEAD has a body")
		}
	}
	_, body := get(t, "GET", base+"/metrics", prometheusAccept)
	if !strings.Contains(string(body), "inquest_exporter_series_dropped 0\n") || !strings.HasSuffix(string(body), "# EOF\n") {
		t.Fatalf("empty exposition:\n%s", body)
	}
	old := s.Addr()
	if err := s.Apply("127.0.0.1:0", false); err != nil || s.Addr() != old {
		t.Fatalf("re-applying the same setting moved the listener: %v %s -> %s", err, old, s.Addr())
	}
	var re *RemoteError
	if err := s.Apply("0.0.0.0:0", false); !errors.As(err, &re) || s.Addr() != "" {
		t.Fatalf("remote without %s: %v, addr %q", SettingAllowRemote, err, s.Addr())
	}
	if _, err := http.Get(base + "/metrics"); err == nil {
		t.Fatalf("the old listener still answers")
	}
	if err := s.Apply("127.0.0.1:0", false); err != nil || s.Addr() == "" {
		t.Fatal(err)
	}
	if err := s.Apply("", false); err != nil || s.Addr() != "" {
		t.Fatalf("off: %v %q", err, s.Addr())
	}
}

// TestSeriesCap: with a cap, the oldest lifetimes are exposed whole, the
// rest left out and counted in inquest_exporter_series_dropped; the
// exposition stays valid for the reference parser.
func TestSeriesCap(t *testing.T) {
	vals := make([]uint64, sample.NumProcessMetrics)
	avail := uint32(1<<sample.PRSS | 1<<sample.PThreads | 1<<sample.PCPUTime)
	var procs []Lifetime
	for i := 0; i < 10; i++ {
		vals := append([]uint64(nil), vals...)
		vals[sample.PRSS] = uint64(1000 + i)
		// Listed newest first: admission orders by start time.
		procs = append(procs, Lifetime{Name: "p", PID: int32(100 - i), StartTime: time.UnixMilli(int64(10_000 - i)), Last: Point{At: 20_000, Avail: avail, Vals: vals}})
	}
	for _, c := range []struct{ limit, series, dropped int }{
		{30, 30, 0}, {29, 27, 3}, {3, 3, 27}, {2, 0, 30}, {0, 30, 0},
	} {
		x := &Exporter{MaxSeries: c.limit, Source: func() Snapshot { return Snapshot{Procs: procs} }}
		var b bytes.Buffer
		st, err := x.Write(&b, OpenMetrics)
		if err != nil || st.Series != c.series || st.Dropped != c.dropped {
			t.Errorf("limit %d: %+v %v, want series %d dropped %d", c.limit, st, err, c.series, c.dropped)
		}
		if !strings.Contains(b.String(), fmt.Sprintf("inquest_exporter_series_dropped %d\n", c.dropped)) {
			t.Errorf("limit %d: the dropped gauge is not %d", c.limit, c.dropped)
		}
		// The kept lifetimes are the oldest: pid 91 (start 9991) first.
		if c.series > 0 && c.series < 30 && !strings.Contains(b.String(), `pid="91"`) {
			t.Errorf("limit %d: the oldest lifetime was dropped", c.limit)
		}
		if c.series > 0 && c.series < 30 && strings.Contains(b.String(), `pid="100"`) {
			t.Errorf("limit %d: the newest lifetime was kept", c.limit)
		}
	}
}

// TestExpositionGolden: both formats of a fixed snapshot (a system sample
// with an unavailable slot and a non-finite number, two lifetimes, one
// with only some metrics) are testdata/exposition.{om,prom}.
func TestExpositionGolden(t *testing.T) {
	var sys [sample.NumSystemMetrics]uint64
	sys[sample.SMemTotal] = 8 << 30
	sys[sample.SLoad1] = sample.F(0.25)
	sys[sample.SCPUPercent] = sample.F(mathNaN())
	sys[sample.SNetRx] = 123456
	var a, b [sample.NumProcessMetrics]uint64
	a[sample.PRSS], a[sample.PCPUTime], a[sample.PCPUPercent] = 4096, 1_250_000_000, sample.F(3.5)
	b[sample.PRSS], b[sample.PFDs] = 8192, 12
	src := func() Snapshot {
		return Snapshot{
			System: &Point{At: 1764639000123, Avail: 1<<sample.SMemTotal | 1<<sample.SLoad1 | 1<<sample.SCPUPercent | 1<<sample.SNetRx, Vals: sys[:]},
			Procs: []Lifetime{
				{Name: "b", PID: 20, StartTime: time.UnixMilli(1764638000000), Last: Point{At: 1764639000120, Avail: 1<<sample.PRSS | 1<<sample.PFDs, Vals: b[:]}},
				{Name: `a "quoted"`, PID: 10, StartTime: time.UnixMilli(1764637000500), Last: Point{At: 1764639000121, Avail: 1<<sample.PRSS | 1<<sample.PCPUTime | 1<<sample.PCPUPercent, Vals: a[:]}},
			},
		}
	}
	x := &Exporter{Source: src}
	for _, c := range []struct {
		f    Format
		file string
	}{{OpenMetrics, "exposition.om"}, {Text, "exposition.prom"}} {
		var buf bytes.Buffer
		if _, err := x.Write(&buf, c.f); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", c.file)
		if *update {
			os.WriteFile(golden, buf.Bytes(), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs (go test -update):\n%s", golden, buf.String())
		}
	}
}
