package bin

import (
	"bytes"
	"compress/zlib"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
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

var objdumpReloc = regexp.MustCompile(`^\t+([0-9a-f]+): (\S+)\t(.*)$`)

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

// checksecFile runs checksec --output=json --file=p and returns its fields.
func checksecFile(t *testing.T, p string) map[string]string {
	t.Helper()
	out := run(t, "checksec", "--output=json", "--file="+p)
	var m map[string]map[string]string
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("checksec output %q: %v", out, err)
	}
	for _, v := range m {
		return v
	}
	t.Fatalf("checksec printed no file: %q", out)
	return nil
}

// readelfUndefined reports whether readelf -sW lists name as an undefined
// (UND) symbol and whether it lists it as defined.
func readelfUndefined(t *testing.T, p, name string) (und, def bool) {
	t.Helper()
	for _, l := range strings.Split(run(t, "readelf", "-sW", p), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 || (f[7] != name && !strings.HasPrefix(f[7], name+"@")) {
			continue
		}
		if f[6] == "UND" {
			und = true
		} else {
			def = true
		}
	}
	return
}

// readelfCET returns the x86 feature list readelf -n prints ("IBT,
// SHSTK"), or "" when there is none.
func readelfCET(t *testing.T, p string) string {
	t.Helper()
	for _, l := range strings.Split(run(t, "readelf", "-n", p), "\n") {
		if _, rest, ok := strings.Cut(l, "x86 feature: "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

const nosspSource = `
void __stack_chk_fail(void) { for (;;) ; }
void *__memcpy_chk(void *d, const void *s, unsigned long n, unsigned long dl) {
	char *a = d; const char *b = s;
	while (n--) *a++ = *b++;
	return d;
}
int exported(int x) { return x + 1; }
`

func verdicts(in *Inspection) map[string]Check {
	m := map[string]Check{}
	for _, c := range in.Hardening {
		m[c.Name] = c
	}
	return m
}

// TestHardeningAgainstChecksecAndReadelf (issue cases 5, 6, 7 and the CET
// and stripped facts): verdicts are compared in the same run with
// checksec (Debian's checksec 2.6) where it reads the same fact, and with
// the readelf facts checksec rests on where Debian's checksec differs by
// design: it greps readelf -s for __stack_chk_fail and counts a definition
// as use, and it gives loader verdicts to relocatable objects; newer
// checksec.sh and this tool count only undefined references and say N/A.
func TestHardeningAgainstChecksecAndReadelf(t *testing.T) {
	needTool(t, "readelf")
	needTool(t, "checksec")
	needTool(t, "objcopy")
	buildCorpus(t)
	dir := t.TempDir()
	nossp := gccBuild(t, dir, "libnossp.so", nosspSource, "-shared", "-fPIC", "-fno-stack-protector", "-D_FORTIFY_SOURCE=0", "-O1")
	obj := gccBuild(t, dir, "prog.o", relocSource, "-c", "-O1", "-fcf-protection=full")
	cetLib := gccBuild(t, dir, "libcet.so", relocSource, "-shared", "-fPIC", "-fcf-protection=full", "-nostartfiles")
	debug := filepath.Join(dir, "c-hardened.debug")
	if msg, err := exec.Command("objcopy", "--only-keep-debug", corpus["c-hardened"], debug).CombinedOutput(); err != nil {
		t.Fatalf("objcopy --only-keep-debug: %v\n%s", err, msg)
	}
	files := []string{corpus["c-hardened"], corpus["c-plain"], corpus["go-linux-amd64"], corpus["go-linux-amd64-v3-pie"], nossp, obj, cetLib, debug}
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		files = append(files, "/lib/x86_64-linux-gnu/libc.so.6")
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			_, in := inspectPath(t, p)
			v := verdicts(in)
			cs := checksecFile(t, p)
			hdr := run(t, "readelf", "-hW", p)
			isRel := strings.Contains(hdr, "REL (Relocatable file)")
			isDebug := p == debug
			want := func(name string, ok bool, why string) {
				t.Helper()
				if !ok {
					t.Errorf("%s = %s %v; %s", name, v[name].Verdict, v[name].Basis, why)
				}
			}
			// Canary and fortify: use is an undefined reference.
			und, def := readelfUndefined(t, p, "__stack_chk_fail")
			und2, _ := readelfUndefined(t, p, "__stack_chk_guard")
			guards := objdumpGuardReads(t, p)
			switch {
			case guards > 0:
				want("stack_canary", v["stack_canary"].Verdict == VerdictYes, fmt.Sprintf("objdump -d shows %d reads of the stack guard", guards))
			case und || und2:
				want("stack_canary", v["stack_canary"].Verdict == VerdictYes, "readelf lists __stack_chk_fail/guard as UND")
				want("stack_canary", cs["canary"] == "yes", "checksec canary "+cs["canary"])
			case def:
				want("stack_canary", v["stack_canary"].Verdict == VerdictNo, "readelf lists __stack_chk_fail only as defined: a definition is not use (checksec 2.6 counts it: "+cs["canary"]+")")
			default:
				want("stack_canary", v["stack_canary"].Verdict == VerdictNo, "no __stack_chk_* symbol; checksec canary "+cs["canary"])
				want("stack_canary", cs["canary"] == "no", "checksec canary "+cs["canary"])
			}
			if _, chkDef := readelfUndefined(t, p, "__memcpy_chk"); chkDef && !und {
				if f := v["fortify"].Verdict; f == VerdictYes || f == VerdictPartial {
					t.Errorf("fortify = %s %v although __memcpy_chk is only defined here", f, v["fortify"].Basis)
				}
			}
			// checksec reads fortification from .dynsym alone, which a
			// debug-only companion does not carry in the file.
			if cs["fortify_source"] == "no" && !isDebug {
				want("fortify", v["fortify"].Verdict == VerdictNo || v["fortify"].Verdict == VerdictNotApplicable, "checksec fortify_source no")
			}
			// Stripped: checksec's symbols field is whether .symtab exists.
			want("stripped", (v["stripped"].Verdict == VerdictNo) == (cs["symbols"] == "yes"), "checksec symbols "+cs["symbols"])
			// CET from .note.gnu.property, as readelf -n decodes it.
			feat := readelfCET(t, p)
			want("ibt", (v["ibt"].Verdict == VerdictYes) == strings.Contains(feat, "IBT"), "readelf -n x86 feature: "+feat)
			want("shstk", (v["shstk"].Verdict == VerdictYes) == strings.Contains(feat, "SHSTK"), "readelf -n x86 feature: "+feat)
			switch {
			case isRel:
				// Case 6: loader verdicts do not apply to an object.
				progs := run(t, "readelf", "-lW", p)
				if !strings.Contains(progs, "no program headers") {
					t.Fatalf("readelf -l: %s", progs)
				}
				for _, n := range []string{"pie", "nx", "relro", "no_rpath"} {
					want(n, v[n].Verdict == VerdictNotApplicable, "readelf: no program headers in a relocatable object (checksec pie "+cs["pie"]+")")
				}
				secs := run(t, "readelf", "-SW", p)
				if !strings.Contains(secs, ".note.GNU-stack") || !strings.Contains(strings.Join(v["nx"].Basis, " "), "non-executable stack") {
					t.Errorf("nx basis %v; readelf -S has .note.GNU-stack: %v", v["nx"].Basis, strings.Contains(secs, ".note.GNU-stack"))
				}
			case isDebug:
				// Case 7: the companion has no dynamic section or
				// interpreter in the file.
				if d := run(t, "readelf", "-d", p); !strings.Contains(d, "no dynamic section") {
					t.Fatalf("readelf -d: %s", d)
				}
				if in.Dynamic != nil || in.Facets["dynamic"].State != FacetUnresolved {
					t.Errorf("dynamic %+v facet %+v; readelf: no dynamic section in this file", in.Dynamic, in.Facets["dynamic"])
				}
				if in.Imports != nil || in.Facets["imports"].State != FacetUnresolved {
					t.Errorf("imports %v facet %+v, want unknown (.dynsym is NOBITS)", in.Imports, in.Facets["imports"])
				}
				for _, n := range []string{"pie", "no_rpath", "relro"} {
					want(n, v[n].Verdict == VerdictUnknown, "the dynamic section is not in the file")
				}
				if in.Complete() {
					t.Errorf("a debug-only companion is reported complete")
				}
			default:
				pie := map[string]string{"yes": VerdictYes, "no": VerdictNo, "dso": VerdictNotApplicable}[cs["pie"]]
				want("pie", v["pie"].Verdict == pie, "checksec pie "+cs["pie"])
				relro := map[string]string{"full": VerdictFull, "partial": VerdictPartial, "no": VerdictNone}[cs["relro"]]
				want("relro", v["relro"].Verdict == relro, "checksec relro "+cs["relro"])
				nx := map[string]string{"yes": VerdictYes, "no": VerdictNo}[cs["nx"]]
				want("nx", v["nx"].Verdict == nx, "checksec nx "+cs["nx"])
				noRpath := cs["rpath"] == "no" && cs["runpath"] == "no"
				want("no_rpath", (v["no_rpath"].Verdict == VerdictYes) == noRpath, "checksec rpath "+cs["rpath"]+" runpath "+cs["runpath"])
			}
		})
	}
}

