package bin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// needRef returns the path of the reference tool name, skipping the test
// when it is absent outside CI (under CI=true its absence fails the test).
func needRef(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (.ci/run installs it)", name)
		}
		t.Skipf("%s is not installed; .ci/run installs it", name)
	}
	return p
}

// longNames are the binaries of TestLongStringsClipped: an executable
// longsym defining a function with a 200,000-character name and calling
// one of liblong.so (imported), the library (which exports it), and
// longsec, longsym with a section whose name has 100,001 characters
// (holding one string).
type longNames struct {
	dir                   string
	exe, lib, sec, object string
	// needs is linked against a library whose soname has 100,000
	// characters (its DT_NEEDED).
	needs string
}

// buildLong builds the long-name binaries in the test's temporary
// directory (once per run: only TestLongStringsClipped uses them).
func buildLong(t *testing.T) longNames {
	t.Helper()
	needRef(t, "gcc")
	needRef(t, "objcopy")
	dir := t.TempDir()
	a := "lib_" + strings.Repeat("a", 200000)
	b := "exe_" + strings.Repeat("b", 200000)
	for name, text := range map[string]string{
		"payload.txt": "a string of the long-named section\n",
		"lib.c":       "void " + a + "(void){}\n",
		"exe.c":       "void " + b + "(void){}\nvoid " + a + "(void);\nint main(void){" + b + "();" + a + "();return 0;}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := longNames{dir: dir, exe: filepath.Join(dir, "longsym"), lib: filepath.Join(dir, "liblong.so"), sec: filepath.Join(dir, "longsec"), object: filepath.Join(dir, "exe.o"), needs: filepath.Join(dir, "needs")}
	for _, args := range [][]string{
		{"gcc", "-O0", "-shared", "-fPIC", "lib.c", "-o", l.lib},
		{"gcc", "-O0", "-c", "exe.c", "-o", l.object},
		{"gcc", l.object, "-L" + dir, "-llong", "-Wl,-rpath," + dir, "-o", l.exe},
		{"gcc", "-O0", "-shared", "-fPIC", "-Wl,-soname,lib" + strings.Repeat("n", 100000) + ".so", "lib.c", "-o", filepath.Join(dir, "libsoname.so")},
		{"gcc", "-O0", "exe.c", filepath.Join(dir, "libsoname.so"), "-o", l.needs},
		{"objcopy", "--add-section", "." + strings.Repeat("s", 100000) + "=" + filepath.Join(dir, "payload.txt"), l.exe, l.sec},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %.2000s", args[0], err, out)
		}
	}
	return l
}

