package bin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// gccBuild compiles the C source src with gcc and flags into dir/name; it
// fails t when gcc does.
func gccBuild(t *testing.T, dir, name, src string, flags ...string) string {
	t.Helper()
	needTool(t, "gcc")
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append(append([]string{}, flags...), "-o", out, c)
	if msg, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, msg)
	}
	return out
}

var objdumpReloc = regexp.MustCompile(`^\t+([0-9a-f]+): (R_\S+)\t(.*)$`)

// objdumpSection returns the instruction addresses and relocation lines
// ("addr TYPE target") objdump -dr prints for one section.
func objdumpSection(t *testing.T, p, section string) ([]uint64, []string) {
	t.Helper()
	var addrs []uint64
	var relocs []string
	for _, l := range strings.Split(run(t, "objdump", "-dr", "--no-show-raw-insn", "-j", section, p), "\n") {
		if m := objdumpReloc.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			relocs = append(relocs, fmt.Sprintf("%#x %s %s", a, m[2], m[3]))
			continue
		}
		if m := objdumpInsnLine.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			addrs = append(addrs, a)
		}
	}
	return addrs, relocs
}

// relocSource declares what it calls instead of including headers, so it
// compiles with -m32 where no 32-bit C library headers are installed.
const relocSource = `int printf(const char *, ...);
char *strcpy(char *, const char *);
unsigned long strlen(const char *);
static int counter;
const char *greeting = "hello";
int helper(int x) { return x * 7 + counter++; }
int main(int argc, char **argv) {
	char buf[32];
	strcpy(buf, argc > 1 ? argv[1] : greeting);
	printf("%s %d\n", buf, helper(argc));
	return (int)strlen(buf);
}
`

// TestDisassembleRelocatableObject (issue case 2): a gcc -c object (and a
// 32-bit one) disassembles with section-relative addresses, by section
// and by symbol, and each instruction lists the relocations objdump -dr
// prints for it.
func TestDisassembleRelocatableObject(t *testing.T) {
	needTool(t, "objdump")
	dir := t.TempDir()
	objs := map[string]string{"x86-64": gccBuild(t, dir, "reloc64.o", relocSource, "-c", "-O1", "-fcf-protection=full")}
	if o, err := exec.Command("gcc", "-m32", "-c", "-O1", "-o", filepath.Join(dir, "reloc32.o"), filepath.Join(dir, "reloc64.o.c")).CombinedOutput(); err == nil {
		objs["x86"] = filepath.Join(dir, "reloc32.o")
	} else {
		t.Fatalf("gcc -m32 -c: %v\n%s", err, o)
	}
	r := registry(t, "")
	for arch, p := range objs {
		t.Run(arch, func(t *testing.T) {
			wantAddrs, wantRelocs := objdumpSection(t, p, ".text")
			res := mustCall(t, r, "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 5000})
			var gotAddrs []uint64
			var gotRelocs []string
			for _, row := range rows(res) {
				m := row.(map[string]any)
				a := mustHex(t, m["address"].(string))
				gotAddrs = append(gotAddrs, a)
				if m["error"] != nil {
					t.Errorf("%#x: %v", a, m["error"])
				}
				rl, _ := m["relocations"].([]any)
				for _, x := range rl {
					x := x.(map[string]any)
					gotRelocs = append(gotRelocs, fmt.Sprintf("%#x %s %s", mustHex(t, x["address"].(string)), x["type"], x["target"]))
				}
			}
			if fmt.Sprint(gotAddrs) != fmt.Sprint(wantAddrs) {
				t.Errorf("instruction addresses differ from objdump:\n ours %x\n objdump %x", gotAddrs, wantAddrs)
			}
			sort.Strings(gotRelocs)
			sort.Strings(wantRelocs)
			if strings.Join(gotRelocs, "\n") != strings.Join(wantRelocs, "\n") {
				t.Errorf("relocations differ from objdump -dr:\n ours %q\n objdump %q", gotRelocs, wantRelocs)
			}
			if len(wantRelocs) < 3 {
				t.Errorf("objdump lists only %d relocations; the object does not exercise them", len(wantRelocs))
			}
			if got := data(res)["context"].(map[string]any)["start"]; got != "0x0" {
				t.Errorf("start %v, want section-relative 0x0", got)
			}
			// By symbol: main starts where objdump's <main> label is.
			sym := mustCall(t, r, "disassemble", map[string]any{"path": p, "symbol": "main", "max_instructions": 5000})
			first := rows(sym)[0].(map[string]any)["address"].(string)
			var mainAddr string
			for _, l := range strings.Split(run(t, "objdump", "-d", p), "\n") {
				if strings.HasSuffix(l, " <main>:") {
					v, _ := strconv.ParseUint(strings.Fields(l)[0], 16, 64)
					mainAddr = hexU(v)
				}
			}
			if first != mainAddr {
				t.Errorf("symbol main starts at %s, objdump's <main> at %s", first, mainAddr)
			}
		})
	}
}
