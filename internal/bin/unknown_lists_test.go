package bin

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// compileC writes src to dir and builds it with cc (gcc or a cross gcc),
// returning the output path.
func compileC(t *testing.T, cc, dir, out, src string) string {
	t.Helper()
	needTool(t, cc)
	c := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, out)
	if msg, err := exec.Command(cc, "-o", p, c).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", cc, err, msg)
	}
	return p
}

const helloC = "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n"

// unknownInspection calls inspect_binary on p and returns the envelope and
// its data.inspection.
func unknownInspection(t *testing.T, p string) (map[string]any, map[string]any) {
	t.Helper()
	m := mustCall(t, registry(t, ""), "inspect_binary", map[string]any{"path": p})
	return m, data(m)["inspection"].(map[string]any)
}

// checkPartial checks the envelope is partial with a warning, facet is
// partial with a reason, and an unresolved entry names structure.
func checkPartial(t *testing.T, m, in map[string]any, facet, structure string) {
	t.Helper()
	if m["status"] != "partial" {
		t.Errorf("status %v, want partial", m["status"])
	}
	if w, _ := m["warnings"].([]any); len(w) == 0 {
		t.Errorf("no warning")
	}
	fc := in["facets"].(map[string]any)[facet].(map[string]any)
	if fc["state"] != "partial" || fc["reason"] == "" || fc["reason"] == nil {
		t.Errorf("facet %s: %v, want partial with a reason", facet, fc)
	}
	found := false
	for _, u := range in["unresolved"].([]any) {
		if u.(map[string]any)["structure"] == structure {
			found = true
		}
	}
	if !found {
		t.Errorf("no unresolved %q: %v", structure, in["unresolved"])
	}
}

// TestPEImportDirectoryInNoSection: a mingw build whose data directory 1
// (imports) points at RVA 0x7fff0000, which no section holds. objdump -p
// in the same run says it cannot find the section; the imports, needed
// DLLs and libraries are unknown (null, counts null), never empty, and the
// result is partial with a warning.
func TestPEImportDirectoryInNoSection(t *testing.T) {
	needTool(t, "objdump")
	dir := t.TempDir()
	exe := compileC(t, "x86_64-w64-mingw32-gcc", dir, "hello.exe", helloC)
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	pe := int(le.Uint32(b[0x3c:]))
	opt := pe + 24
	dd := opt + 96
	if le.Uint16(b[opt:]) == 0x20b {
		dd = opt + 112
	}
	if m, _ := unknownInspection(t, exe); data(m)["counts"].(map[string]any)["imports"] == 0.0 {
		t.Fatal("the unpatched build has no imports")
	}
	le.PutUint32(b[dd+8:], 0x7fff0000) // DataDirectory[1].VirtualAddress
	bad := filepath.Join(dir, "bad.exe")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("objdump", "-p", bad).CombinedOutput()
	if !strings.Contains(string(out), "There is an import table, but the section containing it could not be found") {
		t.Fatalf("objdump -p does not report the missing section:\n%s", out)
	}
	m, in := unknownInspection(t, bad)
	checkPartial(t, m, in, "imports", "import directory")
	if d := in["dynamic"].(map[string]any); d["needed"] != nil {
		t.Errorf("needed %v, want null", d["needed"])
	}
	counts := data(m)["counts"].(map[string]any)
	for _, k := range []string{"imports", "libraries"} {
		if v, ok := counts[k]; !ok || v != nil {
			t.Errorf("counts.%s %v, want null", k, v)
		}
	}
}