// refNames returns the long names (over 1,000 bytes) the reference tools
// read from the binaries: symbol names from nm -a and nm -D, section
// names from readelf -S -W.
func refNames(t *testing.T, l longNames) map[string]bool {
	t.Helper()
	needRef(t, "nm")
	needRef(t, "readelf")
	names := map[string]bool{}
	out := func(args ...string) string {
		b, err := exec.Command(args[0], args[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return string(b)
	}
	for _, p := range []string{l.exe, l.lib, l.sec, l.object} {
		for _, text := range []string{out("nm", "-a", p), out("nm", "-D", "--defined-only", p), out("nm", "-D", "--undefined-only", p)} {
			for _, line := range strings.Split(text, "\n") {
				f := strings.Fields(line)
				if len(f) > 0 && len(f[len(f)-1]) > 1000 {
					names[f[len(f)-1]] = true
				}
			}
		}
	}
	for _, line := range strings.Split(out("readelf", "-S", "-W", l.sec), "\n") {
		for _, f := range strings.Fields(line) {
			if len(f) > 1000 {
				names[f] = true
			}
		}
	}
	if len(names) != 3 {
		t.Fatalf("the references read %d long names, want 3 (the two functions and the section)", len(names))
	}
	// readelf -d states the long soname as needs' DT_NEEDED.
	for _, f := range strings.Fields(out("readelf", "-d", "-W", l.needs)) {
		if len(f) > 1000 {
			names[strings.Trim(f, "[]")] = true
		}
	}
	// objdump -dr states the annotations: <name>, <name@plt> and the
	// relocations' name-0x4.
	needRef(t, "objdump")
	for _, p := range []string{l.exe, l.object} {
		for _, f := range strings.Fields(out("objdump", "-dr", p)) {
			if len(f) > 1000 {
				names[f] = true
				names[strings.Trim(f, "<>")] = true
			}
		}
	}
	return names
}

// TestLongStringsClipped follows next_action over every page of the bin
// tools on binaries whose symbol and section names pass the default
// result budget (at the default budget and at 16 KiB): each page fits the
// budget as delivered, and every clipped field or array element, in rows
// and in the summary, holds a proper prefix of a value the reference tools
// read (nm, readelf -S/-d, objdump -dr) with its whole length and SHA-256.
func TestLongStringsClipped(t *testing.T) {
	l := buildLong(t)
	names := refNames(t, l)
	r := registry(t, "")
	cases := []struct {
		name string
		tool string
		args map[string]any
		// want are the fields that must be clipped on some page.
		want []string
	}{
		{"symbols of the executable", "list_symbols", map[string]any{"path": l.exe}, []string{"name"}},
		{"dynamic symbols of the library", "list_symbols", map[string]any{"path": l.lib, "table": "dynamic"}, []string{"name"}},
		{"disassemble main", "disassemble", map[string]any{"path": l.exe, "symbol": "main"}, []string{"target_symbol"}},
		{"disassemble the object's main", "disassemble", map[string]any{"path": l.object, "symbol": "main"}, []string{"target"}},
		{"sections", "inspect_binary", map[string]any{"path": l.sec, "facets": []string{"sections"}}, []string{"name"}},
		{"imports", "inspect_binary", map[string]any{"path": l.exe, "facets": []string{"imports"}}, []string{"name"}},
		{"exports", "inspect_binary", map[string]any{"path": l.lib, "facets": []string{"exports"}}, []string{"name"}},
		{"strings", "search_strings", map[string]any{"path": l.sec}, []string{"section"}},
		{"needed", "inspect_binary", map[string]any{"path": l.needs}, []string{"needed[]"}},
		{"libraries", "inspect_binary", map[string]any{"path": l.needs, "facets": []string{"libraries"}}, []string{"needed[]", "name"}},
		{"compare", "compare_binaries", map[string]any{"left": l.exe, "right": l.sec}, []string{"name"}},
	}
	for _, budget := range []int{tool.DefaultResultBytes, 16 << 10} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d", tc.name, budget), func(t *testing.T) {
				ctx := tool.WithResultBudget(t.Context(), budget)
				clipped := map[string]int{}
				args := tc.args
				for page := 0; ; page++ {
					if page > 200 {
						t.Fatal("more than 200 pages")
					}
					m, body := callBody(t, ctx, r, tc.tool, args)
					if n := tool.DeliveredBytes(body); n > budget {
						t.Fatalf("page %d is %d bytes as delivered, over %d", page, n, budget)
					}
					for _, row := range rows(m) {
						checkClipped(t, row, names, budget, clipped)
					}
					for _, k := range []string{"inspection", "summary", "counts", "context"} {
						if v := data(m)[k]; v != nil {
							before := len(clipped)
							checkClipped(t, v, names, budget, clipped)
							if len(clipped) > before && !warns(m, "the result's summary holds a string too long") {
								t.Fatalf("page %d clips its %s without saying so", page, k)
							}
						}
					}
					if n := countClipped(rows(m)); n > 0 && !warns(m, "too long for the page's byte budget") {
						t.Fatalf("page %d clips %d row(s) without saying so", page, n)
					}
					na, _ := m["next_action"].(map[string]any)
					if na == nil {
						break
					}
					if na["tool"] != tc.tool {
						t.Fatalf("next_action names %v", na["tool"])
					}
					args = na["arguments"].(map[string]any)
				}
				for _, k := range tc.want {
					if clipped[k] == 0 {
						t.Errorf("no row clipped %s (clipped: %v)", k, clipped)
					}
				}
			})
		}
	}
}

