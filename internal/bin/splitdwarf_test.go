package bin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	readelfUnitRE = regexp.MustCompile(`(?m)^\s*Compilation Unit @ offset`)
	readelfDWORE  = regexp.MustCompile(`DW_AT_(?:GNU_)?dwo_name\s*:.*?: (\S+)\s*$`)
)

// readelfUnits runs readelf --debug-dump=info without following links to
// .dwo files (-wN) on p: the units of its own .debug_info, how many are
// skeletons (DW_UT_skeleton, or a DWARF 4 unit naming its .dwo) and the
// .dwo names, sorted.
func readelfUnits(t *testing.T, p string) (units, skeletons int, dwos []string) {
	t.Helper()
	out, err := exec.Command("readelf", "-wN", "--debug-dump=info", p).Output()
	if err != nil {
		t.Fatalf("readelf -wN --debug-dump=info %s: %v", p, err)
	}
	units = len(readelfUnitRE.FindAllIndex(out, -1))
	seen := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if m := readelfDWORE.FindStringSubmatch(l); m != nil {
			skeletons++
			if !seen[m[1]] {
				seen[m[1]] = true
				dwos = append(dwos, m[1])
			}
		}
	}
	sort.Strings(dwos)
	return units, skeletons, dwos
}

// TestInspectSplitDWARFSkeletons: a gcc -gsplit-dwarf build's skeleton
// units are counted as units and as skeletons, with their .dwo names, as
// readelf --debug-dump=info shows them (DWARF 5 DW_UT_skeleton and DWARF 4
// DW_AT_GNU_dwo_name), beside a plain -g build with no skeleton; the
// producers and languages gcc leaves to the .dwo files are unknown
// (null, "in_dwo"), not an empty list.
func TestInspectSplitDWARFSkeletons(t *testing.T) {
	needTool(t, "readelf")
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"dwarf5-split", []string{"-g", "-gsplit-dwarf"}},
		{"dwarf4-split", []string{"-g", "-gdwarf-4", "-gsplit-dwarf"}},
		{"dwarf5-two-units", []string{"-g", "-gsplit-dwarf", "-DTWO"}},
		{"dwarf5-plain", []string{"-g"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := filepath.Join(dir, c.name)
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			needTool(t, "gcc")
			srcs := []string{"int main(void) { return 0; }\n"}
			if strings.Contains(strings.Join(c.flags, " "), "TWO") {
				srcs = []string{"int f(void);\nint main(void) { return f(); }\n", "int f(void) { return 1; }\n"}
			}
			args := append([]string{}, c.flags...)
			for i, s := range srcs {
				f := filepath.Join(sub, "u"+string(rune('a'+i))+".c")
				if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, f)
			}
			out := filepath.Join(sub, "prog")
			cmd := exec.Command("gcc", append(args, "-o", out)...)
			cmd.Dir = sub
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("gcc %v: %v\n%s", args, err, msg)
			}
			units, skel, dwos := readelfUnits(t, out)
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			in, err := inspectMode(context.Background(), data, false, dwarfUnits)
			if err != nil {
				t.Fatal(err)
			}
			d := in.Debug
			if d == nil || d.Units == nil {
				t.Fatalf("no DWARF unit count: %+v", d)
			}
			if *d.Units != units || d.SkeletonUnits != skel || strings.Join(d.DWONames, ",") != strings.Join(dwos, ",") {
				t.Errorf("units %d, skeletons %d, dwo %v; readelf: units %d, skeletons %d, dwo %v", *d.Units, d.SkeletonUnits, d.DWONames, units, skel, dwos)
			}
			if strings.Contains(c.name, "split") && skel == 0 {
				t.Errorf("readelf shows no skeleton unit in a split-DWARF build")
			}
			// The producers and languages: those readelf shows in the
			// binary's own units (-wN) when every unit has one; unknown
			// (null, "in_dwo") when a skeleton leaves them to its .dwo,
			// where readelf finds them (they are not absent).
			own, _ := exec.Command("readelf", "-wN", "--debug-dump=info", out).Output()
			for _, f := range []struct {
				field, attr string
				got         []string
			}{{"producers", "DW_AT_producer", d.Producers}, {"languages", "DW_AT_language", d.Languages}} {
				n := strings.Count(string(own), f.attr+" ")
				if n >= units {
					if len(f.got) == 0 || d.Unknown[f.field] != "" {
						t.Errorf("%s: %v (unknown %q); readelf shows %s in each of the %d units", f.field, f.got, d.Unknown[f.field], f.attr, units)
					}
					continue
				}
				if f.got != nil || !strings.HasPrefix(d.Unknown[f.field], "in_dwo: ") {
					t.Errorf("%s: %#v (unknown %q); readelf shows %s in %d of %d units: want null, unknown in_dwo", f.field, f.got, d.Unknown[f.field], f.attr, n, units)
				}
				for _, dwo := range dwos {
					if !filepath.IsAbs(dwo) {
						dwo = filepath.Join(sub, dwo)
					}
					b, err := exec.Command("readelf", "--debug-dump=info", dwo).Output()
					if err != nil || !strings.Contains(string(b), f.attr) {
						t.Errorf("%s: readelf finds no %s in %s (%v): the fixture does not show it is there", f.field, f.attr, dwo, err)
					}
				}
				if st := in.Facets["debug_info"]; st.State != FacetPartial || !strings.HasPrefix(st.Reason, "in_dwo") {
					t.Errorf("debug_info facet %+v: want partial, in_dwo", st)
				}
			}
		})
	}
}
