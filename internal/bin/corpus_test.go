package bin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The corpus: Go binaries committed under testdata/corpus (made by its
// make.sh: cross-building the standard library for seven targets on an
// empty build cache takes minutes, so they are never rebuilt per run),
// binaries this test builds with gcc, plus some of the machine's own
// /usr/bin binaries. Set up once per test binary.
var (
	corpusOnce sync.Once
	corpusDir  string
	corpusErr  error
	corpus     = map[string]string{} // name -> path
	corpusSkip = map[string]string{} // name -> why it was not built
)

// corpusGo names the committed Go builds of testdata/corpus/main.go.txt:
// linux amd64 (and the same program with x*5, which moves no function),
// linux amd64 GOAMD64=v3 -buildmode=pie (VEX-encoded code), linux arm64
// and 386, windows amd64, darwin arm64 and amd64.
var corpusGo = []string{
	"go-linux-amd64", "go-linux-amd64-changed", "go-linux-amd64-v3-pie",
	"go-linux-arm64", "go-linux-386", "go-windows-amd64.exe",
	"go-darwin-arm64", "go-darwin-amd64",
}

const cProgram = `#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	char buf[16];
	char out[64];
	strcpy(buf, argc > 1 ? argv[1] : "x");
	memcpy(out, buf, strlen(buf) + 1);
	printf("%s %d\n", out, argc);
	return 0;
}
`

// TestMain sets the corpus up once per package run, runs the tests and
// removes what it built.
func TestMain(m *testing.M) {
	corpusOnce.Do(buildCorpusOnce)
	code := m.Run()
	if corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// buildCorpus fails t when the corpus could not be set up.
func buildCorpus(t testing.TB) {
	t.Helper()
	corpusOnce.Do(buildCorpusOnce)
	if corpusErr != nil {
		t.Fatalf("building the corpus: %v", corpusErr)
	}
}

func buildCorpusOnce() {
	corpusDir, corpusErr = os.MkdirTemp("", "inquest-bin-corpus-")
	if corpusErr != nil {
		return
	}
	for _, name := range corpusGo {
		p, err := filepath.Abs(filepath.Join("testdata", "corpus", name))
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			corpusErr = fmt.Errorf("committed corpus file %s (rebuild with testdata/corpus/make.sh): %v", name, err)
			return
		}
		corpus[name] = p
	}
	buildCFixtures()
	// A universal (fat) file from the two darwin slices (mach-o/fat.h).
	if fat, err := buildFat(corpus["go-darwin-arm64"], corpus["go-darwin-amd64"]); err == nil {
		p := filepath.Join(corpusDir, "go-darwin-universal")
		os.WriteFile(p, fat, 0o755)
		corpus["go-darwin-universal"] = p
	}
}

// buildCFixtures builds the gcc fixtures (a missing gcc is recorded in
// corpusSkip for tests that can run without it).
func buildCFixtures() {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		corpusSkip["c-hardened"], corpusSkip["c-plain"] = "gcc not installed", "gcc not installed"
		return
	}
	os.WriteFile(filepath.Join(corpusDir, "prog.c"), []byte(cProgram), 0o644)
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"c-hardened", []string{"-g", "-fstack-protector-strong", "-D_FORTIFY_SOURCE=2", "-O2", "-Wl,-z,relro,-z,now"}},
		{"c-plain", []string{"-fno-stack-protector", "-U_FORTIFY_SOURCE", "-O2", "-Wl,-z,norelro", "-no-pie", "-Wl,-z,execstack", "-Wl,-rpath,/opt/inquest-test/lib", "-Wl,--disable-new-dtags"}},
	} {
		out := filepath.Join(corpusDir, c.name)
		args := append(append([]string{}, c.flags...), "-o", out, filepath.Join(corpusDir, "prog.c"))
		if msg, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			corpusSkip[c.name] = fmt.Sprintf("gcc failed: %v %s", err, msg)
			continue
		}
		corpus[c.name] = out
	}
}

