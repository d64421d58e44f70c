package bin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// objdumpGuardReads counts the instructions objdump -d prints with the
// stack guard's location (%fs:0x28 on x86-64, %gs:0x14 on i386) in p.
func objdumpGuardReads(t *testing.T, p string) int {
	t.Helper()
	out := run(t, "objdump", "-d", p)
	where := "%fs:0x28"
	if strings.Contains(run(t, "readelf", "-hW", p), "Intel 80386") {
		where = "%gs:0x14"
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, where) {
			n++
		}
	}
	return n
}

// TestStackCanaryFromCode (issue 36 case 1): the stack_canary verdict is
// read from the code where the symbols do not tell: the count of
// instructions that read the stack guard equals objdump -d's in the same
// run, on the C library (which defines __stack_chk_fail and so has no
// undefined reference), gcc -fstack-protector-strong builds (dynamic,
// static-pie, static-pie stripped, -m32) and a -fno-stack-protector build
// (no, with the count 0 as its evidence).
func TestStackCanaryFromCode(t *testing.T) {
	for _, tool := range []string{"gcc", "objdump", "readelf", "strip"} {
		needTool(t, tool)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	prog := "#include <stdio.h>\n#include <string.h>\nint main(int argc, char **argv) { char buf[64]; strcpy(buf, argc > 1 ? argv[1] : \"x\"); puts(buf); return 0; }\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(name string, flags ...string) string {
		out := filepath.Join(dir, name)
		if msg, err := exec.Command("gcc", append(append([]string{"-O2"}, flags...), "-o", out, src)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", flags, err, msg)
		}
		return out
	}
	type tc struct {
		path string
		want string
	}
	cases := []tc{
		{build("ssp", "-fstack-protector-strong"), VerdictYes},
		{build("nossp", "-fno-stack-protector"), VerdictNo},
		{build("ssp-static-pie", "-static-pie", "-fstack-protector-strong"), VerdictYes},
	}
	stripped := filepath.Join(dir, "ssp-static-pie-stripped")
	if msg, err := exec.Command("sh", "-c", "cp "+cases[2].path+" "+stripped+" && strip "+stripped).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v %s", err, msg)
	}
	cases = append(cases, tc{stripped, VerdictYes})
	m32 := filepath.Join(dir, "ssp-m32")
	if msg, err := exec.Command("gcc", "-O2", "-m32", "-fstack-protector-strong", "-o", m32, src).CombinedOutput(); err == nil {
		cases = append(cases, tc{m32, VerdictYes})
	} else {
		t.Logf("no -m32 build (gcc-multilib): %s", msg)
	}
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		cases = append(cases, tc{"/usr/lib/x86_64-linux-gnu/libc.so.6", VerdictYes})
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			ref := objdumpGuardReads(t, c.path)
			_, in := inspectPath(t, c.path)
			v := verdicts(in)["stack_canary"]
			basis := strings.Join(v.Basis, "; ")
			if !strings.Contains(basis, fmt.Sprintf("%d instructions read the stack guard", ref)) || v.Verdict != c.want || (ref > 0) != (c.want == VerdictYes) {
				t.Errorf("stack_canary %s (%s); objdump -d: %d guard reads; want %s", v.Verdict, basis, ref, c.want)
			}
			t.Logf("%s: %s; objdump %d guard reads", c.path, v.Verdict, ref)
		})
	}
}