// compressedBombELF returns a relocatable ELF64 file whose .debug_info is
// SHF_COMPRESSED zlib data whose compression header claims claim bytes
// (the zlib stream itself holds 1 MiB of zeros).
func compressedBombELF(t *testing.T, claim uint64) []byte {
	t.Helper()
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(make([]byte, 1<<20))
	w.Close()
	le := binary.LittleEndian
	var debug bytes.Buffer
	binary.Write(&debug, le, struct {
		Type, Reserved uint32
		Size, Align    uint64
	}{1 /* ELFCOMPRESS_ZLIB */, 0, claim, 1})
	debug.Write(z.Bytes())
	shstr := []byte("\x00.debug_info\x00.debug_abbrev\x00.shstrtab\x00")
	abbrev := []byte{0}
	var body bytes.Buffer
	body.Write(make([]byte, 64))
	offDebug := uint64(body.Len())
	body.Write(debug.Bytes())
	offAbbrev := uint64(body.Len())
	body.Write(abbrev)
	offStr := uint64(body.Len())
	body.Write(shstr)
	for body.Len()%8 != 0 {
		body.WriteByte(0)
	}
	shoff := uint64(body.Len())
	sh := func(name uint32, typ uint32, flags, off, size uint64) {
		binary.Write(&body, le, elf.Section64{Name: name, Type: typ, Flags: flags, Off: off, Size: size, Addralign: 1})
	}
	sh(0, 0, 0, 0, 0)
	sh(1, uint32(elf.SHT_PROGBITS), uint64(elf.SHF_COMPRESSED), offDebug, uint64(debug.Len()))
	sh(13, uint32(elf.SHT_PROGBITS), 0, offAbbrev, uint64(len(abbrev)))
	sh(27, uint32(elf.SHT_STRTAB), 0, offStr, uint64(len(shstr)))
	b := body.Bytes()
	copy(b, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1})
	le.PutUint16(b[16:], uint16(elf.ET_REL))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[40:], shoff)
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[58:], 64)
	le.PutUint16(b[60:], 4)
	le.PutUint16(b[62:], 3)
	return b
}

