package bin

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestKeptDigestFollowsTheFile: the digest kept for a file between pages
// of a disassembly is used while the file is unchanged, and a file
// rewritten between pages (same size, its modification time set back, in
// place or replaced by a rename) fails the next page with INPUT_CHANGED,
// as when no digest is kept.
func TestKeptDigestFollowsTheFile(t *testing.T) {
	orig, text := keptStateInput(t)
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
			p := filepath.Join(t.TempDir(), "prog")
			if err := os.WriteFile(p, orig, 0o755); err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(p)
			mtime := fi.ModTime()
			// The digest of a file changed within racyWindow is not kept.
			time.Sleep(3 * racyWindow)
			args := map[string]any{"path": p, "section": ".text", "max_instructions": 50}
			cursor := func() string {
				t.Helper()
				m := mustCall(t, r, "disassemble", args)
				next, _ := data(m)["next_cursor"].(string)
				if next == "" {
					t.Fatal("no next_cursor")
				}
				return next
			}
			args["cursor"] = cursor()
			fi, _ = os.Stat(p)
			if _, ok := cachedDigest(stateOf(fi)); !ok {
				t.Fatal("the file's digest was not kept")
			}
			args["cursor"] = cursor() // the kept digest serves the next page
			changed := append([]byte(nil), orig...)
			changed[text.Offset+text.Size/2] ^= 0xff
			tc.rewrite(p, changed)
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			if fi2, _ := os.Stat(p); fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
				t.Fatalf("the rewrite changed size or mtime: %v %v", fi2.Size(), fi2.ModTime())
			}
			_, err := call(t, r, "disassemble", args)
			if contract.CodeOf(err) != contract.CodeInputChanged {
				t.Errorf("rewritten file: %v, want INPUT_CHANGED", err)
			}
		})
	}
}

// keptStateInput is the input of the kept-state tests: /usr/bin/ls's bytes
// and its .text section header (the tests skip without them), with the
// racy window shortened for the test so a file written by it can be kept.
func keptStateInput(t *testing.T) ([]byte, *elf.SectionHeader) {
	t.Helper()
	const src = "/usr/bin/ls"
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Skip("no " + src)
	}
	ef, err := elf.Open(src)
	if err != nil {
		t.Skip(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	if text == nil || text.Size < 1000 {
		t.Skip("no .text in " + src)
	}
	w := racyWindow
	racyWindow = 20 * time.Millisecond
	t.Cleanup(func() { racyWindow = w })
	return orig, &text.SectionHeader
}
