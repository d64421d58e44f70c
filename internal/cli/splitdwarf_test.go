package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectSplitDWARFProducersUnknown: `bin inspect --facet
// dwarf_producers` of a gcc -gsplit-dwarf build (DWARF 5 and 4), whose
// skeleton units leave DW_AT_producer and DW_AT_language to the .dwo,
// reports both unknown: the text line says the languages are in the .dwo
// files, --json gives a null producer count and null languages with an
// in_dwo reason and a partial debug_info facet; a plain -g build lists
// its producer and language with the facet complete.
func TestInspectSplitDWARFProducersUnknown(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed")
	}
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "a.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags []string
		split bool
	}{
		{"dwarf5-split", []string{"-g", "-gsplit-dwarf"}, true},
		{"dwarf4-split", []string{"-g", "-gdwarf-4", "-gsplit-dwarf"}, true},
		{"plain", []string{"-g"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name)
			cmd := exec.Command("gcc", append(c.flags, "-o", out, src)...)
			cmd.Dir = dir
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, msg)
			}
			text, errs, code := runCLI(t, "bin", "inspect", out, "--facet", "dwarf_producers")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			js, errs, code := runCLI(t, "bin", "inspect", out, "--facet", "dwarf_producers", "--json")
			if code != 0 {
				t.Fatalf("--json exit %d: %s", code, errs)
			}
			var r struct {
				Coverage struct {
					Facets map[string]struct{ State, Reason string }
				}
				Data struct {
					Counts     map[string]*int
					Inspection struct {
						Debug struct {
							Languages []string
							Unknown   map[string]string
						} `json:"debug_info"`
					}
				}
			}
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				t.Fatalf("%v: %s", err, js)
			}
			d, fc, n := r.Data.Inspection.Debug, r.Coverage.Facets["debug_info"], r.Data.Counts["dwarf_producers"]
			if c.split {
				if n != nil || d.Languages != nil || !strings.HasPrefix(d.Unknown["producers"], "in_dwo: ") || !strings.HasPrefix(d.Unknown["languages"], "in_dwo: ") || fc.State != "partial" {
					t.Errorf("producer count %v, languages %#v, unknown %v, facet %+v: want null, null, in_dwo, partial", n, d.Languages, d.Unknown, fc)
				}
				if !strings.Contains(text, "languages unknown: in the .dwo files") {
					t.Errorf("text does not say the languages are in the .dwo files:\n%s", text)
				}
				return
			}
			if n == nil || *n == 0 || len(d.Languages) == 0 || fc.State != "complete" {
				t.Errorf("producer count %v, languages %v, facet %+v: want known", n, d.Languages, fc)
			}
		})
	}
}
