package cli

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// goCross builds a tiny Go program for goos/goarch into dir (the flags of
// the bin package's corpus, so a warm build cache serves both).
func goCross(t *testing.T, dir, goos, goarch string) string {
	t.Helper()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/fat\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"fat\") }\n"), 0o644)
	out := filepath.Join(dir, goos+"-"+goarch)
	cmd := exec.Command(goBin(), "build", "-trimpath", "-buildvcs=false", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s/%s: %v\n%s", goos, goarch, err, msg)
	}
	return out
}

func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// fatFile writes a universal Mach-O file (mach-o/fat.h: big-endian
// fat_header, one fat_arch per slice, slices aligned to 2^14) of slices.
func fatFile(t *testing.T, p string, slices ...string) {
	t.Helper()
	var hdr bytes.Buffer
	be := func(v uint32) { binary.Write(&hdr, binary.BigEndian, v) }
	be(0xcafebabe)
	be(uint32(len(slices)))
	off := uint32(1 << 14)
	var bodies [][]byte
	var offs []uint32
	for _, s := range slices {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		be(binary.LittleEndian.Uint32(b[4:]))
		be(binary.LittleEndian.Uint32(b[8:]))
		be(off)
		be(uint32(len(b)))
		be(14)
		bodies, offs = append(bodies, b), append(offs, off)
		off = (off + uint32(len(b)) + 1<<14 - 1) &^ (1<<14 - 1)
	}
	out := make([]byte, off)
	copy(out, hdr.Bytes())
	for i, b := range bodies {
		copy(out[offs[i]:], b)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBinInspectPrintsUnknownAsUnknown: `inquest bin inspect` never prints
// an unknown fact as 0 or "": an ELF cut to 3,000 bytes prints its soname
// as unknown (its dynamic section was not read); a 7-byte ELF prints the
// class and byte order its e_ident bytes give; a universal Mach-O says how
// many slices it has, how to select one, and each slice's counts (those of
// debug/macho on the slice) and Go build id (`go tool buildid` on the slice,
// in this run), never "sections 0"; an ELF prints its GNU build id as
// readelf -n shows it in this run, also in the cut ELF (through PT_NOTE).
func TestBinInspectPrintsUnknownAsUnknown(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	dir := t.TempDir()
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	whole, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc3000")
	os.WriteFile(trunc, whole[:3000], 0o644)
	out, errs, code := runCLI(t, "bin", "inspect", trunc)
	if code != 0 || !strings.Contains(out, "soname unknown") || !strings.Contains(out, "needed unknown") || strings.Contains(out, `""`) {
		t.Errorf("trunc3000: exit %d\n%s%s", code, out, errs)
	}

	seven := filepath.Join(dir, "seven")
	os.WriteFile(seven, []byte("\x7fELF\x02\x01\x01"), 0o644)
	out, errs, code = runCLI(t, "bin", "inspect", seven)
	if code != 0 || !strings.Contains(out, "format elf ELFCLASS64 little-endian ") || strings.Contains(out, " -endian") {
		t.Errorf("7-byte ELF: exit %d\n%s%s", code, out, errs)
	}

	if _, err := exec.LookPath("readelf"); err == nil {
		notes, err := exec.Command("readelf", "-n", fixture).Output()
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindSubmatch(notes)
		if m == nil {
			t.Fatalf("readelf -n shows no build id:\n%s", notes)
		}
		out, _, _ = runCLI(t, "bin", "inspect", fixture)
		if !strings.Contains(out, "\nbuild id gnu="+string(m[1])+"\n") {
			t.Errorf("ELF: no line \"build id gnu=%s\":\n%s", m[1], out)
		}
		// The cut file's section headers are gone, its PT_NOTE
		// segment is not: readelf -n still shows the id, and so do we
		// (others unknown).
		notes, _ = exec.Command("readelf", "-n", trunc).Output()
		if m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindSubmatch(notes); m == nil {
			t.Errorf("readelf -n shows no build id in the cut file:\n%s", notes)
		} else if out, _, _ = runCLI(t, "bin", "inspect", trunc); !strings.Contains(out, "\nbuild id gnu="+string(m[1])+" (others unknown: ") {
			t.Errorf("trunc3000: no line \"build id gnu=%s (others unknown: ...)\":\n%s", m[1], out)
		}
	}

	arm, amd := goCross(t, dir, "darwin", "arm64"), goCross(t, dir, "darwin", "amd64")
	fat := filepath.Join(dir, "universal")
	fatFile(t, fat, arm, amd)
	out, errs, code = runCLI(t, "bin", "inspect", fat)
	if code != 0 || !strings.Contains(out, "a universal file of 2 slices; inspect one with --arch NAME (arm64, x86_64)") {
		t.Fatalf("universal: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "sections 0") || strings.Contains(out, "HARDENING") || strings.Contains(out, "machine ?") {
		t.Errorf("universal: a slice count shown as 0 or empty per-file facts:\n%s", out)
	}
	for _, s := range []struct{ arch, path string }{{"arm64", arm}, {"x86_64", amd}} {
		f, err := macho.Open(s.path)
		if err != nil {
			t.Fatal(err)
		}
		nsegs := 0
		for _, l := range f.Loads {
			if _, ok := l.(*macho.Segment); ok {
				nsegs++
			}
		}
		f.Close()
		id, err := exec.Command(goBin(), "tool", "buildid", s.path).Output()
		if err != nil {
			t.Fatalf("go tool buildid: %v", err)
		}
		want := regexp.MustCompile(`(?m)^slice ` + s.arch + `  cpu \S+  offset \d+  size \d+  type Exec  entry 0x[0-9a-f]+  sections ` + strconv.Itoa(len(f.Sections)) + `  segments ` + strconv.Itoa(nsegs) + `  imports \d+  exports \d+\n  build id go=` + regexp.QuoteMeta(strings.TrimSpace(string(id))) + ` uuid=[0-9A-F]+\n`)
		if !want.MatchString(out) {
			t.Errorf("universal: no slice %s line with %d sections, %d segments and build id %s:\n%s", s.arch, len(f.Sections), nsegs, id, out)
		}
		// symbols and disasm read one slice and say which.
		line := regexp.MustCompile(`^slice ` + s.arch + ` \(offset \d+, \d+ bytes of the universal file; --arch selects another\)\n`)
		sout, serrs, scode := runCLI(t, "bin", "symbols", "--arch", s.arch, "--name", "main.main", fat)
		if scode != 0 || !line.MatchString(sout) || !strings.Contains(sout, "_main.main") {
			t.Errorf("symbols --arch %s on the universal file: exit %d, no leading slice line:\n%s%s", s.arch, scode, sout, serrs)
		}
		if s.arch == map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH] {
			sout, serrs, scode = runCLI(t, "bin", "symbols", "--name", "main.main", fat)
			if scode != 0 || !line.MatchString(sout) {
				t.Errorf("symbols without --arch on the universal file: exit %d, no leading host slice line %s:\n%s%s", scode, s.arch, sout, serrs)
			}
		}
	}
	if out, _, _ := runCLI(t, "bin", "symbols", "--name", "main.main", arm); strings.HasPrefix(out, "slice ") || !strings.Contains(out, "_main.main") {
		t.Errorf("symbols on a thin file names a slice:\n%s", out)
	}
}

// TestBinInspectUnreadableDynamicIsUnknown: a copy of the fixture whose
// PT_DYNAMIC p_offset and .dynamic sh_offset are 0x7fff0000, where readelf
// -d in the same run finds no dynamic section, prints its needed, rpath,
// runpath and soname as unknown, never [] or none.
func TestBinInspectUnreadableDynamicIsUnknown(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	b, err := os.ReadFile(filepath.Join("..", "bin", "testdata", "hello-hardened.elf"))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	phoff, phentsize, phnum := le.Uint64(b[0x20:]), uint64(le.Uint16(b[0x36:])), uint64(le.Uint16(b[0x38:]))
	for i := uint64(0); i < phnum; i++ {
		if o := phoff + i*phentsize; le.Uint32(b[o:]) == 2 { // PT_DYNAMIC
			le.PutUint64(b[o+8:], 0x7fff0000)
		}
	}
	shoff, shentsize, shnum := le.Uint64(b[0x28:]), uint64(le.Uint16(b[0x3a:])), uint64(le.Uint16(b[0x3c:]))
	for i := uint64(0); i < shnum; i++ {
		if o := shoff + i*shentsize; le.Uint32(b[o+4:]) == 6 { // SHT_DYNAMIC
			le.PutUint64(b[o+24:], 0x7fff0000)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.elf")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("readelf"); err == nil {
		if ref, _ := exec.Command("readelf", "-d", bad).CombinedOutput(); strings.Contains(string(ref), "(NEEDED)") {
			t.Fatalf("readelf -d still reads the patched dynamic section:\n%s", ref)
		}
	}
	out, errs, code := runCLI(t, "bin", "inspect", bad)
	if code != 0 || !strings.Contains(out, "  needed unknown  rpath unknown  runpath unknown  soname unknown\n") || !strings.Contains(errs, "could not be resolved") {
		t.Errorf("exit %d: no unknown needed/rpath/runpath/soname or no warning:\n%s%s", code, out, errs)
	}
}