// TestCompressedSectionBounded (issue case 3): a .debug_info whose zlib
// compression header claims 1 GiB is not decompressed: inspect lists it
// as unresolved naming the limit and reports debug_info unresolved, the
// section table still agrees with readelf -S, and a cancelled context
// ends inspect with CANCELLED.
func TestCompressedSectionBounded(t *testing.T) {
	needTool(t, "readelf")
	p := filepath.Join(t.TempDir(), "bomb.o")
	if err := os.WriteFile(p, compressedBombELF(t, 1<<30), 0o644); err != nil {
		t.Fatal(err)
	}
	secs := run(t, "readelf", "-SW", p)
	if !strings.Contains(secs, ".debug_info") {
		t.Fatalf("readelf -S does not list .debug_info:\n%s", secs)
	}
	f, in := inspectPath(t, p)
	if got := in.Facets["debug_info"].State; got != FacetUnresolved {
		t.Errorf("debug_info facet %s, want unresolved", got)
	}
	found := false
	for _, u := range in.Unresolved {
		if strings.Contains(u.Structure, ".debug_info") && strings.Contains(u.Reason, "1073741824") && strings.Contains(u.Reason, strconv.FormatUint(MaxDecompressedBytes, 10)) {
			found = true
		}
	}
	if !found {
		t.Errorf("no unresolved entry names the claim and the limit: %+v", in.Unresolved)
	}
	for _, s := range in.Sections {
		if s.Name == ".debug_info" && (s.UncompressedSize != "1073741824" || !strings.Contains(s.Flags, "C")) {
			t.Errorf(".debug_info %+v; readelf -S flags C", s)
		}
	}
	// The tools that open the sections again stay bounded too.
	r := registry(t, "")
	mustCall(t, r, "list_symbols", map[string]any{"path": p})
	res := mustCall(t, r, "inspect_binary", map[string]any{"path": p})
	if res["status"] != "partial" {
		t.Errorf("inspect_binary status %v, want partial", res["status"])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Inspect(ctx, f.Data); contract.AsError(err) == nil || contract.AsError(err).Code != contract.CodeCancelled {
		t.Errorf("cancelled inspect: %v, want CANCELLED", err)
	}
}

// TestARM64BranchTargetsAbsolute (issue "Also"): arm64 branches print
// their absolute target as objdump does ("bl 0x78a90", objdump "bl
// 78a90 <main.compute>"), checked on every instruction of main.main of
// the arm64 build that objdump can decode.
func TestARM64BranchTargetsAbsolute(t *testing.T) {
	buildCorpus(t)
	p := corpus["go-linux-arm64"]
	needTool(t, "aarch64-linux-gnu-objdump")
	out, err := exec.Command("aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", p).Output()
	if err != nil || !bytes.Contains(out, []byte("<main.main>:")) {
		t.Fatalf("aarch64-linux-gnu-objdump -d: %v", err)
	}
	ref := map[uint64]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if g := objdumpInsn.FindStringSubmatch(l); g != nil {
			a, _ := strconv.ParseUint(g[1], 16, 64)
			ref[a] = g[2]
		}
	}
	r := registry(t, "")
	res := mustCall(t, r, "disassemble", map[string]any{"path": p, "symbol": "main.main", "max_instructions": 500})
	n := 0
	for _, x := range rows(res) {
		row := x.(map[string]any)
		if row["target"] == nil {
			continue
		}
		a := mustHex(t, row["address"].(string))
		tgt := strings.TrimPrefix(row["target"].(string), "0x")
		if !strings.Contains(row["text"].(string), row["target"].(string)) {
			t.Errorf("%#x: text %q lacks the absolute target %s", a, row["text"], row["target"])
		}
		if want, ok := ref[a]; ok && !strings.Contains(want, " "+tgt+" <") && !strings.Contains(want, "\t"+tgt+" <") && !strings.Contains(want, ", "+tgt+" <") {
			t.Errorf("%#x: ours %q, objdump %q", a, row["text"], want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no branch in main.main")
	}
}

var llvmNMLine = regexp.MustCompile(`^(?:[0-9a-f]{16}| {16}) \S (.+)$`)

var llvmRIP = regexp.MustCompile(`\brip\s+0x([0-9a-f]+)`)

// TestMachONamesAndThreadEntry (issue case 9): Mach-O symbol names keep
// their leading underscore, as llvm-nm prints them, and the entry point of
// an LC_UNIXTHREAD executable (Go's darwin/amd64 build) is the thread
// state's rip that llvm-objdump --macho --private-headers prints.
func TestMachONamesAndThreadEntry(t *testing.T) {
	needTool(t, "llvm-nm")
	needTool(t, "llvm-objdump")
	buildCorpus(t)
	p := corpus["go-darwin-amd64"]
	want := map[string]bool{}
	for _, l := range strings.Split(run(t, "llvm-nm", p), "\n") {
		if m := llvmNMLine.FindStringSubmatch(l); m != nil {
			want[m[1]] = true
		}
	}
	f, in := inspectPath(t, p)
	ss := loadSymbols(in, f.Data)
	got := map[string]bool{}
	for _, s := range ss.syms {
		got[s.Name] = true
	}
	for n := range want {
		if !got[n] {
			t.Errorf("llvm-nm lists %q; we do not", n)
		}
	}
	if !got["_main.main"] || got["main.main"] {
		t.Errorf("_main.main %v, main.main %v: the leading underscore must stay", got["_main.main"], got["main.main"])
	}
	m := llvmRIP.FindStringSubmatch(run(t, "llvm-objdump", "--macho", "--private-headers", p))
	if m == nil {
		t.Fatal("llvm-objdump shows no LC_UNIXTHREAD rip")
	}
	if in.Header.Entry != "0x"+strings.TrimLeft(m[1], "0") || !strings.Contains(in.Header.EntrySource, "LC_UNIXTHREAD") {
		t.Errorf("entry %s (%s), llvm-objdump rip 0x%s", in.Header.Entry, in.Header.EntrySource, m[1])
	}
	if in.Facets["header"].State != FacetComplete {
		t.Errorf("header facet %+v", in.Facets["header"])
	}
}

// TestUniversalSliceSelector (issue case 8): every tool on a universal
// (fat) Mach-O works on one slice, chosen by arch or the host's: symbols
// equal llvm-nm --arch's for that slice, disassemble by symbol decodes
// it, and a missing slice is INVALID_ARGUMENT on /arch.
func TestUniversalSliceSelector(t *testing.T) {
	needTool(t, "llvm-nm")
	buildCorpus(t)
	p := corpus["go-darwin-universal"]
	r := registry(t, "")
	for _, arch := range []string{"x86_64", "arm64", ""} {
		sel := arch
		if sel == "" {
			sel = hostArch()
		}
		want := 0
		for _, l := range strings.Split(run(t, "llvm-nm", "--arch="+sel, p), "\n") {
			if llvmNMLine.MatchString(l) {
				want++
			}
		}
		all := 0
		cursor := ""
		for {
			a := map[string]any{"path": p, "limit": 1000}
			if arch != "" {
				a["arch"] = arch
			}
			if cursor != "" {
				a["cursor"] = cursor
			}
			m := mustCall(t, r, "list_symbols", a)
			all += len(rows(m))
			c, _ := data(m)["next_cursor"].(string)
			if c == "" {
				break
			}
			cursor = c
		}
		if all != want || want == 0 {
			t.Errorf("arch %q: %d symbols, llvm-nm --arch=%s lists %d", arch, all, sel, want)
		}
		d := map[string]any{"path": p, "symbol": "_main.main", "max_instructions": 50}
		if arch != "" {
			d["arch"] = arch
		}
		m := mustCall(t, r, "disassemble", d)
		wantArch := map[string]string{"x86_64": ArchAMD64, "arm64": ArchARM64}[sel]
		if got := data(m)["context"].(map[string]any)["architecture"]; got != wantArch || len(rows(m)) == 0 {
			t.Errorf("arch %q: disassembled %v (%d rows), want %s", arch, got, len(rows(m)), wantArch)
		}
		in := data(mustCall(t, r, "inspect_binary", map[string]any{"path": p, "arch": sel}))["inspection"].(map[string]any)
		if sl, _ := in["slice"].(map[string]any); sl == nil || sl["arch"] != sel {
			t.Errorf("inspect_binary arch %s: slice %v", sel, in["slice"])
		}
	}
	_, err := call(t, r, "list_symbols", map[string]any{"path": p, "arch": "ppc"})
	if e := contract.AsError(err); e == nil || e.Code != contract.CodeInvalidArgument || e.Field != "/arch" {
		t.Errorf("missing slice: %v", err)
	}
	_, err = call(t, r, "list_symbols", map[string]any{"path": corpus["go-linux-amd64"], "arch": "arm64"})
	if e := contract.AsError(err); e == nil || e.Field != "/arch" {
		t.Errorf("thin file of another arch: %v", err)
	}
}

const coffAsm = `	.text
	.globl	f
f:
	endbr64
	vzeroupper
	call	g
	leaq	x(%rip), %rax
	movl	$1, %eax
	ret
	.data
x:	.long	5
`

// TestCOFFObject (issue "Also", with case 2): a COFF object file (no MZ
// stub, assembled by llvm-mc) is inspected, its sections agree with
// objdump -h, its .text disassembles with the boundaries and relocations
// objdump -dr prints, and the loader verdicts are N/A.
func TestCOFFObject(t *testing.T) {
	needTool(t, "llvm-mc")
	needTool(t, "objdump")
	dir := t.TempDir()
	src := filepath.Join(dir, "c.s")
	os.WriteFile(src, []byte(coffAsm), 0o644)
	p := filepath.Join(dir, "c.obj")
	if msg, err := exec.Command("llvm-mc", "-filetype=obj", "-triple=x86_64-pc-windows-msvc", src, "-o", p).CombinedOutput(); err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, msg)
	}
	_, in := inspectPath(t, p)
	if in.Header.Class != "COFF object" || in.Header.Machine.Name != "IMAGE_FILE_MACHINE_AMD64" || !relocatable(in) {
		t.Fatalf("header %+v", in.Header)
	}
	want := map[string]uint64{}
	for _, l := range strings.Split(run(t, "objdump", "-h", p), "\n") {
		f := strings.Fields(l)
		if len(f) >= 7 && f[0] >= "0" && f[0] <= "9" {
			v, _ := strconv.ParseUint(f[2], 16, 64)
			want[f[1]] = v
		}
	}
	if len(in.Sections) != len(want) {
		t.Errorf("%d sections, objdump -h %d", len(in.Sections), len(want))
	}
	for _, s := range in.Sections {
		size := s.Size
		if size == "0" {
			size = s.FileSize
		}
		if v, ok := want[s.Name]; !ok || decU(v) != size {
			t.Errorf("section %s size %s, objdump -h %d (listed %v)", s.Name, size, v, ok)
		}
	}
	for _, c := range in.Hardening {
		if c.Verdict != VerdictNotApplicable {
			t.Errorf("%s = %s on a COFF object", c.Name, c.Verdict)
		}
	}
	wantAddrs, wantRelocs := objdumpSection(t, p, ".text")
	res := mustCall(t, registry(t, ""), "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 100})
	var gotAddrs []uint64
	var gotRelocs []string
	for _, x := range rows(res) {
		m := x.(map[string]any)
		gotAddrs = append(gotAddrs, mustHex(t, m["address"].(string)))
		rl, _ := m["relocations"].([]any)
		for _, r := range rl {
			r := r.(map[string]any)
			gotRelocs = append(gotRelocs, fmt.Sprintf("%#x %s %s", mustHex(t, r["address"].(string)), r["type"], r["target"]))
		}
	}
	if fmt.Sprint(gotAddrs) != fmt.Sprint(wantAddrs) || fmt.Sprint(gotRelocs) != fmt.Sprint(wantRelocs) || len(wantRelocs) != 2 {
		t.Errorf("ours %x %q\nobjdump -dr %x %q", gotAddrs, gotRelocs, wantAddrs, wantRelocs)
	}
}
