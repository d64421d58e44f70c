package perf

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/contract"
)

// TestPprofSumOverflow: pprof sample values whose sum passes int64 are
// LIMIT_EXCEEDED; at the maximum they are exact.
func TestPprofSumOverflow(t *testing.T) {
	e := newEnv(t)
	write := func(name string, vals ...int64) string {
		m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/x"}
		f := &profile.Function{ID: 1, Name: "main.f"}
		loc := &profile.Location{ID: 1, Mapping: m, Address: 0x400010, Line: []profile.Line{{Function: f, Line: 1}}}
		p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, Mapping: []*profile.Mapping{m}, Function: []*profile.Function{f}, Location: []*profile.Location{loc}}
		for _, v := range vals {
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{v}})
		}
		path := filepath.Join(e.dir, name)
		fh, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Write(fh); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		return path
	}
	if _, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(write("of.pprof", math.MaxInt64, math.MaxInt64), "pprof")}}); code != contract.CodeLimitExceeded {
		t.Fatalf("overflowing pprof: %s", code)
	}
	r := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(write("max.pprof", math.MaxInt64-1, 1), "pprof")}})
	if !strings.Contains(mustJSON(r), `"9223372036854775807"`) {
		t.Fatal("exact maximum total missing")
	}
}
