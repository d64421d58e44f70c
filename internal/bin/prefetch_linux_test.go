package bin

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestDisassemblyAhead: the pages of a listing followed by next_cursor are
// decoded ahead (every page after the first is taken from a decoding
// ahead) and equal the pages decoded without it; a file rewritten after a
// page was decoded ahead of it (same size, modification time set back)
// fails that page with INPUT_CHANGED, not with the rows decoded ahead.
func TestDisassemblyAhead(t *testing.T) {
	orig, text := keptStateInput(t)
	dropKeptInspections()
	t.Cleanup(func() {
		aheadRunning.Wait()
		dropKeptInspections()
		noAhead = false
	})
	p := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(p, orig, 0o755); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	mtime := fi.ModTime()
	time.Sleep(3 * racyWindow) // a file changed within racyWindow is not kept
	r := registry(t, "")
	listing := func() (pages [][]any, cursors []string) {
		args := map[string]any{"path": p, "section": ".text", "max_instructions": 2000}
		for {
			m := mustCall(t, r, "disassemble", args)
			pages = append(pages, rows(m))
			next, _ := data(m)["next_cursor"].(string)
			if next == "" {
				return pages, cursors
			}
			cursors = append(cursors, next)
			args["cursor"] = next
		}
	}
	taken := aheadTaken.Load()
	ahead, cursors := listing()
	if len(ahead) < 3 {
		t.Fatalf("%d pages; the test wants at least 3", len(ahead))
	}
	if got, want := aheadTaken.Load()-taken, int64(len(ahead)-1); got != want {
		t.Errorf("%d pages taken from a decoding ahead, want %d (every page after the first)", got, want)
	}
	aheadRunning.Wait()
	noAhead = true
	dropKeptInspections()
	plain, _ := listing()
	noAhead = false
	if !reflect.DeepEqual(ahead, plain) {
		for i := range min(len(ahead), len(plain)) {
			if !reflect.DeepEqual(ahead[i], plain[i]) {
				t.Fatalf("page %d decoded ahead differs from the page decoded in its call", i)
			}
		}
		t.Fatalf("%d pages decoded ahead, %d without", len(ahead), len(plain))
	}

	// Page 1 is served and page 2 decoded ahead; then the file is
	// rewritten under the same size and modification time.
	mustCall(t, r, "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 2000, "cursor": cursors[0]})
	aheadRunning.Wait()
	keptInspections.Lock()
	held := len(keptInspections.list) > 0 && keptInspections.list[len(keptInspections.list)-1].ahead != nil
	keptInspections.Unlock()
	if !held {
		t.Fatal("no page was decoded ahead of page 2")
	}
	changed := append([]byte(nil), orig...)
	changed[text.Offset+text.Size/2] ^= 0xff
	if err := os.WriteFile(p, changed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * racyWindow)
	_, err := call(t, r, "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 2000, "cursor": cursors[1]})
	if contract.CodeOf(err) != contract.CodeInputChanged {
		t.Errorf("page 2 of the rewritten file: %v, want INPUT_CHANGED", err)
	}
}