func buildFat(paths ...string) ([]byte, error) {
	var slices [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		slices = append(slices, b)
	}
	const align = 14 // 2^14
	var hdr bytes.Buffer
	be := func(v uint32) { hdr.Write([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}) }
	be(0xcafebabe)
	be(uint32(len(slices)))
	off := uint32(1 << align)
	var offs []uint32
	for _, s := range slices {
		cpu := uint32(s[4]) | uint32(s[5])<<8 | uint32(s[6])<<16 | uint32(s[7])<<24
		sub := uint32(s[8]) | uint32(s[9])<<8 | uint32(s[10])<<16 | uint32(s[11])<<24
		be(cpu)
		be(sub)
		be(off)
		be(uint32(len(s)))
		be(align)
		offs = append(offs, off)
		off += uint32(len(s))
		if len(offs) < len(slices) {
			off = (off + (1 << align) - 1) &^ ((1 << align) - 1)
		}
	}
	out := make([]byte, off)
	copy(out, hdr.Bytes())
	for i, s := range slices {
		copy(out[offs[i]:], s)
	}
	return out, nil
}

// usrBinSample returns up to n ELF files from /usr/bin (smaller than 40 MB,
// spread over the sorted listing).
func usrBinSample(n int) []string {
	ents, err := os.ReadDir("/usr/bin")
	if err != nil {
		return nil
	}
	var elfs []string
	for _, e := range ents {
		p := filepath.Join("/usr/bin", e.Name())
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() > 40<<20 || st.Size() < 64 {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		magic := make([]byte, 4)
		f.Read(magic)
		f.Close()
		if string(magic) == "\x7fELF" {
			elfs = append(elfs, p)
		}
	}
	sort.Strings(elfs)
	if len(elfs) <= n {
		return elfs
	}
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, elfs[i*len(elfs)/n])
	}
	return out
}

func inspectPath(t testing.TB, p string) (*File, *Inspection) {
	t.Helper()
	f, err := ReadFile(context.Background(), p, "/path", MaxInputBytes)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(context.Background(), f.Data)
	if err != nil {
		t.Fatal(err)
	}
	return f, in
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return string(out)
}

// ---- readelf reference parsing ----

type reSection struct {
	name, typ, flags string
	addr, off, size  uint64
}

var reSectionLine = regexp.MustCompile(`^\s*\[\s*(\d+)\]\s+(\S*)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(\S*)\s+(\d+)\s+(\d+)\s+(\d+)\s*$`)

func readelfSections(t testing.TB, p string) []reSection {
	var out []reSection
	for _, l := range strings.Split(run(t, "readelf", "-S", "-W", p), "\n") {
		m := reSectionLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		out = append(out, reSection{name: m[2], typ: m[3], addr: hx(m[4]), off: hx(m[5]), size: hx(m[6]), flags: m[8]})
	}
	return out
}

type reSegment struct {
	typ, flags                       string
	off, vaddr, filesz, memsz, align uint64
}

var reSegmentLine = regexp.MustCompile(`^\s+([A-Za-z_0-9+]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+([RWE ]+?)\s+0x([0-9a-f]+)\s*$`)

func readelfSegments(t testing.TB, p string) ([]reSegment, string) {
	var out []reSegment
	interp := ""
	for _, l := range strings.Split(run(t, "readelf", "-l", "-W", p), "\n") {
		if i := strings.Index(l, "[Requesting program interpreter: "); i >= 0 {
			interp = strings.TrimSuffix(strings.TrimSpace(l[i+len("[Requesting program interpreter: "):]), "]")
		}
		m := reSegmentLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		out = append(out, reSegment{typ: m[1], off: hx(m[2]), vaddr: hx(m[3]), filesz: hx(m[5]), memsz: hx(m[6]), flags: strings.ReplaceAll(m[7], " ", ""), align: hx(m[8])})
	}
	return out, interp
}

type reDynamic struct {
	needed, rpath, runpath []string
	soname                 string
	flags, flags1          string
	bindNow                bool
}

