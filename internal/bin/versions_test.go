package bin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// versionedLib builds a shared library with a version script and .symver
// directives: two versions of dup (dup@V1 and the default dup@@V2, at
// different addresses), an alias same@V1 / same@@V2 at one address, plain@@V1,
// and a versioned reference to libc's puts. It returns the library's path.
func versionedLib(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed; .ci/run installs it")
	}
	needReadelf(t)
	dir := t.TempDir()
	src := `#include <stdio.h>
int dup_v1(int x) { return x + 1; }
int dup_v2(int x) { puts("v2"); return x + 2; }
int same(int x) { return x * 3; }
int plain(int x) { return x - 1; }
__asm__(".symver dup_v1,dup@V1");
__asm__(".symver dup_v2,dup@@V2");
__asm__(".symver same,same@V1");
__asm__(".symver same,same@@V2");
`
	script := "V1 { global: plain; dup; same; local: *; };\nV2 { global: dup; same; } V1;\n"
	if err := os.WriteFile(filepath.Join(dir, "v.c"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "v.map"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(dir, "libv.so")
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-O1", "-Wl,--version-script="+filepath.Join(dir, "v.map"), "-o", so, filepath.Join(dir, "v.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v %s", err, out)
	}
	return so
}

// copyRelocSource reads libc's stderr and environ from an executable: the
// link copies them into the executable's .bss (R_X86_64_COPY), where
// .dynsym defines them with libc's needed version (.gnu.version_r).
const copyRelocSource = `#include <stdio.h>
extern char **environ;
int main(int argc, char **argv) {
	fprintf(stderr, "%s %d\n", argv[0], argc);
	return environ[0] != 0;
}
`

// copyRelocExes builds copyRelocSource as a PIE and a non-PIE executable
// and checks with readelf -r that each has copy relocations.
func copyRelocExes(t *testing.T) []string {
	t.Helper()
	needReadelf(t)
	dir := t.TempDir()
	exes := []string{
		gccBuild(t, dir, "copyreloc-pie", copyRelocSource, "-O2", "-fpie", "-pie"),
		gccBuild(t, dir, "copyreloc-nopie", copyRelocSource, "-O2", "-fno-pie", "-no-pie"),
	}
	for _, p := range exes {
		if out := run(t, "readelf", "-rW", p); !strings.Contains(out, "_COPY") || !strings.Contains(out, "stderr@") {
			t.Fatalf("%s has no copy relocation of stderr:\n%s", p, out)
		}
	}
	return exes
}

// readelfVersioned runs readelf --dyn-syms -W on p in this run and returns
// every dynamic symbol that has a version as "value name@version" or
// "value name@@version" (value in 0x form without leading zeros; a
// reference's "(N)" version index suffix is dropped), sorted.
func readelfVersioned(t *testing.T, p string, defined bool) []string {
	t.Helper()
	out, err := exec.Command("readelf", "--dyn-syms", "-W", p).Output()
	if err != nil {
		t.Fatalf("readelf: %v", err)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasSuffix(f[0], ":") || !strings.Contains(f[7], "@") {
			continue
		}
		if (f[6] != "UND") != defined {
			continue
		}
		got = append(got, hexU(hx(f[1]))+" "+f[7])
	}
	sort.Strings(got)
	return got
}

// versionedRows renders rows (JSON objects with name, address, version,
// default_version) as readelfVersioned does; rows without a version are
// left out.
func versionedRows(t *testing.T, rows []string, keep func(map[string]any) bool) []string {
	t.Helper()
	var got []string
	for _, r := range rows {
		var m map[string]any
		if err := json.Unmarshal([]byte(r), &m); err != nil {
			t.Fatal(err)
		}
		if !keep(m) {
			continue
		}
		v, _ := m["version"].(string)
		def, hasDef := m["default_version"].(bool)
		if v == "" {
			if hasDef {
				t.Errorf("default_version without version: %s", r)
			}
			continue
		}
		if !hasDef {
			t.Errorf("version without default_version: %s", r)
		}

		at := "@"
		if def {
			at = "@@"
		}
		got = append(got, m["address"].(string)+" "+m["name"].(string)+at+v)
	}
	sort.Strings(got)
	return got
}

