package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	odSectionRE  = regexp.MustCompile(`(?m)^Disassembly of section (.*):$`)
	odInsnAddrRE = regexp.MustCompile(`(?m)^ +([0-9a-f]+):\t`)
	ourInsnAddr  = regexp.MustCompile(`(?m)^0x([0-9a-f]+):\t`)
)

// TestDisasmAllWholeFile: `bin disasm FILE --all` without --symbol,
// --section or --start lists every section objdump -d disassembles, in
// its order, each under objdump's "Disassembly of section NAME:" line,
// and the same instruction addresses, read from objdump -d -w in the same
// run: a PIE executable gcc builds here (.init, .plt, .plt.got or
// .plt.sec, .text, .fini) and an object built with -ffunction-sections
// (one section per function, an empty .text skipped). A --cursor without
// --section is refused naming --cursor.
func TestDisasmAllWholeFile(t *testing.T) {
	for _, tool := range []string{"objdump", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; .ci/run installs it", tool)
		}
	}
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "h.c")
	if err := os.WriteFile(src, []byte(headersSource), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, obj := filepath.Join(dir, "h"), filepath.Join(dir, "h.o")
	for _, args := range [][]string{{"-O2", "-o", exe, src}, {"-O2", "-c", "-ffunction-sections", "-o", obj, src}} {
		if msg, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, msg)
		}
	}
	for _, c := range []struct {
		name, path  string
		minSections int
	}{{"executable", exe, 4}, {"object", obj, 3}} {
		t.Run(c.name, func(t *testing.T) {
			od, err := exec.Command("objdump", "-d", "-w", c.path).Output()
			if err != nil {
				t.Fatal(err)
			}
			out, errs, code := runCLI(t, "bin", "disasm", c.path, "--all")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			want, got := odSectionRE.FindAllStringSubmatch(string(od), -1), odSectionRE.FindAllStringSubmatch(out, -1)
			if len(want) < c.minSections {
				t.Fatalf("objdump disassembles %d sections: the input exercises too little", len(want))
			}
			names := func(m [][]string) string {
				var s []string
				for _, x := range m {
					s = append(s, x[1])
				}
				return strings.Join(s, " ")
			}
			if names(got) != names(want) {
				t.Fatalf("sections %q, objdump -d %q", names(got), names(want))
			}
			addrs := func(re *regexp.Regexp, s string) string {
				var a []string
				for _, m := range re.FindAllStringSubmatch(s, -1) {
					a = append(a, m[1])
				}
				return strings.Join(a, " ")
			}
			// Each section's addresses, in order (an object's sections
			// all start at 0).
			wantParts, gotParts := odSectionRE.Split(string(od), -1)[1:], odSectionRE.Split(out, -1)[1:]
			for i := range wantParts {
				if g, w := addrs(ourInsnAddr, gotParts[i]), addrs(odInsnAddrRE, wantParts[i]); g != w || w == "" {
					t.Errorf("section %s: addresses\n%s\nobjdump\n%s", want[i][1], g, w)
				}
			}
		})
	}
	_, errs, code := runCLI(t, "bin", "disasm", exe, "--all", "--cursor", "x")
	if code != 1 || !strings.Contains(errs, "INVALID_ARGUMENT") || !strings.Contains(errs, "--cursor") {
		t.Fatalf("--all --cursor without --section: exit %d: %s", code, errs)
	}
}
