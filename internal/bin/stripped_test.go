package bin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSectionHeadersStripped removes the section header table reference
// (e_shoff, e_shnum, e_shstrndx zeroed, as sstrip does): dynamic facts and
// the verdicts resting on program headers come from PT_DYNAMIC and match
// readelf on the same file and the intact file's verdicts; what rests on
// symbol tables is unknown, not "no".
func TestSectionHeadersStripped(t *testing.T) {
	needReadelf(t)
	buildCorpus(t)
	files := []string{corpus["c-hardened"], corpus["c-plain"], "/usr/bin/ls"}
	for _, p := range files {
		if p == "" {
			continue
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Skip(err)
			}
			if data[4] != 2 || data[5] != 1 {
				t.Skip("not ELF64 little-endian")
			}
			_, whole := inspectPath(t, p)
			for i := 40; i < 48; i++ {
				data[i] = 0
			}
			data[60], data[61], data[62], data[63] = 0, 0, 0, 0
			sp := filepath.Join(t.TempDir(), "stripped")
			os.WriteFile(sp, data, 0o755)
			_, in := inspectPath(t, sp)
			d := readelfDynamic(t, sp)
			if strings.Join(in.Dynamic.Needed, ",") != strings.Join(d.needed, ",") || strings.Join(in.Dynamic.RPath, ",") != strings.Join(d.rpath, ",") || strings.Join(in.Dynamic.RunPath, ",") != strings.Join(d.runpath, ",") {
				t.Errorf("dynamic %+v, readelf %+v", in.Dynamic, d)
			}
			if len(in.Dynamic.Needed) == 0 || in.Facets["dynamic"].State != FacetComplete {
				t.Errorf("dynamic facet %+v", in.Facets["dynamic"])
			}
			if in.Facets["imports"].State != FacetUnresolved {
				t.Errorf("imports facet %+v: absence of section headers is not absence of imports", in.Facets["imports"])
			}
			if whole.BuildID.GNU != "" && in.BuildID.GNU != whole.BuildID.GNU {
				t.Errorf("build id from PT_NOTE %q, intact %q", in.BuildID.GNU, whole.BuildID.GNU)
			}
			got, want := map[string]string{}, map[string]string{}
			for _, c := range in.Hardening {
				got[c.Name] = c.Verdict
			}
			for _, c := range whole.Hardening {
				want[c.Name] = c.Verdict
			}
			for _, k := range []string{"pie", "nx", "relro", "no_rpath"} {
				if got[k] != want[k] {
					t.Errorf("%s: %s without section headers, %s intact", k, got[k], want[k])
				}
			}
			for _, k := range []string{"stack_canary", "fortify"} {
				if got[k] != VerdictUnknown {
					t.Errorf("%s: %s, want unknown without symbol tables", k, got[k])
				}
			}
		})
	}
}
