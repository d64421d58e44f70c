package hsperf_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/managed/hsperf"
	"github.com/inquest-dev/inquest/internal/managed/jvmtest"
)

// jcmdCounters runs `jcmd PID PerfCounter.print` and returns name=value.
func jcmdCounters(t *testing.T, pid int) map[string]string {
	t.Helper()
	out, err := exec.Command("jcmd", strconv.Itoa(pid), "PerfCounter.print").Output()
	if err != nil {
		t.Fatalf("jcmd: %v", err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m
}

// perfFile returns the path of a JVM's hsperfdata file, polling until the
// JVM has created it.
func perfFile(t testing.TB, pid int) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ms, _ := filepath.Glob(filepath.Join(os.TempDir(), "hsperfdata_*", strconv.Itoa(pid)))
		if len(ms) > 0 {
			if f, err := hsperf.Read(ms[0]); err == nil && len(f.Entries) > 0 {
				return ms[0]
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no readable hsperfdata file appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestParseMatchesJcmd parses a live JVM's file and checks every counter
// name, every constant's value and every string against jcmd
// PerfCounter.print, which reads the same file.
func TestParseMatchesJcmd(t *testing.T) {
	if _, err := exec.LookPath("jcmd"); err != nil {
		t.Skip("jcmd not installed")
	}
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			p := jvmtest.Start(t, jdk)
			path := perfFile(t, p.PID)
			ref := jcmdCounters(t, p.PID)
			f, err := hsperf.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Prologue.Major != 2 || !f.Prologue.Accessible || int(f.Prologue.NumEntries) != len(f.Entries) {
				t.Fatalf("prologue %+v with %d entries", f.Prologue, len(f.Entries))
			}
			checked := 0
			for _, e := range f.Entries {
				v, ok := ref[e.Name]
				if !ok {
					// jcmd prints supported counters only (flags bit 0 on).
					continue
				}
				switch {
				case e.IsString && e.Variability == hsperf.Constant:
					if strconv.Quote(e.String) != v && `"`+e.String+`"` != v {
						t.Errorf("%s = %q, jcmd %s", e.Name, e.String, v)
					}
					checked++
				case e.IsLong && e.Variability == hsperf.Constant:
					if strconv.FormatInt(e.Long, 10) != v {
						t.Errorf("%s = %d, jcmd %s", e.Name, e.Long, v)
					}
					checked++
				}
			}
			// jcmd synthesizes sun.perfdata.* from the prologue.
			st, _ := os.Stat(path)
			for k, want := range map[string]int64{"sun.perfdata.majorVersion": int64(f.Prologue.Major), "sun.perfdata.minorVersion": int64(f.Prologue.Minor),
				"sun.perfdata.overflow": int64(f.Prologue.Overflow), "sun.perfdata.used": int64(f.Prologue.Used), "sun.perfdata.size": st.Size()} {
				if ref[k] != strconv.FormatInt(want, 10) {
					t.Errorf("%s: prologue says %d, jcmd %s", k, want, ref[k])
				}
				delete(ref, k)
			}
			delete(ref, "sun.perfdata.timestamp")
			names := map[string]bool{}
			for _, e := range f.Entries {
				names[e.Name] = true
			}
			for k := range ref {
				if !names[k] {
					t.Errorf("jcmd prints %s, which the parse lacks", k)
				}
			}
			if checked < 20 {
				t.Fatalf("only %d counters compared", checked)
			}
			if e, ok := f.Lookup("sun.os.hrt.frequency"); !ok || e.Unit != hsperf.UnitHertz || e.Variability != hsperf.Constant {
				t.Errorf("sun.os.hrt.frequency: %+v", e)
			}
			if e, ok := f.Lookup("sun.gc.collector.0.time"); !ok || e.Unit != hsperf.UnitTicks || e.Variability != hsperf.Monotonic {
				t.Errorf("sun.gc.collector.0.time: %+v", e)
			}
		})
	}
}

func realFile(t testing.TB) []byte {
	b, err := os.ReadFile("testdata/jdk17-g1.hsperfdata")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadFiles: truncated, oversized and corrupted files are typed
// FormatErrors, never a panic and never a value.
func TestBadFiles(t *testing.T) {
	good := realFile(t)
	if _, err := hsperf.Parse(good); err != nil {
		t.Fatalf("the committed real file: %v", err)
	}
	le := binary.LittleEndian
	edit := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	used := int(le.Uint32(good[8:]))
	first := int(le.Uint32(good[24:]))
	cases := []struct {
		name string
		in   []byte
		want hsperf.Reason
	}{
		{"empty", nil, hsperf.ReasonTruncated},
		{"prologue cut", good[:20], hsperf.ReasonTruncated},
		{"cut before used", good[:used-1], hsperf.ReasonTruncated},
		{"cut in first entry", good[:first+10], hsperf.ReasonTruncated},
		{"oversized", make([]byte, hsperf.MaxFileSize+1), hsperf.ReasonOversized},
		{"bad magic", edit(func(b []byte) { b[0] = 0 }), hsperf.ReasonCorrupt},
		{"bad byte order", edit(func(b []byte) { b[4] = 7 }), hsperf.ReasonCorrupt},
		{"version 3", edit(func(b []byte) { b[5] = 3 }), hsperf.ReasonCorrupt},
		{"not accessible", edit(func(b []byte) { b[7] = 0 }), hsperf.ReasonNotReady},
		{"used beyond file", edit(func(b []byte) { le.PutUint32(b[8:], uint32(len(good)+1)) }), hsperf.ReasonTruncated},
		{"used below prologue", edit(func(b []byte) { le.PutUint32(b[8:], 4) }), hsperf.ReasonCorrupt},
		{"too many entries", edit(func(b []byte) { le.PutUint32(b[28:], 1<<30) }), hsperf.ReasonOversized},
		{"negative entries", edit(func(b []byte) { le.PutUint32(b[28:], 0xffffffff) }), hsperf.ReasonCorrupt},
		{"more entries than written", edit(func(b []byte) { le.PutUint32(b[28:], le.Uint32(b[28:])+1) }), hsperf.ReasonTruncated},
		{"entry offset outside", edit(func(b []byte) { le.PutUint32(b[24:], uint32(used+8)) }), hsperf.ReasonCorrupt},
		{"entry length huge", edit(func(b []byte) { le.PutUint32(b[first:], 1<<30) }), hsperf.ReasonCorrupt},
		{"entry length zero", edit(func(b []byte) { le.PutUint32(b[first:], 0) }), hsperf.ReasonCorrupt},
		{"name offset outside", edit(func(b []byte) { le.PutUint32(b[first+4:], 1<<20) }), hsperf.ReasonCorrupt},
		{"name offset negative", edit(func(b []byte) { le.PutUint32(b[first+4:], 0xfffffff0) }), hsperf.ReasonCorrupt},
		{"negative vector", edit(func(b []byte) { le.PutUint32(b[first+8:], 0x80000000) }), hsperf.ReasonCorrupt},
		{"vector past entry", edit(func(b []byte) { le.PutUint32(b[first+8:], 1<<20) }), hsperf.ReasonCorrupt},
		{"unknown type", edit(func(b []byte) { b[first+12] = 'Q' }), hsperf.ReasonCorrupt},
		{"data offset outside", edit(func(b []byte) { le.PutUint32(b[first+16:], 1<<20) }), hsperf.ReasonCorrupt},
		{"name without NUL", edit(func(b []byte) {
			n := int(le.Uint32(b[first+4:]))
			l := int(le.Uint32(b[first:]))
			for i := first + n; i < first+l; i++ {
				b[i] = 'x'
			}
		}), hsperf.ReasonCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := hsperf.Parse(c.in)
			if err == nil {
				t.Fatalf("parsed %d entries, want %s", len(f.Entries), c.want)
			}
			if got := hsperf.ReasonOf(err); got != c.want {
				t.Fatalf("reason %q (%v), want %q", got, err, c.want)
			}
		})
	}
}

// FuzzParse: any input parses or fails with a FormatError; a parse never
// yields an entry whose data lies outside the used size.
func FuzzParse(f *testing.F) {
	f.Add(realFile(f))
	// And a file this run's JVM writes, when a JDK is installed.
	if ks := jvmtest.JDKs(); len(ks) > 0 {
		p := jvmtest.Start(f, ks[0])
		if b, err := os.ReadFile(perfFile(f, p.PID)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := hsperf.Parse(b)
		if err != nil {
			if hsperf.ReasonOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, e := range pf.Entries {
			if int64(e.Offset)+int64(e.DataOffset) > int64(pf.Prologue.Used) {
				t.Fatalf("entry %q data at %d beyond used %d", e.Name, e.Offset+e.DataOffset, pf.Prologue.Used)
			}
		}
	})
}

// BenchmarkParse parses the committed real file (one sampler read).
func BenchmarkParse(b *testing.B) {
	in := realFile(b)
	for b.Loop() {
		if _, err := hsperf.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}