func readelfDynamic(t testing.TB, p string) reDynamic {
	var d reDynamic
	br := func(l string) string {
		i, j := strings.Index(l, "["), strings.LastIndex(l, "]")
		if i < 0 || j < i {
			return ""
		}
		return l[i+1 : j]
	}
	for _, l := range strings.Split(run(t, "readelf", "-d", "-W", p), "\n") {
		switch {
		case strings.Contains(l, "(NEEDED)"):
			d.needed = append(d.needed, br(l))
		case strings.Contains(l, "(RPATH)"):
			d.rpath = append(d.rpath, br(l))
		case strings.Contains(l, "(RUNPATH)"):
			d.runpath = append(d.runpath, br(l))
		case strings.Contains(l, "(SONAME)"):
			d.soname = br(l)
		case strings.Contains(l, "(FLAGS_1)"):
			d.flags1 = l
		case strings.Contains(l, "(FLAGS)"):
			d.flags = l
		case strings.Contains(l, "(BIND_NOW)"):
			d.bindNow = true
		}
	}
	return d
}

type reSymbol struct {
	name, typ, bind, ndx string
	value, size          uint64
}

var reSymbolLine = regexp.MustCompile(`^\s*(\d+):\s+([0-9a-f]+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s?(.*)$`)

// readelfSymbols returns table name -> symbols (the null symbol 0 dropped).
func readelfSymbols(t testing.TB, p string) map[string][]reSymbol {
	out := map[string][]reSymbol{}
	cur := ""
	for _, l := range strings.Split(run(t, "readelf", "-s", "-W", p), "\n") {
		if strings.HasPrefix(l, "Symbol table '") {
			cur = strings.SplitN(l[len("Symbol table '"):], "'", 2)[0]
			out[cur] = []reSymbol{}
			continue
		}
		m := reSymbolLine.FindStringSubmatch(l)
		if m == nil || cur == "" || m[1] == "0" {
			continue
		}
		size, err := strconv.ParseUint(m[3], 10, 64)
		if strings.HasPrefix(m[3], "0x") {
			size, err = strconv.ParseUint(m[3][2:], 16, 64)
		}
		if err != nil {
			t.Fatalf("readelf size %q", m[3])
		}
		name := m[8]
		if i := strings.Index(name, " ("); i >= 0 && strings.HasSuffix(name, ")") {
			name = name[:i]
		}
		out[cur] = append(out[cur], reSymbol{value: hx(m[2]), size: size, typ: m[4], bind: m[5], ndx: m[7], name: name})
	}
	return out
}

func hx(s string) uint64 {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		panic("bad hex " + s)
	}
	return v
}

func readelfHeader(t testing.TB, p string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(run(t, "readelf", "-h", "-W", p), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

var readelfMachine = map[string]string{"Advanced Micro Devices X86-64": "EM_X86_64", "AArch64": "EM_AARCH64", "Intel 80386": "EM_386", "RISC-V": "EM_RISCV"}

func ourSectionType(s string) string {
	s = strings.TrimPrefix(s, "SHT_")
	switch s {
	case "GNU_VERDEF", "GNU_VERNEED", "GNU_VERSYM":
		return strings.TrimPrefix(s, "GNU_")
	}
	return s
}

func ourSymType(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "STT_"), "STB_")
	switch s {
	case "LOOS", "GNU_IFUNC":
		return "IFUNC"
	case "GNU_UNIQUE":
		return "UNIQUE"
	}
	return s
}

func letters(s string) string {
	var b []byte
	for _, c := range []byte(s) {
		if strings.IndexByte("WAXMSILOGTCE", c) >= 0 {
			b = append(b, c)
		}
	}
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return string(b)
}

func needReadelf(t *testing.T) {
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("readelf (binutils) is not installed; .ci/run installs it")
	}
}

