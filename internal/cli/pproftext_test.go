package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// writeTestProfile writes a profile with fixed contents: sample types
// (name, unit) in order, and for each stack (leaf first, function names)
// its values.
func writeTestProfile(t *testing.T, path string, types [][2]string, durationNS int64, stacks [][]string, values [][]int64) {
	t.Helper()
	p := &profile.Profile{DurationNanos: durationNS, TimeNanos: 1_700_000_000_000_000_000}
	for _, st := range types {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: st[0], Unit: st[1]})
	}
	p.PeriodType = p.SampleType[len(p.SampleType)-1]
	p.Period = 1
	fns := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := fns[name]; ok {
			return l
		}
		f := &profile.Function{ID: uint64(len(fns) + 1), Name: name, SystemName: name, Filename: "x.go"}
		l := &profile.Location{ID: uint64(len(fns) + 1), Address: uint64(0x1000 + 16*len(fns)), Line: []profile.Line{{Function: f, Line: 1}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		fns[name] = l
		return l
	}
	for i, s := range stacks {
		var locs []*profile.Location
		for _, n := range s {
			locs = append(locs, loc(n))
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: values[i]})
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
}

// testProfiles writes a CPU-shaped profile (samples/count, cpu/nanoseconds)
// and a heap-shaped one (alloc_objects/count, alloc_space/bytes) whose
// values span units (ns to s, B to MB), and returns their paths.
func testProfiles(t *testing.T) (cpu, heap string) {
	dir := t.TempDir()
	cpu = filepath.Join(dir, "cpu.pprof")
	heap = filepath.Join(dir, "heap.pprof")
	stacks := [][]string{
		{"main.hot", "main.work", "main.main"},
		{"main.warm", "main.work", "main.main"},
		{"runtime.mallocgc", "main.warm", "main.work", "main.main"},
		{"main.cold", "main.main"},
		{"runtime.gcBgMarkWorker"},
	}
	writeTestProfile(t, cpu, [][2]string{{"samples", "count"}, {"cpu", "nanoseconds"}}, 3_000_000_000, stacks,
		[][]int64{{180, 1_800_000_000}, {60, 600_000_000}, {12, 120_000_000}, {1, 10_000_000}, {7, 70_000_000}})
	writeTestProfile(t, heap, [][2]string{{"alloc_objects", "count"}, {"alloc_space", "bytes"}}, 0, stacks,
		[][]int64{{5000, 300 << 20}, {1200, 12 << 20}, {90, 700 << 10}, {3, 4096}, {1, 512}})
	return cpu, heap
}

// TestSummarizeProfileText: `inquest analyze summarize_profile` prints
// one pprof -top table per sample type; on fixed profiles the text is
// testdata/summarize_profile_{cpu,heap}.golden, and every table's rows
// (flat, flat%, sum%, cum, cum% and name, in order) and its total line
// are what `go tool pprof -top` prints for the same file and sample type
// in the same run.
func TestSummarizeProfileText(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "data"))
	cpu, heap := testProfiles(t)
	for _, c := range []struct {
		name, path string
		types      []string
	}{
		{"cpu", cpu, []string{"cpu", "samples"}},
		{"heap", heap, []string{"alloc_space", "alloc_objects"}},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), []string{"analyze", "summarize_profile", c.path}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errb.String())
		}
		golden(t, "summarize_profile_"+c.name+".golden", out.String())
		tables := strings.Split(out.String(), "\n\n")
		if len(tables) != len(c.types) {
			t.Fatalf("%s: %d tables, want %d:\n%s", c.name, len(tables), len(c.types), out.String())
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("no go command for go tool pprof")
		}
		for i, st := range c.types {
			if !strings.HasPrefix(tables[i], "Type: "+st+"\n") {
				t.Fatalf("%s table %d is not %s:\n%s", c.name, i, st, tables[i])
			}
			ref, err := exec.Command(goBin, "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=1000000", "-symbolize=none", "-sample_index="+st, c.path).Output()
			if err != nil {
				t.Fatalf("go tool pprof: %v", err)
			}
			// From "Showing nodes" on: the total line, the header and
			// the rows; pprof marks inlined frames, which this
			// profile has none of.
			want := string(ref[bytes.Index(ref, []byte("Showing nodes")):])
			got := tables[i][strings.Index(tables[i], "Showing nodes"):]
			if strings.TrimRight(got, "\n") != strings.TrimRight(want, "\n") {
				t.Errorf("%s %s differs from go tool pprof -top:\ninquest:\n%s\npprof:\n%s", c.name, st, got, want)
			}
			// The Duration line, where pprof prints one.
			if j := bytes.Index(ref, []byte("Duration: ")); j >= 0 {
				line := string(ref[j : j+bytes.IndexByte(ref[j:], '\n')])
				if !strings.Contains(tables[i], strings.TrimRight(line, " ")+"\n") {
					t.Errorf("%s %s: pprof says %q:\n%s", c.name, st, line, tables[i])
				}
			}
		}
	}
}

// TestPprofLabels: the unit spelling of pprof's measurement package.
func TestPprofLabels(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{800_000_000, "nanoseconds", "800ms"},
		{1_905_940_981, "nanoseconds", "1.91s"},
		{0, "nanoseconds", "0"},
		{1536, "bytes", "1.50kB"},
		{300 << 20, "bytes", "300MB"},
		{54, "count", "54"},
	} {
		if got := pprofLabel(c.v, c.unit, pprofAutoUnit(c.v, c.unit)); got != c.want {
			t.Errorf("%v %s: %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}
