package bin

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func needTool(t *testing.T, name string) {
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed; .ci/run installs binutils", name)
	}
}

// TestCorpusPE cross-checks the windows/amd64 build with objdump -f/-h/-p
// and its imports with the Go runtime's own import declarations.
func TestCorpusPE(t *testing.T) {
	needTool(t, "objdump")
	buildCorpus(t)
	p := corpus["go-windows-amd64.exe"]
	f, in := inspectPath(t, p)
	if !in.Complete() {
		t.Fatalf("not complete: %+v", in.Unresolved)
	}
	hdr := run(t, "objdump", "-f", p)
	if !strings.Contains(hdr, "file format pei-x86-64") || in.Header.Class != "PE32+" || in.Header.Machine.Name != "IMAGE_FILE_MACHINE_AMD64" {
		t.Errorf("format %q %v, objdump %q", in.Header.Class, in.Header.Machine, hdr)
	}
	if m := regexp.MustCompile(`start address 0x([0-9a-f]+)`).FindStringSubmatch(hdr); m == nil || hx(m[1]) != mustHex(t, in.Header.Entry) {
		t.Errorf("entry %s, objdump %q", in.Header.Entry, m)
	}
	// Section headers: Idx Name Size(VirtualSize) VMA LMA File-off.
	re := regexp.MustCompile(`^\s*(\d+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+2\*\*\d+$`)
	var n int
	for _, l := range strings.Split(run(t, "objdump", "-h", p), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if n >= len(in.Sections) {
			t.Fatalf("objdump lists more sections than we do")
		}
		s := in.Sections[n]
		// bfd's size is SizeOfRawData, or VirtualSize when that is
		// smaller; it decompresses .zdebug_* sections, so their size is
		// not comparable.
		want := mustDec(t, s.FileSize)
		if v := mustDec(t, s.Size); v > 0 && v < want {
			want = v
		}
		if strings.HasPrefix(s.Name, ".zdebug") {
			want = hx(m[3])
		}
		if s.Name != m[2] || want != hx(m[3]) || mustHex(t, s.Address) != hx(m[4]) || mustDec(t, s.Offset) != hx(m[6]) {
			t.Errorf("section %d: ours %s size %s at %s off %s; objdump %q", n, s.Name, s.Size, s.Address, s.Offset, m[0])
		}
		n++
	}
	if n != len(in.Sections) {
		t.Errorf("%d sections, objdump %d", len(in.Sections), n)
	}
	// Optional header fields and DllCharacteristics names.
	pe := run(t, "objdump", "-p", p)
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\s+([0-9a-fx]+)`).FindStringSubmatch(pe)
		if m == nil {
			t.Fatalf("objdump -p has no %s", name)
		}
		return m[1]
	}
	if hx(field("DllCharacteristics")) != mustHex(t, in.Header.Flags.Raw) {
		t.Errorf("DllCharacteristics %s, objdump %s", in.Header.Flags.Raw, field("DllCharacteristics"))
	}
	if hx(field("Characteristics")) != mustHex(t, in.Header.Type.Raw) {
		t.Errorf("Characteristics %s, objdump %s", in.Header.Type.Raw, field("Characteristics"))
	}
	if hx(field("Subsystem")) != mustHex(t, in.Header.OSABI.Raw) {
		t.Errorf("Subsystem %s, objdump %s", in.Header.OSABI.Raw, field("Subsystem"))
	}
	if hx(field("ImageBase"))+hx(field("AddressOfEntryPoint")) != mustHex(t, in.Header.Entry) {
		t.Errorf("entry %s, objdump ImageBase+AddressOfEntryPoint", in.Header.Entry)
	}
	verdicts := map[string]string{}
	for _, c := range in.Hardening {
		verdicts[c.Name] = c.Verdict
	}
	for flag, check := range map[string]string{"DYNAMIC_BASE": "aslr", "HIGH_ENTROPY_VA": "high_entropy_va", "NX_COMPAT": "nx", "GUARD_CF": "cfg"} {
		listed := regexp.MustCompile(`(?m)^\s+` + flag + `$`).MatchString(pe)
		if listed != (verdicts[check] == VerdictYes) {
			t.Errorf("%s = %s, objdump lists %s: %v", check, verdicts[check], flag, listed)
		}
	}
	sec := regexp.MustCompile(`Entry 4 ([0-9a-f]+) ([0-9a-f]+) Security Directory`).FindStringSubmatch(pe)
	if sec == nil || (hx(sec[2]) != 0) != (verdicts["certificate_table"] == VerdictYes) {
		t.Errorf("certificate_table %s, objdump %q", verdicts["certificate_table"], sec)
	}
	// Imports: a kernel32 function the Go runtime declares with
	// //go:cgo_import_dynamic is imported exactly when the linker kept its
	// hint/name string in the file (it drops unreferenced ones).
	src, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "runtime", "os_windows.go"))
	if err != nil {
		t.Skip("Go runtime sources unavailable")
	}
	got := map[string]bool{}
	for _, i := range in.Imports {
		got[strings.ToLower(i.Library)+"!"+i.Name] = true
	}
	decl := regexp.MustCompile(`(?m)^//go:cgo_import_dynamic runtime\._\w+ (\w+)%\d+ "kernel32\.dll"`).FindAllStringSubmatch(string(src), -1)
	if len(decl) < 20 {
		t.Fatalf("found only %d runtime import declarations", len(decl))
	}
	kept := 0
	for _, d := range decl {
		inFile := bytes.Contains(f.Data, []byte("\x00"+d[1]+"\x00"))
		if inFile {
			kept++
		}
		if got["kernel32.dll!"+d[1]] != inFile {
			t.Errorf("import kernel32.dll!%s: ours %v, name string in file %v", d[1], got["kernel32.dll!"+d[1]], inFile)
		}
	}
	if kept < 20 {
		t.Errorf("only %d runtime imports kept", kept)
	}
	if !contains(in.Libraries, "kernel32.dll") {
		t.Errorf("libraries %v lack kernel32.dll", in.Libraries)
	}
	crossCheckGoBuildInfo(t, p, in)
}

