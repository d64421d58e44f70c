package bin

import (
	"debug/dwarf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// unitWalk is what inspectDWARF reads from d: each top-level entry's
// offset, tag, producer and language, then the error that stopped the
// walk (if any).
func unitWalk(d *dwarf.Data) []string {
	var out []string
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return append(out, "error: "+err.Error())
		}
		if e == nil {
			return out
		}
		out = append(out, fmt.Sprintf("%d %v %v %v", e.Offset, e.Tag, e.Val(dwarf.AttrProducer), e.Val(dwarf.AttrLanguage)))
		r.SkipChildren()
	}
}

// TestOpenDWARFUnitsMatchesFileDWARF: reading compilation units through
// openDWARFUnits (only the sections units need) gives the same entries as
// through debug/elf's File.DWARF (every DWARF section) on every ELF of
// the corpus with DWARF (Go builds with compressed DWARF 5 for amd64,
// 386, arm64 and PIE, and gcc -g), the Go compile tool and this test
// binary (so inspectDWARF summarizes the same units).
func TestOpenDWARFUnitsMatchesFileDWARF(t *testing.T) {
	buildCorpus(t)
	var paths []string
	for _, p := range corpus {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	self, _ := os.Executable()
	paths = append(paths, self, filepath.Join(runtime.GOROOT(), "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "compile"), "testdata/reloc-amd64.o")
	withDWARF := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := Recognize(data); err != nil || f != FormatELF {
			continue
		}
		full, ferr := openDWARF(FormatELF, data)
		lean, lerr := openDWARFUnits(FormatELF, data)
		if (ferr == nil) != (lerr == nil) {
			t.Errorf("%s: File.DWARF error %v, openDWARFUnits error %v", p, ferr, lerr)
			continue
		}
		if ferr != nil {
			continue
		}
		a, b := unitWalk(full), unitWalk(lean)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: units differ\nFile.DWARF: %v\nunits only: %v", p, a, b)
		}
		if len(a) > 0 {
			withDWARF++
		}
	}
	if withDWARF < 4 {
		t.Errorf("only %d files with DWARF units compared", withDWARF)
	}
}