// crossCheckELF compares every ELF fact of in with readelf's output.
func crossCheckELF(t *testing.T, p string, f *File, in *Inspection) {
	t.Helper()
	if !in.Complete() {
		t.Errorf("inspection is not complete: %+v %+v", in.Unresolved, in.Facets)
	}
	h := readelfHeader(t, p)
	wantClass := map[string]string{"ELF64": "ELFCLASS64", "ELF32": "ELFCLASS32"}[h["Class"]]
	if in.Header.Class != wantClass {
		t.Errorf("class %q, readelf %q", in.Header.Class, h["Class"])
	}
	if want := map[bool]string{true: "little", false: "big"}[strings.Contains(h["Data"], "little endian")]; in.Header.Endianness != want {
		t.Errorf("endianness %q, readelf %q", in.Header.Endianness, h["Data"])
	}
	if want, ok := readelfMachine[h["Machine"]]; !ok || in.Header.Machine.Name != want {
		t.Errorf("machine %q, readelf %q", in.Header.Machine.Name, h["Machine"])
	}
	if typ := strings.Fields(h["Type"])[0]; in.Header.Type.Name != "ET_"+typ {
		t.Errorf("type %q, readelf %q", in.Header.Type.Name, h["Type"])
	}
	if h["OS/ABI"] == "UNIX - System V" && in.Header.OSABI.Raw != "0x0" || h["OS/ABI"] == "UNIX - GNU" && in.Header.OSABI.Raw != "0x3" {
		t.Errorf("os/abi %v, readelf %q", in.Header.OSABI, h["OS/ABI"])
	}
	if hx(h["Entry point address"]) != mustHex(t, in.Header.Entry) {
		t.Errorf("entry %s, readelf %s", in.Header.Entry, h["Entry point address"])
	}
	if hx(h["Flags"][:strings.IndexAny(h["Flags"]+",", ", ")]) != mustHex(t, in.Header.Flags.Raw) {
		t.Errorf("flags %s, readelf %s", in.Header.Flags.Raw, h["Flags"])
	}
	// Sections: every field, and the digest of the bytes readelf places.
	rs := readelfSections(t, p)
	if len(rs) != len(in.Sections) {
		t.Fatalf("%d sections, readelf %d", len(in.Sections), len(rs))
	}
	for i, r := range rs {
		s := in.Sections[i]
		if s.Name != r.name || mustHex(t, s.Address) != r.addr || mustDec(t, s.Offset) != r.off || mustDec(t, s.Size) != r.size {
			t.Errorf("section %d: ours %s %s off %s size %s, readelf %s 0x%x off %d size %d", i, s.Name, s.Address, s.Offset, s.Size, r.name, r.addr, r.off, r.size)
		}
		if !strings.Contains(r.typ, "+") && ourSectionType(s.Type) != r.typ {
			t.Errorf("section %s type %s, readelf %s", s.Name, s.Type, r.typ)
		}
		if letters(s.Flags) != letters(r.flags) {
			t.Errorf("section %s flags %q, readelf %q", s.Name, s.Flags, r.flags)
		}
		if r.typ != "NOBITS" && r.typ != "NULL" {
			sum := sha256.Sum256(f.Data[r.off : r.off+r.size])
			if s.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("section %s digest differs from the bytes readelf places", s.Name)
			}
		}
	}
	// Segments.
	segs, interp := readelfSegments(t, p)
	if len(segs) != len(in.Segments) {
		t.Fatalf("%d segments, readelf %d", len(in.Segments), len(segs))
	}
	for i, r := range segs {
		s := in.Segments[i]
		if strings.TrimPrefix(s.Type, "PT_") != r.typ && !strings.HasPrefix(r.typ, "LOOS") && !strings.HasPrefix(r.typ, "LOPROC") {
			t.Errorf("segment %d type %s, readelf %s", i, s.Type, r.typ)
		}
		if mustDec(t, s.Offset) != r.off || mustHex(t, s.Address) != r.vaddr || mustDec(t, s.FileSize) != r.filesz || mustDec(t, s.MemSize) != r.memsz || s.Flags != r.flags || mustHex(t, s.Align) != r.align {
			t.Errorf("segment %d: ours %+v, readelf %+v", i, s, r)
		}
	}
	if in.Dynamic == nil || in.Dynamic.Interpreter != interp {
		t.Errorf("interpreter %q, readelf %q", in.Dynamic.Interpreter, interp)
	}
	// Dynamic facts.
	d := readelfDynamic(t, p)
	eq := func(what string, a, b []string) {
		if strings.Join(a, "\x00") != strings.Join(b, "\x00") {
			t.Errorf("%s %q, readelf %q", what, a, b)
		}
	}
	eq("needed", in.Dynamic.Needed, d.needed)
	eq("rpath", in.Dynamic.RPath, d.rpath)
	eq("runpath", in.Dynamic.RunPath, d.runpath)
	if in.Dynamic.SOName != d.soname {
		t.Errorf("soname %q, readelf %q", in.Dynamic.SOName, d.soname)
	}
	// Build ids.
	notes := run(t, "readelf", "-n", "-W", p)
	if m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(notes); m != nil {
		if in.BuildID.GNU != m[1] {
			t.Errorf("GNU build id %q, readelf %q", in.BuildID.GNU, m[1])
		}
	} else if in.BuildID.GNU != "" {
		t.Errorf("GNU build id %q, readelf has none", in.BuildID.GNU)
	}
	if m := regexp.MustCompile(`GO BUILDID\s+description data: ([0-9a-f ]+)`).FindStringSubmatch(notes); m != nil {
		b, _ := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(m[1]), " ", ""))
		if in.BuildID.Go != string(b) {
			t.Errorf("Go build id %q, readelf %q", in.BuildID.Go, b)
		}
	}
	// Symbols: every row of .symtab and .dynsym, in table order.
	ref := readelfSymbols(t, p)
	ss := loadSymbols(in, f.Data)
	for _, table := range []string{TableSymtab, TableDynsym} {
		var ours []Symbol
		for _, s := range ss.syms {
			if s.Table == table {
				ours = append(ours, s)
			}
		}
		want := ref[table]
		if len(ours) != len(want) {
			t.Errorf("%s: %d symbols, readelf %d", table, len(ours), len(want))
			continue
		}
		for i, r := range want {
			s := ours[i]
			name := r.name
			if table == TableDynsym {
				name, _, _ = strings.Cut(name, "@")
			}
			ndxOK := (r.ndx == "UND" && s.Section == "UND") || (r.ndx == "ABS" && s.Section == "ABS") || (r.ndx == "COM" && s.Section == "COMMON")
			if n, err := strconv.Atoi(r.ndx); err == nil {
				ndxOK = n < len(in.Sections) && s.Section == in.Sections[n].Name
			}
			if s.Name != name || s.value != r.value || s.size != r.size || ourSymType(s.Type) != r.typ || ourSymType(s.Binding) != r.bind || !ndxOK {
				t.Errorf("%s[%d]: ours %s %s %d %s %s %s, readelf %+v", table, i+1, s.Name, s.Address, s.size, s.Type, s.Binding, s.Section, r)
				break
			}
		}
	}
	// Imports and exports are the undefined and defined global .dynsym rows.
	var imports, exports []string
	for _, r := range ref[TableDynsym] {
		name, _, _ := strings.Cut(r.name, "@")
		if name == "" {
			continue
		}
		if r.ndx == "UND" {
			imports = append(imports, name)
		} else if r.bind == "GLOBAL" || r.bind == "WEAK" || r.bind == "UNIQUE" {
			exports = append(exports, name)
		}
	}
	var oi, oe []string
	for _, i := range in.Imports {
		oi = append(oi, i.Name)
	}
	for _, e := range in.Exports {
		oe = append(oe, e.Name)
	}
	eq("imports", oi, imports)
	eq("exports", oe, exports)
	// Hardening, derived independently from readelf's output.
	verdict := func(name string) Check {
		for _, c := range in.Hardening {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no %s verdict", name)
		return Check{}
	}
	has := func(typ string) *reSegment {
		for i := range segs {
			if segs[i].typ == typ {
				return &segs[i]
			}
		}
		return nil
	}
	typ := strings.Fields(h["Type"])[0]
	wantPIE := VerdictNo
	if typ == "DYN" {
		wantPIE = VerdictNotApplicable
		if strings.Contains(d.flags1, "PIE") || interp != "" {
			wantPIE = VerdictYes
		}
	}
	if v := verdict("pie").Verdict; v != wantPIE {
		t.Errorf("pie %s, readelf says %s (%s, FLAGS_1 %q)", v, wantPIE, h["Type"], d.flags1)
	}
	wantNX := VerdictNo
	if st := has("GNU_STACK"); st != nil && !strings.Contains(st.flags, "E") {
		wantNX = VerdictYes
	}
	if v := verdict("nx").Verdict; v != wantNX {
		t.Errorf("nx %s, readelf GNU_STACK says %s", v, wantNX)
	}
	wantRELRO := VerdictNone
	if has("GNU_RELRO") != nil {
		wantRELRO = VerdictPartial
		if d.bindNow || strings.Contains(d.flags, "BIND_NOW") || strings.Contains(d.flags1, "NOW") {
			wantRELRO = VerdictFull
		}
	}
	if v := verdict("relro").Verdict; v != wantRELRO {
		t.Errorf("relro %s, readelf says %s", v, wantRELRO)
	}
	var allNames []string
	for _, tab := range ref {
		for _, r := range tab {
			n, _, _ := strings.Cut(r.name, "@")
			allNames = append(allNames, n)
		}
	}
	hasSym := func(pred func(string) bool) bool {
		for _, n := range allNames {
			if pred(n) {
				return true
			}
		}
		return false
	}
	canary := hasSym(func(n string) bool { return n == "__stack_chk_fail" || n == "__stack_chk_guard" })
	if v := verdict("stack_canary").Verdict; (v == VerdictYes) != canary || (len(ref) > 0 && v == VerdictUnknown) {
		t.Errorf("stack_canary %s, readelf symbol present %v", v, canary)
	}
	fortified := hasSym(func(n string) bool {
		return strings.HasPrefix(n, "__") && strings.HasSuffix(n, "_chk") && n != "__stack_chk_fail" && n != "__stack_chk_guard"
	})
	if v := verdict("fortify").Verdict; fortified != (v == VerdictYes || v == VerdictPartial) {
		t.Errorf("fortify %s, readelf __*_chk present %v", v, fortified)
	}
	if v := verdict("no_rpath").Verdict; (v == VerdictNo) != (len(d.rpath)+len(d.runpath) > 0) {
		t.Errorf("no_rpath %s, readelf rpath %q runpath %q", v, d.rpath, d.runpath)
	}
}

