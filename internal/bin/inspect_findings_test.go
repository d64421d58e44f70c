package bin

import (
	"bytes"
	"context"
	"debug/elf"
	"debug/macho"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// fortifyC calls explicit_bzero and fortified string functions, so a
// -D_FORTIFY_SOURCE=2 build imports __explicit_bzero_chk and friends, and
// its dynamic symbols carry three GLIBC versions.
const fortifyC = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
	char buf[64];
	strcpy(buf, argv[0]);
	printf("%s %d\n", buf, argc);
	explicit_bzero(buf, sizeof buf);
	size_t n = (size_t)argc * 100;
	char *p = malloc(n);
	/* The size of p is not known at compile time: a plain read. */
	if (read(0, p, n) > 0)
		puts(p);
	free(p);
	return 0;
}
`

// patchSection writes the section header field at byte off of section
// name's Elf64_Shdr in a copy of src (64-bit little-endian ELF) and returns
// the copy's path. set receives the header bytes and the file's sections.
func patchSection(t *testing.T, src, dst, name string, set func(sh []byte, secs []*elf.Section, idx int, size int)) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shoff := binary.LittleEndian.Uint64(b[0x28:])
	shentsize := int(binary.LittleEndian.Uint16(b[0x3a:]))
	idx := -1
	for i, s := range f.Sections {
		if s.Name == name {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("%s has no section %s", src, name)
	}
	o := int(shoff) + idx*shentsize
	set(b[o:o+shentsize], f.Sections, idx, len(b))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// readelfSymtab returns readelf -s -W's rows of table (".symtab" or
// ".dynsym") in p: entry number -> name column (with readelf's @version
// and " (N)" suffix as printed), run in this test.
func readelfSymtab(t *testing.T, p, table string) map[int]string {
	t.Helper()
	out, err := exec.Command("readelf", "-s", "-W", p).Output()
	if err != nil {
		t.Fatalf("readelf -s %s: %v", p, err)
	}
	rows := map[int]string{}
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Symbol table ") {
			in = strings.Contains(line, "'"+table+"'")
			continue
		}
		f := strings.Fields(line)
		if !in || len(f) < 7 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
		if err != nil {
			continue
		}
		rows[n] = strings.Join(f[7:], " ")
	}
	return rows
}

// symbolRows lists every row of list_symbols on p for table ("static" or
// "dynamic") and the last page's envelope.
func symbolRows(t *testing.T, p, table string) ([]map[string]any, map[string]any) {
	t.Helper()
	m := mustCall(t, registry(t, ""), "list_symbols", map[string]any{"path": p, "table": table, "limit": 1000})
	if more, _ := data(m)["page"].(map[string]any)["more"].(bool); more {
		t.Fatalf("list_symbols %s: more than 1000 rows", p)
	}
	var out []map[string]any
	for _, r := range rows(m) {
		out = append(out, r.(map[string]any))
	}
	return out, m
}

// TestUnreadableSymbolNamesAndVersionsAreUnknown: a .symtab whose sh_link
// names itself instead of its string table, and a .gnu.version_r moved
// past the end of the file, leave names and versions unknown: null with a
// reason, the result partial with a warning, never "" or a row silently
// without its version. readelf, run on the same files, still shows the
// versions when DT_VERNEED is intact (it finds the version needs through
// the dynamic section): so do we. The symbols whose names we report
// unknown are exactly those with names in the unpatched build.
func TestUnreadableSymbolNamesAndVersionsAreUnknown(t *testing.T) {
	needReadelf(t)
	dir := t.TempDir()
	orig := gccBuild(t, dir, "fortify", fortifyC, "-O2", "-D_FORTIFY_SOURCE=2")

	// .symtab's sh_link (Elf64_Shdr offset 40) names .symtab itself.
	selfLink := patchSection(t, orig, filepath.Join(dir, "symtab-selflink"), ".symtab", func(sh []byte, _ []*elf.Section, idx, _ int) {
		binary.LittleEndian.PutUint32(sh[40:], uint32(idx))
	})
	want := readelfSymtab(t, orig, ".symtab")
	got, m := symbolRows(t, selfLink, "static")
	if len(got) != len(want)-1 {
		t.Fatalf(".symtab rows: %d, readelf %d entries (entry 0 is not a symbol)", len(got), len(want))
	}
	if m["status"] != "partial" || len(m["warnings"].([]any)) == 0 {
		t.Fatalf("status %v warnings %v, want partial with a warning", m["status"], m["warnings"])
	}
	nUnknown := 0
	for i, r := range got {
		named := want[i+1] != ""
		name, isNull := r["name"], r["name"] == nil
		unk, _ := r["unknown"].(map[string]any)
		if named != isNull || named != (unk["name"] != nil) {
			t.Errorf("entry %d (readelf name on the unpatched file %q): name %v, unknown %v", i+1, want[i+1], name, unk)
		}
		if isNull {
			nUnknown++
		}
	}
	if nUnknown == 0 {
		t.Fatal("no unknown names")
	}
	if un := data(m)["unresolved"].([]any); len(un) != 1 || un[0].(map[string]any)["structure"] != ".symtab names" {
		t.Errorf("unresolved %v", un)
	}
	// The unpatched build reads every name: status complete, no unknown.
	gotOrig, mOrig := symbolRows(t, orig, "static")
	for i, r := range gotOrig {
		if r["unknown"] != nil || r["name"] != strings.SplitN(want[i+1], " ", 2)[0] {
			t.Errorf("unpatched entry %d: %v, readelf %q", i+1, r, want[i+1])
		}
	}
	if mOrig["status"] != "complete" {
		t.Errorf("unpatched: status %v", mOrig["status"])
	}

	// .gnu.version_r's sh_offset (Elf64_Shdr offset 24) lies past the end.
	// The dynamic loader and readelf find the version needs through
	// DT_VERNEED: so do we, and the versions are readelf's.
	verR := patchSection(t, orig, filepath.Join(dir, "verneed-past-eof"), ".gnu.version_r", func(sh []byte, _ []*elf.Section, _ int, size int) {
		binary.LittleEndian.PutUint64(sh[24:], uint64(size)+4096)
	})
	ref := readelfSymtab(t, verR, ".dynsym")
	dyn, m := symbolRows(t, verR, "dynamic")
	if len(dyn) != len(ref)-1 {
		t.Fatalf(".dynsym rows: %d, readelf %d entries", len(dyn), len(ref))
	}
	versioned := 0
	for i, r := range dyn {
		name, _ := r["name"].(string)
		if v, ok := r["version"].(string); ok {
			name += "@" + v
			if r["version_source"] != "DT_VERNEED" || r["library"] != "libc.so.6" {
				t.Errorf("entry %d: %v, want library libc.so.6 read through DT_VERNEED", i+1, r)
			}
			versioned++
		}
		if want := strings.Fields(ref[i+1]); len(want) == 0 || name != want[0] {
			t.Errorf("entry %d: %s, readelf %q", i+1, name, ref[i+1])
		}
	}
	if versioned < 3 {
		t.Fatalf("readelf shows %d versioned symbols, want at least 3", versioned)
	}

	// With DT_VERNEED also pointing outside every PT_LOAD segment, the
	// versions are unknown: null with a reason, partial, a warning.
	lost := filepath.Join(dir, "verneed-lost")
	b, err := os.ReadFile(verR)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(verR)
	if err != nil {
		t.Fatal(err)
	}
	dynSec := ef.Section(".dynamic")
	patched := false
	for o := dynSec.Offset; o+16 <= dynSec.Offset+dynSec.Size; o += 16 {
		if elf.DynTag(binary.LittleEndian.Uint64(b[o:])) == elf.DT_VERNEED {
			binary.LittleEndian.PutUint64(b[o+8:], 0x7fff0000)
			patched = true
		}
	}
	ef.Close()
	if !patched {
		t.Fatal("no DT_VERNEED in .dynamic")
	}
	os.WriteFile(lost, b, 0o644)
	dyn, m = symbolRows(t, lost, "dynamic")
	if m["status"] != "partial" || len(m["warnings"].([]any)) == 0 {
		t.Fatalf("status %v warnings %v, want partial with a warning", m["status"], m["warnings"])
	}
	for i, r := range dyn {
		// readelf on the unpatched-DT_VERNEED file named the versions.
		readelfVer := strings.Contains(ref[i+1], "@GLIBC_")
		v, hasV := r["version"]
		unk, _ := r["unknown"].(map[string]any)
		if readelfVer {
			lib, hasLib := r["library"]
			if !hasV || v != nil || !hasLib || lib != nil || unk["version"] == nil {
				t.Errorf("entry %d (readelf %q): version %v library %v unknown %v, want null with a reason", i+1, ref[i+1], v, lib, unk)
			}
		} else if hasV || unk != nil {
			t.Errorf("entry %d (readelf %q, unversioned): %v", i+1, ref[i+1], r)
		}
	}
	// inspect_binary's imports carry the same unknown and the facet is partial.
	im := mustCall(t, registry(t, ""), "inspect_binary", map[string]any{"path": lost, "facets": []string{"imports"}})
	fc := im["coverage"].(map[string]any)["facets"].(map[string]any)["imports"].(map[string]any)
	if fc["state"] != "partial" {
		t.Errorf("imports facet %v, want partial", fc)
	}
	nv := 0
	for _, r := range rows(im) {
		if u, _ := r.(map[string]any)["unknown"].(map[string]any); u["version"] != nil {
			nv++
		}
	}
	if nv != versioned {
		t.Errorf("%d imports with an unknown version, readelf shows %d versioned imports", nv, versioned)
	}
}

// checksecFortify runs checksec --fortify-file on p in this run and returns
// the __*_chk functions it counts as checked and the plain names it counts
// as unchecked (a fortifiable libc function imported without its variant,
// or beside it).
func checksecFortify(t *testing.T, p string) (checked, unchecked []string) {
	t.Helper()
	out, err := exec.Command("checksec", "--fortify-file="+p).CombinedOutput()
	if err != nil {
		t.Fatalf("checksec --fortify-file %s: %v\n%s", p, err, out)
	}
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	seen := map[string]bool{}
	for _, line := range strings.Split(ansi.ReplaceAllString(string(out), ""), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "|" || !strings.HasPrefix(f[2], "__") || !strings.HasSuffix(f[2], "_chk") || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		if strings.HasSuffix(f[0], "_chk") {
			checked = append(checked, "__"+f[0])
		} else {
			unchecked = append(unchecked, f[0])
		}
	}
	sort.Strings(checked)
	sort.Strings(unchecked)
	return checked, unchecked
}

// TestFortifySetMatchesChecksec: inspect_binary's fortify basis names
// exactly the __*_chk functions checksec counts as fortified (among them
// __explicit_bzero_chk, which the verdict once left out), and as
// unfortified imports the fortifiable functions checksec counts that have
// no __*_chk import beside them, on a -D_FORTIFY_SOURCE=2 build that calls
// explicit_bzero and a plain read, and on /usr/bin/ssh when installed.
func TestFortifySetMatchesChecksec(t *testing.T) {
	needTool(t, "checksec")
	needReadelf(t) // checksec reads symbols with readelf
	dir := t.TempDir()
	paths := []string{gccBuild(t, dir, "fortify", fortifyC, "-O2", "-D_FORTIFY_SOURCE=2")}
	if _, err := os.Stat("/usr/bin/ssh"); err == nil {
		paths = append(paths, "/usr/bin/ssh")
	}
	r := registry(t, "")
	for i, p := range paths {
		checked, unchecked := checksecFortify(t, p)
		var plain []string
		for _, u := range unchecked {
			if !slices.Contains(checked, "__"+u+"_chk") {
				plain = append(plain, u)
			}
		}
		m := mustCall(t, r, "inspect_binary", map[string]any{"path": p})
		var fortify map[string]any
		for _, h := range data(m)["inspection"].(map[string]any)["hardening"].([]any) {
			if h.(map[string]any)["name"] == "fortify" {
				fortify = h.(map[string]any)
			}
		}
		var gotChecked, gotPlain []string
		for _, b := range fortify["basis"].([]any) {
			if v, ok := strings.CutPrefix(b.(string), "fortified: "); ok {
				gotChecked = strings.Split(v, ",")
			}
			if v, ok := strings.CutPrefix(b.(string), "unfortified imports: "); ok {
				gotPlain = strings.Split(v, ",")
			}
		}
		sort.Strings(gotChecked)
		sort.Strings(gotPlain)
		if strings.Join(gotChecked, " ") != strings.Join(checked, " ") {
			t.Errorf("%s: fortified %v, checksec %v", p, gotChecked, checked)
		}
		if strings.Join(gotPlain, " ") != strings.Join(plain, " ") {
			t.Errorf("%s: unfortified imports %v, checksec (without those beside their __*_chk) %v", p, gotPlain, plain)
		}
		if i == 0 {
			if !slices.Contains(checked, "__explicit_bzero_chk") || !slices.Contains(plain, "read") {
				t.Fatalf("checksec on the fortified build: checked %v unchecked %v, want __explicit_bzero_chk and a plain read", checked, unchecked)
			}
			if fortify["verdict"] != "partial" {
				t.Errorf("fortify verdict %v, want partial (a plain read)", fortify["verdict"])
			}
		}
	}
}

// TestGoBuildIDPEAndMachO: inspect_binary's build_id.go_build_id of Go
// binaries for Windows (PE), macOS (Mach-O, both architectures) and Linux
// (ELF note) is what `go tool buildid` prints for the same file in this
// run, also for each slice of a universal file and for the slice --arch
// selects; the build_id facet stays complete.
func TestGoBuildIDPEAndMachO(t *testing.T) {
	buildCorpus(t)
	r := registry(t, "")
	buildid := func(p string) string {
		out, err := exec.Command(goTool(), "tool", "buildid", p).Output()
		if err != nil {
			t.Fatalf("go tool buildid %s: %v", p, err)
		}
		return strings.TrimSpace(string(out))
	}
	for _, name := range []string{"go-windows-amd64.exe", "go-darwin-arm64", "go-darwin-amd64", "go-linux-amd64"} {
		p := corpus[name]
		want := buildid(p)
		if want == "" {
			t.Fatalf("%s: go tool buildid printed nothing", name)
		}
		in := data(mustCall(t, r, "inspect_binary", map[string]any{"path": p}))["inspection"].(map[string]any)
		bid, _ := in["build_id"].(map[string]any)
		if bid["go_build_id"] != want {
			t.Errorf("%s: go_build_id %v, go tool buildid %q", name, bid["go_build_id"], want)
		}
		if st := in["facets"].(map[string]any)["build_id"].(map[string]any)["state"]; st != "complete" {
			t.Errorf("%s: build_id facet %v", name, st)
		}
	}
	fat := corpus["go-darwin-universal"]
	if fat == "" {
		t.Fatal("no universal file in the corpus")
	}
	m := mustCall(t, r, "inspect_binary", map[string]any{"path": fat, "facets": []string{"members"}})
	want := map[string]string{"arm64": buildid(corpus["go-darwin-arm64"]), "x86_64": buildid(corpus["go-darwin-amd64"])}
	if n := len(rows(m)); n != 2 {
		t.Fatalf("universal file: %d members", n)
	}
	for _, row := range rows(m) {
		mem := row.(map[string]any)
		arch, _ := mem["arch"].(string)
		got := mem["inspection"].(map[string]any)["build_id"].(map[string]any)["go_build_id"]
		if want[arch] == "" || got != want[arch] {
			t.Errorf("member arch %q: go_build_id %v, want %q", arch, got, want[arch])
		}
		sel := data(mustCall(t, r, "inspect_binary", map[string]any{"path": fat, "arch": arch}))["inspection"].(map[string]any)
		if g := sel["build_id"].(map[string]any)["go_build_id"]; g != want[arch] {
			t.Errorf("--arch %s: go_build_id %v, want %q", arch, g, want[arch])
		}
	}
}

// TestSectionNameSharedBySegments: a Go Mach-O binary has two sections
// named __rodata (__TEXT and __DATA_CONST); search_strings with the bare
// name is INVALID_ARGUMENT naming both segment,section choices, and each
// choice searches its own section. A unique bare name still works.
func TestSectionNameSharedBySegments(t *testing.T) {
	buildCorpus(t)
	p := corpus["go-darwin-arm64"]
	f, err := macho.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range f.Sections {
		if s.Name == "__rodata" {
			want = append(want, s.Seg+","+s.Name)
		}
	}
	f.Close()
	if len(want) < 2 {
		t.Fatalf("the Go Mach-O build has sections %v named __rodata; want two", want)
	}
	e := callErr(t, "search_strings", map[string]any{"path": p, "section": "__rodata"})
	if e.Code != contract.CodeInvalidArgument || e.Field != "/section" {
		t.Fatalf("bare __rodata: %v %s %s", e.Code, e.Field, e.Message)
	}
	got, _ := e.Details["candidates"].([]string)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("candidates %v, want %v", e.Details["candidates"], want)
	}
	r := registry(t, "")
	for _, key := range want {
		m := mustCall(t, r, "search_strings", map[string]any{"path": p, "section": key, "limit": 5})
		if ex := m["coverage"].(map[string]any)["examined"]; ex != "section "+key {
			t.Errorf("section %s: examined %v", key, ex)
		}
	}
	m := mustCall(t, r, "search_strings", map[string]any{"path": p, "section": "__gopclntab", "limit": 5})
	if ex := m["coverage"].(map[string]any)["examined"]; ex != "section __TEXT,__gopclntab" && ex != "section __DATA_CONST,__gopclntab" {
		t.Errorf("unique __gopclntab: examined %v", ex)
	}
}

// TestCOFFFileSymbolNames: a .file symbol of a PE image's COFF symbol table
// is named by the source file its auxiliary records hold, as objdump -t
// prints it in this run (crtexe.c, the test's own source file), not
// ".file".
func TestCOFFFileSymbolNames(t *testing.T) {
	needTool(t, "x86_64-w64-mingw32-gcc")
	needTool(t, "objdump")
	dir := t.TempDir()
	src := filepath.Join(dir, "hello.c")
	os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n"), 0o644)
	exe := filepath.Join(dir, "hello.exe")
	if msg, err := exec.Command("x86_64-w64-mingw32-gcc", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("mingw gcc: %v %s", err, msg)
	}
	out, err := exec.Command("objdump", "-t", exe).Output()
	if err != nil {
		t.Fatalf("objdump -t: %v", err)
	}
	var want []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "(scl 103)") {
			f := strings.Fields(line)
			want = append(want, f[len(f)-1])
		}
	}
	if !slices.Contains(want, "crtexe.c") || !slices.Contains(want, "hello.c") {
		t.Fatalf("objdump -t .file symbols %v; want crtexe.c and hello.c among them", want)
	}
	rows, _, _ := follow(t, context.Background(), registry(t, t.TempDir()), "list_symbols", map[string]any{"path": exe, "limit": 1000})
	var got []string
	for _, r := range rows {
		var m map[string]any
		json.Unmarshal([]byte(r), &m)
		if m["binding"] == "FILE" {
			got = append(got, m["name"].(string))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf(".file symbols %v, objdump -t %v", got, want)
	}
}

// FuzzGoRawBuildID: goRawBuildID never panics, finds an id exactly when
// the marker is in the bytes, and an id it returns is the quoted string
// that follows the first marker.
func FuzzGoRawBuildID(f *testing.F) {
	f.Add([]byte("\xff Go build ID: \"abc/def\"\n \xff"))
	f.Add([]byte("xx\xff Go build ID: \"a\\x41\"\n \xffyy"))
	f.Add([]byte("\xff Go build ID: \"unterminated"))
	f.Add([]byte("\xff Go build ID: \"bad\\q\"\n \xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, found, ok := goRawBuildID(b)
		i := bytes.Index(b, goBuildIDPrefix)
		if found != (i >= 0) || ok && !found || !ok && id != "" {
			t.Fatalf("found %v ok %v id %q; marker at %d", found, ok, id, i)
		}
		if ok {
			rest := b[i+len(goBuildIDPrefix)-1:]
			q := rest[:bytes.Index(rest[1:], goBuildIDEnd)+2]
			if u, err := strconv.Unquote(string(q)); err != nil || u != id {
				t.Fatalf("id %q, the quoted string is %q", id, q)
			}
		}
	})
}
