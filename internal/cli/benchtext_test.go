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
)

// writeBenchFiles writes two go test -bench outputs with fixed values: a
// clear regression, a clear improvement, one unchanged and one with too
// few samples, over ns/op, B/op and allocs/op.
func writeBenchFiles(t *testing.T) (old, cur string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, scale map[string]float64) string {
		var b strings.Builder
		b.WriteString("goos: linux\ngoarch: amd64\npkg: example.com/x\ncpu: Test CPU @ 2.00GHz\n")
		for i := range 8 {
			j := float64(i%4) - 1.5
			fmt.Fprintf(&b, "BenchmarkParse-2  \t 1000\t %.1f ns/op\t %d B/op\t %d allocs/op\n", (1200+j*10)*scale["Parse"], int(4096*scale["ParseB"]), 12)
			fmt.Fprintf(&b, "BenchmarkEncode/small-2  \t 50000\t %.1f ns/op\t 64 B/op\t 1 allocs/op\n", (85+j)*scale["Encode"])
			fmt.Fprintf(&b, "BenchmarkEncode/large-2  \t 300\t %.0f ns/op\t 65536 B/op\t 2 allocs/op\n", (2_400_000+j*5000)*scale["Large"])
		}
		for i := range 2 {
			fmt.Fprintf(&b, "BenchmarkRare-2  \t 10\t %d ns/op\t 0 B/op\t 0 allocs/op\n", 1_000_000_000+i*1000)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old = write("old.txt", map[string]float64{"Parse": 1, "ParseB": 1, "Encode": 1, "Large": 1})
	cur = write("new.txt", map[string]float64{"Parse": 1.25, "ParseB": 1.5, "Encode": 0.8, "Large": 1})
	return old, cur
}

// TestCompareBenchmarksText: `inquest analyze compare_benchmarks OLD NEW`
// prints benchstat's report; on fixed inputs it is
// testdata/compare_benchmarks.golden and, line for line, what benchstat
// (built from the golang.org/x/perf version in go.mod) prints for the
// same files in the same run.
func TestCompareBenchmarksText(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "data"))
	old, cur := writeBenchFiles(t)
	// Run from the files' directory so both tools name them old.txt and
	// new.txt.
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"analyze", "compare_benchmarks", old, cur}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	golden(t, "compare_benchmarks.golden", out.String())
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build benchstat")
	}
	bs := filepath.Join(t.TempDir(), "benchstat")
	if b, err := exec.Command(goBin, "build", "-o", bs, "golang.org/x/perf/cmd/benchstat").CombinedOutput(); err != nil {
		t.Fatalf("building benchstat: %v\n%s", err, b)
	}
	cmd := exec.Command(bs, "old.txt", "new.txt")
	cmd.Dir = filepath.Dir(old)
	ref, err := cmd.Output()
	if err != nil {
		t.Fatalf("benchstat: %v", err)
	}
	if out.String() != string(ref) {
		t.Errorf("differs from benchstat:\ninquest:\n%s\nbenchstat:\n%s", out.String(), ref)
	}
}