func mustHex(t testing.TB, s string) uint64 {
	v, err := parseHex(s)
	if err != nil {
		t.Fatalf("not hex: %q", s)
	}
	return v
}

func mustDec(t testing.TB, s string) uint64 {
	v, err := parseDec(s)
	if err != nil {
		t.Fatalf("not decimal: %q", s)
	}
	return v
}

// crossCheckDWARF compares the compilation-unit count and producers with
// readelf --debug-dump=info.
func crossCheckDWARF(t *testing.T, p string, in *Inspection) {
	t.Helper()
	out, _ := exec.Command("readelf", "--debug-dump=info", "-W", p).Output()
	units := strings.Count(string(out), "Compilation Unit @ offset")
	if in.Debug == nil {
		t.Fatal("no debug_info facet")
	}
	if in.Debug.Units == nil || *in.Debug.Units != units || in.Debug.Present != (units > 0) {
		t.Errorf("DWARF units %s (present %v), readelf %d", fmtIntPtr(in.Debug.Units), in.Debug.Present, units)
	}
	prods := map[string]bool{}
	for _, m := range regexp.MustCompile(`DW_AT_producer\s*:\s*(?:\([^)]*\)\s*)+:?\s*(.*)`).FindAllStringSubmatch(string(out), -1) {
		prods[strings.TrimSpace(m[1])] = true
	}
	for _, p := range in.Debug.Producers {
		if !prods[p] {
			t.Errorf("producer %q not in readelf's %v", p, prods)
		}
	}
	if len(prods) != len(in.Debug.Producers) {
		t.Errorf("producers %q, readelf %v", in.Debug.Producers, prods)
	}
}