// TestELFDynamicOffsetOutsideFile: a gcc build whose PT_DYNAMIC p_offset
// and .dynamic sh_offset are 0x7fff0000. readelf -d in the same run fails
// on it; needed, rpath, runpath and libraries are unknown (null), not
// empty, the dynamic facet is partial with its reason, and the result
// carries a warning.
func TestELFDynamicOffsetOutsideFile(t *testing.T) {
	needTool(t, "readelf")
	dir := t.TempDir()
	p := compileC(t, "gcc", dir, "hello", helloC)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if b[4] != 2 || b[5] != 1 {
		t.Skip("not a 64-bit little-endian gcc build")
	}
	le := binary.LittleEndian
	patched := 0
	phoff, phentsize, phnum := le.Uint64(b[0x20:]), uint64(le.Uint16(b[0x36:])), uint64(le.Uint16(b[0x38:]))
	for i := uint64(0); i < phnum; i++ {
		if o := phoff + i*phentsize; le.Uint32(b[o:]) == 2 { // PT_DYNAMIC
			le.PutUint64(b[o+8:], 0x7fff0000)
			patched++
		}
	}
	shoff, shentsize, shnum := le.Uint64(b[0x28:]), uint64(le.Uint16(b[0x3a:])), uint64(le.Uint16(b[0x3c:]))
	for i := uint64(0); i < shnum; i++ {
		if o := shoff + i*shentsize; le.Uint32(b[o+4:]) == 6 { // SHT_DYNAMIC
			le.PutUint64(b[o+24:], 0x7fff0000)
			patched++
		}
	}
	if patched != 2 {
		t.Fatalf("patched %d headers, want PT_DYNAMIC and .dynamic", patched)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("readelf", "-d", bad).CombinedOutput()
	if !strings.Contains(string(out), "Error") || strings.Contains(string(out), "(NEEDED)") {
		t.Fatalf("readelf -d reads the patched file:\n%s", out)
	}
	m, in := unknownInspection(t, bad)
	checkPartial(t, m, in, "dynamic", "dynamic section")
	d := in["dynamic"].(map[string]any)
	for _, k := range []string{"needed", "rpath", "runpath"} {
		if v, ok := d[k]; !ok || v != nil {
			t.Errorf("dynamic.%s %v, want null", k, v)
		}
	}
	if v := data(m)["counts"].(map[string]any)["libraries"]; v != nil {
		t.Errorf("counts.libraries %v, want null", v)
	}
}

// TestFatSliceNamed: list_symbols and disassemble on a universal Mach-O
// file without arch read the host's slice and name it in data.slice (arch,
// and the fat_arch offset and size); with arch they name that slice, and
// the rows equal those of the thin file the slice was built from.
func TestFatSliceNamed(t *testing.T) {
	buildCorpus(t)
	fat := corpus["go-darwin-universal"]
	if fat == "" {
		t.Fatal("no universal file in the corpus")
	}
	r := registry(t, "")
	members := rows(mustCall(t, r, "inspect_binary", map[string]any{"path": fat, "facets": []string{"members"}}))
	offsets := map[string][2]any{}
	for _, row := range members {
		m := row.(map[string]any)
		offsets[m["arch"].(string)] = [2]any{m["offset"], m["size"]}
	}
	thin := map[string]string{"arm64": corpus["go-darwin-arm64"], "x86_64": corpus["go-darwin-amd64"]}
	for _, arch := range []string{"", "arm64", "x86_64"} {
		want := arch
		if want == "" {
			want = hostArch()
			if thin[want] == "" {
				continue // no slice for this host: INVALID_ARGUMENT, tested elsewhere
			}
		}
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"list_symbols", map[string]any{"name_contains": "main.", "limit": 50}},
			{"disassemble", map[string]any{"symbol": "_main.main", "max_instructions": 20}},
		} {
			args := map[string]any{"path": fat}
			for k, v := range tc.args {
				args[k] = v
			}
			if arch != "" {
				args["arch"] = arch
			}
			d := data(mustCall(t, r, tc.tool, args))
			s, _ := d["slice"].(map[string]any)
			if s == nil || s["arch"] != want || s["offset"] != offsets[want][0] || s["size"] != offsets[want][1] {
				t.Errorf("%s arch %q: slice %v, want %s at %v", tc.tool, arch, d["slice"], want, offsets[want])
			}
			thinArgs := map[string]any{"path": thin[want]}
			for k, v := range tc.args {
				thinArgs[k] = v
			}
			td := data(mustCall(t, r, tc.tool, thinArgs))
			if td["slice"] != nil {
				t.Errorf("%s on a thin file: slice %v", tc.tool, td["slice"])
			}
			if g, w := rowsJSON(map[string]any{"data": d}), rowsJSON(map[string]any{"data": td}); g != w || len(d["rows"].([]any)) == 0 {
				t.Errorf("%s arch %q: rows differ from the thin %s file (or empty)", tc.tool, arch, want)
			}
		}
		// compare_binaries names the universal input's slice only.
		args := map[string]any{"left": fat, "right": thin[want], "kinds": []string{"section"}}
		if arch != "" {
			args["arch"] = arch
		}
		d := data(mustCall(t, r, "compare_binaries", args))
		if s, _ := d["left_slice"].(map[string]any); s == nil || s["arch"] != want || s["offset"] != offsets[want][0] {
			t.Errorf("compare_binaries arch %q: left_slice %v, want %s", arch, d["left_slice"], want)
		}
		if d["right_slice"] != nil || d["slice"] != nil {
			t.Errorf("compare_binaries: a thin right file has right_slice %v, slice %v", d["right_slice"], d["slice"])
		}
	}
}
