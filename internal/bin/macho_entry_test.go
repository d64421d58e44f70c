package bin

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMachOMainEntryIsAnAddress (issue 36 case 8): LC_MAIN's entryoff is
// a file offset; the entry point is its address in the segment that maps
// it, as llvm-objdump --macho --private-headers gives the parts (entryoff,
// __TEXT's vmaddr and fileoff) and llvm-nm names the symbol there, in the
// same run; disassemble --start at that entry succeeds and starts there.
func TestMachOMainEntryIsAnAddress(t *testing.T) {
	objdump, nm := "llvm-objdump", "llvm-nm"
	needTool(t, objdump)
	needTool(t, nm)
	buildCorpus(t)
	for _, name := range []string{"go-darwin-arm64", "go-darwin-amd64"} {
		t.Run(name, func(t *testing.T) {
			p := corpus[name]
			hdrs := run(t, objdump, "--macho", "--private-headers", p)
			m := regexp.MustCompile(`cmd LC_MAIN\s+cmdsize \d+\s+entryoff (\d+)`).FindStringSubmatch(hdrs)
			seg := regexp.MustCompile(`segname __TEXT\s+vmaddr 0x([0-9a-f]+)\s+vmsize 0x[0-9a-f]+\s+fileoff (\d+)`).FindStringSubmatch(hdrs)
			if m == nil && name == "go-darwin-amd64" {
				t.Skip("this darwin/amd64 build starts from LC_UNIXTHREAD (TestMachONamesAndThreadEntry)")
			}
			if m == nil || seg == nil {
				t.Fatalf("llvm-objdump shows no LC_MAIN or __TEXT:\n%s", hdrs)
			}
			off, _ := strconv.ParseUint(m[1], 10, 64)
			vm, _ := strconv.ParseUint(seg[1], 16, 64)
			fo, _ := strconv.ParseUint(seg[2], 10, 64)
			want := vm + off - fo
			_, in := inspectPath(t, p)
			if mustHex(t, in.Header.Entry) != want || !strings.Contains(in.Header.EntrySource, "LC_MAIN") {
				t.Errorf("entry %s (%s); llvm-objdump: entryoff %d in __TEXT at 0x%x fileoff %d = 0x%x", in.Header.Entry, in.Header.EntrySource, off, vm, fo, want)
			}
			sym := ""
			for _, l := range strings.Split(run(t, nm, p), "\n") {
				if f := strings.Fields(l); len(f) == 3 && hx(f[0]) == want {
					sym = f[2]
				}
			}
			if !strings.HasPrefix(sym, "__rt0_") {
				t.Errorf("llvm-nm names %q at 0x%x, want the Go runtime's entry __rt0_*", sym, want)
			}
			r := registry(t, t.TempDir())
			d := mustCall(t, r, "disassemble", map[string]any{"path": p, "start": in.Header.Entry, "max_instructions": 4})
			rs := rows(d)
			if len(rs) == 0 || rs[0].(map[string]any)["address"] != in.Header.Entry {
				t.Errorf("disassemble --start %s: %v", in.Header.Entry, rs)
			}
		})
	}
}