// crossCheckGoBuildInfo compares Go build info with `go version -m`.
func crossCheckGoBuildInfo(t *testing.T, p string, in *Inspection) {
	t.Helper()
	out := run(t, goTool(), "version", "-m", p)
	g := in.GoBuildInfo
	if g == nil {
		t.Fatal("no Go build info")
	}
	var settings []string
	for _, s := range g.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	var ref []string
	for _, l := range strings.Split(out, "\n")[1:] {
		f := strings.Split(strings.TrimPrefix(l, "\t"), "\t")
		switch f[0] {
		case "path":
			if g.Path != f[1] {
				t.Errorf("path %q, go version -m %q", g.Path, f[1])
			}
		case "mod":
			if g.Main == nil || g.Main.Path != f[1] || g.Main.Version != f[2] {
				t.Errorf("main module %+v, go version -m %q", g.Main, f)
			}
		case "build":
			ref = append(ref, f[1])
		}
	}
	if !strings.HasPrefix(out, p+": "+g.GoVersion) {
		t.Errorf("go version %q, go version -m %q", g.GoVersion, strings.SplitN(out, "\n", 2)[0])
	}
	if strings.Join(settings, "\n") != strings.Join(ref, "\n") {
		t.Errorf("settings %q, go version -m %q", settings, ref)
	}
}