// TestCorpusMachO cross-checks the darwin/arm64 build with file(1)
// (binutils here has no Mach-O reader) and go version -m, and the
// universal file built from two slices with file(1) and with the slices'
// own inspections.
func TestCorpusMachO(t *testing.T) {
	buildCorpus(t)
	p := corpus["go-darwin-arm64"]
	_, in := inspectPath(t, p)
	if !in.Complete() {
		t.Fatalf("not complete: %+v", in.Unresolved)
	}
	if in.Header.Class != "64-bit" || in.Header.Machine.Name != "CpuArm64" || in.Header.Type.Name != "Exec" {
		t.Errorf("header %+v", in.Header)
	}
	if in.BuildID == nil || len(in.BuildID.UUID) != 32 {
		t.Errorf("no LC_UUID: %+v", in.BuildID)
	}
	if !contains(in.Libraries, "/usr/lib/libSystem.B.dylib") {
		t.Errorf("libraries %v lack libSystem", in.Libraries)
	}
	if in.Dynamic.Interpreter != "/usr/lib/dyld" {
		t.Errorf("interpreter %q", in.Dynamic.Interpreter)
	}
	if _, err := exec.LookPath("file"); err == nil {
		out := run(t, "file", "-b", p)
		if !strings.HasPrefix(out, "Mach-O 64-bit arm64 executable") {
			t.Errorf("file(1) says %q", out)
		}
		if m := regexp.MustCompile(`flags:<([^>]*)>`).FindStringSubmatch(out); m != nil {
			for _, fl := range strings.Split(m[1], "|") {
				if fl != "" && !strings.Contains(in.Header.Flags.Name, "MH_"+fl) {
					t.Errorf("file(1) flag %s missing from %q", fl, in.Header.Flags.Name)
				}
			}
			for _, fl := range strings.Split(in.Header.Flags.Name, "|") {
				if !strings.Contains(m[1], strings.TrimPrefix(fl, "MH_")) {
					t.Errorf("flag %s not reported by file(1) %q", fl, m[1])
				}
			}
		}
		fat := corpus["go-darwin-universal"]
		if out := run(t, "file", "-b", fat); !strings.Contains(out, "universal binary with 2 architectures") || !strings.Contains(out, "arm64") || !strings.Contains(out, "x86_64") {
			t.Errorf("file(1) on the universal file: %q", out)
		}
	}
	crossCheckGoBuildInfo(t, p, in)
	_, fin := inspectPath(t, corpus["go-darwin-universal"])
	if fin.Header.Format != FormatMachOFat || len(fin.Members) != 2 || !fin.Complete() {
		t.Fatalf("universal: %+v %+v", fin.Header, fin.Unresolved)
	}
	for i, slice := range []string{"go-darwin-arm64", "go-darwin-amd64"} {
		_, want := inspectPath(t, corpus[slice])
		got := fin.Members[i].Inspection
		if got.Header.Machine.Name != want.Header.Machine.Name || len(got.Sections) != len(want.Sections) {
			t.Fatalf("member %d: %v vs %v", i, got.Header.Machine, want.Header.Machine)
		}
		for j := range got.Sections {
			if got.Sections[j].SHA256 != want.Sections[j].SHA256 || got.Sections[j].Name != want.Sections[j].Name {
				t.Errorf("member %d section %d differs from the slice's own inspection", i, j)
			}
		}
	}
}