// TestELFSymbolVersions: list_symbols (dynamic table) and inspect_binary's
// exports give each dynamic symbol its GNU version and whether it is the
// default (@@), exactly as readelf --dyn-syms -W shows in the same run, on
// a library built with a version script (two versions of one symbol, two
// versions at one address), on executables with copy-relocated stderr and
// environ (defined with a needed version: readelf's stderr@GLIBC_2.2.5,
// never @@) and on the system's libc, where the same name at two
// addresses and byte-identical rows without versions were the defect.
func TestELFSymbolVersions(t *testing.T) {
	libs := append([]string{versionedLib(t)}, copyRelocExes(t)...)
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/aarch64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libs = append(libs, p)
			break
		}
	}
	r := registry(t, t.TempDir())
	for _, p := range libs {
		t.Run(filepath.Base(p), func(t *testing.T) {
			syms, _, _ := follow(t, context.Background(), r, "list_symbols", map[string]any{"path": p, "table": "dynamic", "limit": 1000})
			for _, defined := range []bool{true, false} {
				want := readelfVersioned(t, p, defined)
				got := versionedRows(t, syms, func(m map[string]any) bool { return m["defined"] == defined })
				if len(want) == 0 && defined {
					t.Fatalf("readelf shows no versioned definitions in %s", p)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("list_symbols defined=%v: %d versioned rows, readelf %d; first difference %s", defined, len(got), len(want), firstDiff(got, want))
				}
			}
			exports, _, _ := follow(t, context.Background(), r, "inspect_binary", map[string]any{"path": p, "facets": []string{"exports"}, "limit": 1000})
			seen := map[string]bool{}
			for _, e := range exports {
				if seen[e] {
					t.Errorf("duplicate export row %s", e)
				}
				seen[e] = true
			}
			// readelf's versioned GLOBAL/WEAK definitions are the
			// versioned exports.
			want := readelfVersioned(t, p, true)
			got := versionedRows(t, exports, func(m map[string]any) bool { return m["facet"] == "exports" })
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("exports: %d versioned rows, readelf %d; first difference %s", len(got), len(want), firstDiff(got, want))
			}
			if strings.HasPrefix(filepath.Base(p), "libv") {
				for _, w := range []string{"dup@V1", "dup@@V2", "same@V1", "same@@V2", "plain@@V1"} {
					found := false
					for _, g := range got {
						found = found || strings.HasSuffix(g, " "+w)
					}
					if !found {
						t.Errorf("no export %s in %v", w, got)
					}
				}
			}
		})
	}
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return "ours " + g + " / readelf " + w
		}
	}
	return "none"
}

