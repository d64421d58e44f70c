package bin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// liveMappings is the number of file mappings this process holds.
func liveMappings() int {
	mappings.Lock()
	defer mappings.Unlock()
	return len(mappings.m)
}

// TestKeptInspectionFollowsTheFile: the inspection kept between pages of a
// disassembly serves the next page of the same file (the same rows as a
// fresh inspection gives), a file rewritten between pages (same size, its
// modification time set back, in place or replaced by a rename) fails the
// next page with INPUT_CHANGED, at most maxKeptInspections files are kept,
// and an evicted file's mapping is released.
func TestKeptInspectionFollowsTheFile(t *testing.T) {
	orig, text := keptStateInput(t)
	dropKeptInspections()
	t.Cleanup(dropKeptInspections)
	base := liveMappings()
	write := func(t *testing.T, name string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, orig, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		rewrite func(p string, b []byte)
	}{
		{"in place", func(p string, b []byte) { os.WriteFile(p, b, 0o755) }},
		{"renamed over", func(p string, b []byte) {
			os.WriteFile(p+".new", b, 0o755)
			os.Rename(p+".new", p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := registry(t, "")
			p := write(t, "prog")
			fi, _ := os.Stat(p)
			mtime := fi.ModTime()
			// A file changed within racyWindow is not kept.
			time.Sleep(3 * racyWindow)
			args := map[string]any{"path": p, "section": ".text", "max_instructions": 50}
			page := func() map[string]any {
				t.Helper()
				m := mustCall(t, r, "disassemble", args)
				if next, _ := data(m)["next_cursor"].(string); next == "" {
					t.Fatal("no next_cursor")
				}
				return m
			}
			args["cursor"] = data(page())["next_cursor"]
			fi, _ = os.Stat(p)
			if !kept(stateOf(fi)) {
				t.Fatal("the file's inspection was not kept")
			}
			kept2 := page() // served by the kept inspection
			dropKeptInspections()
			fresh := page()
			if got, want := rows(kept2), rows(fresh); !reflect.DeepEqual(got, want) {
				t.Errorf("the kept inspection's page differs from a fresh one's:\n%s\n%s", js(got[:3]), js(want[:3]))
			}
			args["cursor"] = data(fresh)["next_cursor"]
			page()
			changed := append([]byte(nil), orig...)
			changed[text.Offset+text.Size/2] ^= 0xff
			tc.rewrite(p, changed)
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			if fi2, _ := os.Stat(p); fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
				t.Fatalf("the rewrite changed size or mtime: %v %v", fi2.Size(), fi2.ModTime())
			}
			time.Sleep(3 * racyWindow)
			_, err := call(t, r, "disassemble", args)
			if contract.CodeOf(err) != contract.CodeInputChanged {
				t.Errorf("rewritten file: %v, want INPUT_CHANGED", err)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		dropKeptInspections()
		if n := liveMappings(); n != base {
			t.Fatalf("%d mappings live after every kept file was dropped, want %d", n, base)
		}
		r := registry(t, "")
		var paths []string
		for _, n := range []string{"a", "b", "c"} {
			paths = append(paths, write(t, n))
		}
		time.Sleep(3 * racyWindow)
		for _, p := range paths {
			mustCall(t, r, "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 10})
		}
		aheadRunning.Wait() // a page decoded ahead holds its file's bytes
		keptInspections.Lock()
		n := len(keptInspections.list)
		keptInspections.Unlock()
		if n != maxKeptInspections {
			t.Errorf("%d inspections kept, want %d", n, maxKeptInspections)
		}
		if got := liveMappings(); got != base+maxKeptInspections {
			t.Errorf("%d mappings live, want %d: an evicted file's mapping was not released", got, base+maxKeptInspections)
		}
		dropKeptInspections()
		if got := liveMappings(); got != base {
			t.Errorf("%d mappings live after the kept files were dropped, want %d", got, base)
		}
	})
}

// kept says whether an inspection is kept for state st.
func kept(st fileState) bool {
	keptInspections.Lock()
	defer keptInspections.Unlock()
	for _, k := range keptInspections.list {
		if k.st == st {
			return true
		}
	}
	return false
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }
