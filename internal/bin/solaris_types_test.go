package bin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSolarisTypeSpelling (issue 36 case 9): under EI_OSABI
// ELFOSABI_SOLARIS (6) the OS-specific section and segment types are
// spelled as readelf -S -W and -l -W spell them in the same run (SUNW_cap,
// SUNW_move, PT_SUNWBSS, PT_SUNW_UNWIND, ...), and the same values under
// OSABI NONE and GNU keep readelf's GNU or LOOS+ spelling (GNU_ATTRIBUTES,
// GNU_MBIND+0x1). Every value from 0x6fffffe8 to 0x6fffffff is written
// into a gcc build's section and segment headers.
func TestSolarisTypeSpelling(t *testing.T) {
	needTool(t, "gcc")
	needTool(t, "readelf")
	dir := t.TempDir()
	obj := compileObject(t, dir, "s.o", "int x;\n")
	exe := compileC(t, "gcc", dir, "exe", "int main(void){return 0;}\n")
	objData, _ := os.ReadFile(obj)
	exeData, _ := os.ReadFile(exe)
	values := []uint32{0x60000000, 0x6fff4700, 0x6464e550, 0x6474e550, 0x6474e555, 0x6474e556, 0x6474f554, 0x6474f555, 0x70000000}
	for v := uint32(0x6fffffe8); v <= 0x6fffffff; v++ {
		values = append(values, v)
	}
	named := 0
	for _, osabi := range []byte{6, 0, 3} {
		for _, v := range values {
			t.Run(fmt.Sprintf("osabi %d type %#x", osabi, v), func(t *testing.T) {
				for _, c := range []struct {
					src []byte
					p   elfPatch
				}{
					{objData, elfPatch{secType: v, osabi: osabi, setOSABI: true}},
					{exeData, elfPatch{segType: v, osabi: osabi, setOSABI: true}},
				} {
					path := filepath.Join(dir, "patched")
					if err := os.WriteFile(path, applyELFPatch(t, c.src, ".comment", c.p), 0o644); err != nil {
						t.Fatal(err)
					}
					ref := readelfTypesFlags(t, path)
					_, in := inspectPath(t, path)
					for _, s := range in.Sections {
						if r := ref[s.Index]; ourAsReadelfSection(s.Type) != r[0] {
							t.Errorf("section %s: type %s; readelf -S %q", s.Name, s.Type, r[0])
						} else if strings.Contains(r[0], "SUNW") {
							named++
						}
					}
					segs := readelfSegTypes(t, path)
					if len(segs) != len(in.Segments) {
						t.Fatalf("%d segments, readelf -l %d", len(in.Segments), len(segs))
					}
					for i, s := range in.Segments {
						want := ourAsReadelfSegment(s.Type)
						if strings.HasPrefix(segs[i], "PT_") {
							// readelf's Solaris names carry the prefix.
							want = s.Type[:min(14, len(s.Type))]
						}
						if want != segs[i] {
							t.Errorf("segment %d: type %s; readelf -l %q", i, s.Type, segs[i])
						} else if strings.Contains(segs[i], "SUNW") {
							named++
						}
					}
				}
			})
		}
	}
	if !t.Failed() && named < 15 {
		t.Fatalf("readelf named %d SUNW types; want the Solaris table exercised", named)
	}
}
