package bin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRELROGradesMatchChecksec builds one program with -z relro -z now,
// -z relro (lazy binding) and -z norelro, and checks that the relro
// verdict is checksec --file's grade for each (full, partial, none), with
// the basis naming PT_GNU_RELRO and the tag or flag that makes binding
// immediate, as readelf -l and -d list them.
func TestRELROGradesMatchChecksec(t *testing.T) {
	for _, tool := range []string{"gcc", "checksec", "readelf"} {
		needTool(t, tool)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void){puts(\"x\");return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want, checksec string
		flags                []string
	}{
		{"relro-now", VerdictFull, "Full RELRO", []string{"-Wl,-z,relro,-z,now"}},
		{"relro-lazy", VerdictPartial, "Partial RELRO", []string{"-Wl,-z,relro,-z,lazy"}},
		{"norelro", VerdictNone, "No RELRO", []string{"-Wl,-z,norelro,-z,lazy"}},
		{"relro-now-static-pie", VerdictFull, "Full RELRO", []string{"-static-pie", "-Wl,-z,relro,-z,now"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name)
			if msg, err := exec.Command("gcc", append(append([]string{"-O2"}, c.flags...), "-o", out, src)...).CombinedOutput(); err != nil {
				t.Fatalf("gcc %v: %v\n%s", c.flags, err, msg)
			}
			cs := checksecFile(t, out)
			text := run(t, "checksec", "--file="+out)
			_, in := inspectPath(t, out)
			v := verdicts(in)["relro"]
			grade := map[string]string{"full": VerdictFull, "partial": VerdictPartial, "no": VerdictNone}[cs["relro"]]
			if v.Verdict != grade || v.Verdict != c.want || !strings.Contains(text, c.checksec) {
				t.Errorf("relro %s %v; checksec --output=json relro %q, text %q; built with %v", v.Verdict, v.Basis, cs["relro"], strings.TrimSpace(text), c.flags)
			}
			// The basis names what readelf shows.
			progs, dyn := run(t, "readelf", "-lW", out), run(t, "readelf", "-dW", out)
			basis := strings.Join(v.Basis, "; ")
			if strings.Contains(progs, "GNU_RELRO") != strings.Contains(basis, "PT_GNU_RELRO present") {
				t.Errorf("basis %q; readelf -l lists GNU_RELRO: %v", basis, strings.Contains(progs, "GNU_RELRO"))
			}
			if c.want == VerdictFull {
				for ref, ours := range map[string]string{"(BIND_NOW)": "DT_BIND_NOW", "Flags: NOW": "DT_FLAGS_1 has DF_1_NOW", "(FLAGS)              BIND_NOW": "DT_FLAGS has DF_BIND_NOW"} {
					if strings.Contains(dyn, ref) != strings.Contains(basis, ours) {
						t.Errorf("basis %q; readelf -d has %q: %v", basis, ref, strings.Contains(dyn, ref))
					}
				}
			}
		})
	}
}
