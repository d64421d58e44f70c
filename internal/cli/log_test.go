package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/openmetrics"
)

// TestLogGolden renders `inquest log show` and `inquest log export` of the
// committed recordings of internal/recording/testdata against golden files
// (go test ./internal/cli -run TestLogGolden -update rewrites them).
func TestLogGolden(t *testing.T) {
	fx := func(name string) string { return filepath.Join("..", "recording", "testdata", name) }
	cases := []struct {
		golden string
		args   []string
	}{
		{"log_show_complete.txt", []string{"log", "show", fx("complete.log")}},
		{"log_show_torn.txt", []string{"log", "show", fx("torn.log")}},
		{"log_export.csv", []string{"log", "export", fx("complete.log"), "--format", "csv", "--metric", "rss_bytes", "--metric", "cpu_percent", "--pid", "3"}},
		{"log_export.jsonl", []string{"log", "export", fx("complete.log"), "--format", "jsonl", "--metric", "fd_count", "--to", "2026-11-30T10:00:02Z"}},
		{"log_export.om", []string{"log", "export", fx("flipped.log"), "--format", "openmetrics", "--metric", "memory_used_bytes", "--metric", "threads"}},
		{"log_export_counters.om", []string{"log", "export", fx("complete.log"), "--format", "openmetrics", "--metric", "cpu_time_ns", "--metric", "rss_bytes", "--pid", "3"}},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), c.args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb.String())
		}
		// The path differs by checkout; the size line stays.
		got := out.Bytes()
		if c.golden == "log_export.om" && !strings.Contains(errb.String(), "incomplete") {
			t.Fatalf("no incomplete warning for a damaged file: %s", errb.String())
		}
		p := filepath.Join("testdata", c.golden)
		if *update {
			os.WriteFile(p, got, 0o644)
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s differs:\n%s", c.golden, got)
		}
	}
}

// The OpenMetrics export of a whole log parses with the OpenMetrics
// reference parser (prometheus_client's, strict about counter naming):
// every cumulative counter of the catalog is a counter family whose
// samples are named FAMILY_total, every other metric a gauge, and the
// parser reads as many samples as the export says it wrote.
func TestOpenMetricsExportParsesAsCounters(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import prometheus_client.openmetrics.parser").Run() != nil {
		t.Skip("python3-prometheus-client not installed (.ci/run installs it)")
	}
	om := filepath.Join(t.TempDir(), "export.om")
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"log", "export", filepath.Join("..", "recording", "testdata", "complete.log"), "--format", "openmetrics", "-o", om}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("export: %d %s", code, errb.String())
	}
	var exported int
	all := out.String() + errb.String()
	if i := strings.Index(all, "exported "); i < 0 {
		t.Fatalf("no export count: %s", all)
	} else {
		fmt.Sscanf(all[i:], "exported %d samples", &exported)
	}
	script := `import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for f in text_string_to_metric_families(open(sys.argv[1]).read()):
    names = sorted(set(s.name for s in f.samples))
    print(f.name, f.type, len(f.samples), ",".join(names) or "-")
`
	res, err := exec.Command(py, "-c", script, om).CombinedOutput()
	if err != nil {
		t.Fatalf("the OpenMetrics parser rejects the export: %v\n%s", err, res)
	}
	samples, counters := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		var family, typ, names string
		var n int
		if _, err := fmt.Sscanf(line, "%s %s %d %s", &family, &typ, &n, &names); err != nil {
			t.Fatalf("parser output %q: %v", line, err)
		}
		fam, ok := openmetrics.Lookup(family)
		if !ok || fam.Name != family {
			t.Fatalf("family %s names no catalog metric", family)
		}
		m := fam.Metric
		want, wantName := "gauge", family
		if m.Cumulative {
			want, wantName = "counter", family+"_total"
			counters++
		}
		if n == 0 {
			wantName = "-" // a family with no available value
		}
		if typ != want || names != wantName {
			t.Errorf("%s: type %s samples %s, want %s %s", family, typ, names, want, wantName)
		}
		samples += n
	}
	if counters == 0 || samples != exported {
		t.Fatalf("%d counter families, %d samples parsed, %d exported", counters, samples, exported)
	}
}
