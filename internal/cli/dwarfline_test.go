package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInspectDWARFLine: `bin inspect` prints what inspect_binary says of
// DWARF: none for a binary without debug sections, present with the units
// not read by default for a gcc -g build, and the units and languages with
// --facet dwarf_producers (readelf --debug-dump=info's compile units
// and DW_AT_language, read in the same run).
func TestInspectDWARFLine(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "h.c")
	if err := os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ name, flag string }{{"plain", "-g0"}, {"debug", "-g"}} {
		if out, err := exec.Command("gcc", b.flag, "-o", filepath.Join(dir, b.name), src).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", b.flag, err, out)
		}
	}
	// The reference: readelf's compile units and their DW_AT_language
	// names, read in this run.
	ref, err := exec.Command("readelf", "--debug-dump=info", filepath.Join(dir, "debug")).Output()
	if err != nil {
		t.Skip("readelf: ", err)
	}
	units := strings.Count(string(ref), "(DW_TAG_compile_unit)")
	lang := regexp.MustCompile(`DW_AT_language\s*:\s*\d+\s*\((\w+)\)`).FindStringSubmatch(string(ref))
	if units != 1 || lang == nil {
		t.Fatalf("readelf lists %d compile units, language %v", units, lang)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "plain")}, "dwarf none\n"},
		{[]string{filepath.Join(dir, "debug")}, "dwarf present (units not read: --facet dwarf_producers reads them)\n"},
		{[]string{"--facet", "dwarf_producers", filepath.Join(dir, "debug")}, fmt.Sprintf("dwarf %d units (%s)\n", units, lang[1])},
	} {
		out, errs, code := runCLI(t, append([]string{"bin", "inspect"}, tc.args...)...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("bin inspect %v: exit %d, want a line %q in:\n%s%s", tc.args, code, tc.want, out, errs)
		}
	}
}