// TestDisassembleVersionedSymbol: disassemble by a name two versions
// define at different addresses fails with INVALID_ARGUMENT listing each
// candidate (address, size, version, default_version as readelf shows
// them in the same run) and a next_action that disassembles the default
// version; name@version and name@@version select one; two versions at one
// address are one symbol.
func TestDisassembleVersionedSymbol(t *testing.T) {
	so := versionedLib(t)
	out, err := exec.Command("readelf", "--dyn-syms", "-W", so).Output()
	if err != nil {
		t.Fatalf("readelf: %v", err)
	}
	// name@[@]version -> [address, size] from readelf.
	ref := map[string][2]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && strings.HasSuffix(f[0], ":") && f[0] != "Num:" && f[6] != "UND" {
			ref[f[7]] = [2]string{hexU(hx(f[1])), f[2]}
		}
	}
	r := registry(t, t.TempDir())
	_, err = call(t, r, "disassemble", map[string]any{"path": so, "symbol": "dup"})
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Code != contract.CodeInvalidArgument || ce.Field != "/symbol" {
		t.Fatalf("ambiguous symbol: %v", err)
	}
	body, _ := json.Marshal(ce.Details["candidates"])
	var cands []struct {
		Address, Size, Version string
		DefaultVersion         *bool `json:"default_version"`
	}
	if err := json.Unmarshal(body, &cands); err != nil || len(cands) != 2 {
		t.Fatalf("candidates %s (%v)", body, err)
	}
	for _, c := range cands {
		if c.DefaultVersion == nil {
			t.Fatalf("candidate without default_version: %s", body)
		}
		at := "@"
		if *c.DefaultVersion {
			at = "@@"
		}
		if want, ok := ref["dup"+at+c.Version]; !ok || want != [2]string{c.Address, c.Size} {
			t.Errorf("candidate dup%s%s at %s size %s; readelf %v", at, c.Version, c.Address, c.Size, want)
		}
	}
	na := ce.NextAction
	if na == nil || na.Tool != "disassemble" || na.Arguments["symbol"] != "dup@@V2" || na.Arguments["path"] != so {
		t.Fatalf("next_action %+v", na)
	}
	// Following next_action, and each spelling, disassembles the
	// symbol readelf places there.
	for sel, want := range map[string]string{"dup@@V2": "dup@@V2", "dup@V2": "dup@@V2", "dup@V1": "dup@V1", "same": "same@@V2", "same@V1": "same@V1", "plain@@V1": "plain@@V1"} {
		m, err := call(t, r, "disassemble", map[string]any{"path": so, "symbol": sel})
		if err != nil {
			t.Errorf("symbol %s: %v", sel, err)
			continue
		}
		ctx, _ := data(m)["context"].(map[string]any)
		if ctx["start"] != ref[want][0] {
			t.Errorf("symbol %s starts at %v; readelf's %s is at %s", sel, ctx["start"], want, ref[want][0])
		}
	}
	for _, sel := range []string{"dup@@V1", "dup@V3", "dup@", "@V1"} {
		if _, err := call(t, r, "disassemble", map[string]any{"path": so, "symbol": sel}); contract.CodeOf(err) != contract.CodeInvalidArgument {
			t.Errorf("symbol %s: %v, want INVALID_ARGUMENT", sel, err)
		}
	}
}

// FuzzSplitVersion: splitVersion never panics, and a split it accepts
// spells name back exactly (base, @ or @@, version), with no @ in version
// and a non-empty base.
func FuzzSplitVersion(f *testing.F) {
	for _, s := range []string{"memcpy@@GLIBC_2.14", "memcpy@GLIBC_2.2.5", "puts@plt", "@V1", "a@", "a@@", "a@@@b", "a@b@c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		base, ver, def, ok := splitVersion(name)
		if !ok {
			return
		}
		at := "@"
		if def {
			at = "@@"
		}
		if base == "" || ver == "" || strings.Contains(ver, "@") || base+at+ver != name {
			t.Fatalf("%q split as %q %q %v", name, base, ver, def)
		}
	})
}

// TestDisassembleCopyRelocMatchesObjdump: in executables whose stderr and
// environ are copy-relocated, and in copies stripped of .symtab (where the
// names come from .dynsym and its version tables), every target and
// target_symbol equals objdump -d -w's annotation in the same run: the
// copied variables are named with their needed version as objdump names
// them (<stderr@GLIBC_2.2.5>, never stderr@@GLIBC_2.2.5).
func TestDisassembleCopyRelocMatchesObjdump(t *testing.T) {
	needTool(t, "objdump")
	needTool(t, "strip")
	var exes []string
	for _, p := range copyRelocExes(t) {
		stripped := p + "-stripped"
		if out, err := exec.Command("strip", "--strip-all", "-o", stripped, p).CombinedOutput(); err != nil {
			t.Fatalf("strip: %v\n%s", err, out)
		}
		exes = append(exes, p, stripped)
	}
	for _, p := range exes {
		t.Run(filepath.Base(p), func(t *testing.T) {
			st := compareObjdumpAnnotations(t, p)
			if st.symbols["stderr@GLIBC_2.2.5"] == 0 {
				t.Errorf("no annotation equal to objdump's names stderr@GLIBC_2.2.5 (equal ones: %v)", st.symbols)
			}
		})
	}
}