// callBody calls name and returns the result decoded and as delivered.
func callBody(t *testing.T, ctx context.Context, r *tool.Registry, name string, args map[string]any) (map[string]any, []byte) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := r.Call(ctx, name, raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	body, isErr := contract.Marshal(res, nil)
	if isErr {
		t.Fatalf("result does not encode: %.2000s", body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m, body
}

func warns(m map[string]any, sub string) bool {
	ws, _ := m["warnings"].([]any)
	for _, w := range ws {
		if s, _ := w.(string); strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// countClipped counts the rows with a clipped field at any depth.
func countClipped(rs []any) int {
	n := 0
	for _, r := range rs {
		found := false
		walkObjects(r, func(o map[string]any) {
			for k, v := range o {
				if strings.HasSuffix(k, "_truncated") && v == true {
					found = true
				}
			}
		})
		if found {
			n++
		}
	}
	return n
}

func walkObjects(v any, f func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		f(t)
		for _, e := range t {
			walkObjects(e, f)
		}
	case []any:
		for _, e := range t {
			walkObjects(e, f)
		}
	}
}

// checkClipped checks every clipped field of row: its value is a proper
// prefix of the whole value, which is one of the reference's names or
// (an annotation) embeds one, and <field>_bytes and <field>_sha256 are
// that whole value's length and SHA-256. No unclipped string is longer
// than half the budget.
func checkClipped(t *testing.T, row any, names map[string]bool, budget int, clipped map[string]int) {
	t.Helper()
	walkObjects(row, func(o map[string]any) {
		for k, v := range o {
			if a, ok := v.([]any); ok {
				cs, _ := o[k+"_clipped"].([]any)
				for _, c := range cs {
					e := c.(map[string]any)
					i := int(e["index"].(float64))
					p, _ := a[i].(string)
					ok := false
					for name := range names {
						if len(name) == int(e["bytes"].(float64)) && sha(name) == e["sha256"] && strings.HasPrefix(name, p) && len(p) < len(name) {
							ok = true
						}
					}
					if !ok {
						t.Fatalf("%s[%d] clipped to %d bytes: %v names no value the references read", k, i, len(p), e)
					}
					clipped[k+"[]"]++
				}
				for i, e := range a {
					if p, _ := e.(string); len(p) > budget/2 {
						t.Fatalf("%s[%d] holds %d bytes unclipped", k, i, len(p))
					}
				}
				continue
			}
			s, ok := v.(string)
			if !ok {
				continue
			}
			if o[k+"_truncated"] != true {
				if len(s) > budget/2 {
					t.Fatalf("field %s holds %d bytes unclipped", k, len(s))
				}
				continue
			}
			clipped[k]++
			n, _ := o[k+"_bytes"].(float64)
			sum, _ := o[k+"_sha256"].(string)
			whole := ""
			for name := range names {
				// The whole value is name itself, or (an annotation) text
				// that runs into name, possibly with a short tail.
				for i := 0; i < len(s) && whole == ""; i++ {
					rest := s[i:]
					if len(rest) < 64 || !strings.HasPrefix(name, rest) {
						continue
					}
					for _, end := range []string{"", ">", "@plt", "@plt>"} {
						if w := s[:i] + name + end; len(w) == int(n) && sha(w) == sum {
							whole = w
						}
					}
					// A search_strings text already cut to its first
					// MaxStringText characters (truncated) is clipped as
					// that text.
					if w := s[:i] + name; o["truncated"] == true && len(w) >= int(n) && sha(w[:int(n)]) == sum {
						whole = w[:int(n)]
					}
					break
				}
			}
			if whole == "" {
				t.Fatalf("clipped field %s (%d bytes of %v) is no prefix of a name the references read", k, len(s), n)
			}
			if len(s) >= len(whole) || int(n) != len(whole) || sum != sha(whole) {
				t.Fatalf("clipped %s: %d bytes, %s_bytes %v, sha256 %s; want a proper prefix of %d bytes with sha256 %s", k, len(s), k, n, sum, len(whole), sha(whole))
			}
		}
	})
}

func sha(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}