func TestCorpusELF(t *testing.T) {
	needReadelf(t)
	buildCorpus(t)
	names := []string{"go-linux-amd64", "go-linux-amd64-v3-pie", "go-linux-arm64", "go-linux-386", "c-hardened", "c-plain"}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			p, ok := corpus[n]
			if !ok {
				t.Skip(corpusSkip[n])
			}
			f, in := inspectPath(t, p)
			crossCheckELF(t, p, f, in)
			crossCheckDWARF(t, p, in)
			if strings.HasPrefix(n, "go-") {
				crossCheckGoBuildInfo(t, p, in)
			}
		})
	}
	for _, p := range usrBinSample(10) {
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
			f, in := inspectPath(t, p)
			crossCheckELF(t, p, f, in)
		})
	}
}

// TestCorpusHardeningVerdicts pins the verdicts the build flags promise,
// beside the readelf cross-check above.
func TestCorpusHardeningVerdicts(t *testing.T) {
	buildCorpus(t)
	want := map[string]map[string]string{
		"c-hardened":            {"pie": VerdictYes, "nx": VerdictYes, "relro": VerdictFull, "stack_canary": VerdictYes, "fortify": VerdictYes, "no_rpath": VerdictYes},
		"c-plain":               {"pie": VerdictNo, "nx": VerdictNo, "relro": VerdictNone, "stack_canary": VerdictNo, "no_rpath": VerdictNo},
		"go-linux-amd64":        {"pie": VerdictNo, "nx": VerdictYes},
		"go-linux-amd64-v3-pie": {"pie": VerdictYes, "nx": VerdictYes},
		"go-windows-amd64.exe":  {"aslr": VerdictYes, "high_entropy_va": VerdictYes, "nx": VerdictYes, "cfg": VerdictNo, "safeseh": VerdictNotApplicable, "certificate_table": VerdictNo},
		"go-darwin-arm64":       {"pie": VerdictYes, "code_signature": VerdictYes},
	}
	for name, checks := range want {
		t.Run(name, func(t *testing.T) {
			p, ok := corpus[name]
			if !ok {
				t.Skip(corpusSkip[name])
			}
			_, in := inspectPath(t, p)
			got := map[string]Check{}
			for _, c := range in.Hardening {
				got[c.Name] = c
				if len(c.Basis) == 0 {
					t.Errorf("%s has no basis", c.Name)
				}
			}
			for k, v := range checks {
				if got[k].Verdict != v {
					t.Errorf("%s = %s (%v), want %s", k, got[k].Verdict, got[k].Basis, v)
				}
			}
		})
	}
}
