package bin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSectionTypeRELR (issue 36 case 9): a -z pack-relative-relocs build's
// .relr.dyn is SHT_RELR, the type readelf -S prints as RELR in the same
// run (debug/elf spells type 19 "SHT_SYMTAB_SHNDX+1").
func TestSectionTypeRELR(t *testing.T) {
	needTool(t, "gcc")
	needTool(t, "readelf")
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nstatic const char *m[] = {\"a\", \"b\"};\nint main(int c, char **v){puts(m[c&1]);return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "relr")
	if msg, err := exec.Command("gcc", "-O2", "-fPIE", "-pie", "-Wl,-z,pack-relative-relocs", "-o", out, src).CombinedOutput(); err != nil {
		t.Skipf("this linker has no -z pack-relative-relocs: %v %s", err, msg)
	}
	ref := map[string]string{}
	for _, s := range readelfSections(t, out) {
		ref[s.name] = s.typ
	}
	if ref[".relr.dyn"] != "RELR" {
		t.Fatalf("readelf -S: .relr.dyn is %q, want RELR", ref[".relr.dyn"])
	}
	_, in := inspectPath(t, out)
	seen := false
	for _, s := range in.Sections {
		if s.Name == ".relr.dyn" {
			seen = true
			if s.Type != "SHT_"+ref[s.Name] {
				t.Errorf(".relr.dyn type %s, readelf %s", s.Type, ref[s.Name])
			}
		}
		if strings.Contains(s.Type, "+") {
			t.Errorf("section %s type %s is not named (readelf %s)", s.Name, s.Type, ref[s.Name])
		}
	}
	if !seen {
		t.Errorf("no .relr.dyn section listed")
	}
}
