package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestPreviewLargeFile previews a 200 MB generated text file: the first
// page stays within bounded memory, continuations reach the last line
// exactly, and a changed file refuses to resume with INPUT_CHANGED.
func TestPreviewLargeFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and pages through a 200 MB file")
	}
	const lineLen = 1000 // bytes per line, LF included
	const lines = 200_000
	p := filepath.Join(t.TempDir(), "big.log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("x", lineLen-1-len("line 0000000 "))
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(w, "line %07d %s\n", i, pad)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, _ := os.Stat(p); fi.Size() != lineLen*lines {
		t.Fatalf("file is %d bytes", fi.Size())
	}

	e := newEnv(t)
	// The session's result budget raised to the hard limit (as `inquest
	// mcp --max-result-bytes` does): pages of up to hardPageBytes.
	e.ctx = tool.WithResultBudget(context.Background(), tool.HardResultBytes)
	pageBudget := hardPageBytes
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := e.reg.Call(context.Background(), "preview_artifact", json.RawMessage(mustJSON(map[string]any{"sources": []any{pathSrc(p)}, "page_size": 10000})))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	e.rt.digests = digestCache{m: map[digestKey]string{}}
	first := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "page_size": 10000})
	// Everything the first page allocated, garbage included (hashing the
	// whole file, reading, the rows): far below the file's 200 MB; the
	// page itself is 10,000 lines of ~1 KB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Fatalf("first page allocated %d MiB", alloc>>20)
	} else {
		t.Logf("first page of a 200 MB file: %.1f MiB allocated in total", float64(alloc)/(1<<20))
	}
	// A first page holding all it covers is complete; more pages follow.
	if first["status"] != "complete" || first["next_action"] == nil || data(first)["page"].(map[string]any)["more"] != true {
		t.Fatalf("first page of 200 MB: status %v, page %v, next_action %v", first["status"], data(first)["page"], first["next_action"])
	}
	// Follow next_action to the end, checking order as we go.
	cur := first
	want := 1
	pages := 0
	var last map[string]any
	var third map[string]any
	for {
		pages++
		if n := len(mustJSON(data(cur)["rows"])); n > pageBudget {
			t.Fatalf("page %d: rows encode to %d bytes, over the %d-byte page budget", pages, n, pageBudget)
		}
		for _, r := range data(cur)["rows"].([]any) {
			row := r.(map[string]any)
			if int(row["line"].(float64)) != want {
				t.Fatalf("page %d: line %v, want %d", pages, row["line"], want)
			}
			want++
			last = row
		}
		na, ok := cur["next_action"].(map[string]any)
		if !ok {
			break
		}
		if pages == 3 {
			third = na
		}
		cur = e.mustCall(na["tool"].(string), na["arguments"])
	}
	if want-1 != lines || last["text"] != fmt.Sprintf("line %07d %s", lines, pad) || last["line_terminated"] != true {
		t.Fatalf("ended at line %d: %v", want-1, last["line"])
	}
	if cur["status"] != "complete" || cur["coverage"].(map[string]any)["rows_total"] != 200000.0 {
		t.Fatalf("last page: %v %v", cur["status"], cur["coverage"])
	}
	// 10,000 lines of ~1 KB pass the page byte budget: pages end early.
	if pages <= lines/10000 {
		t.Fatalf("%d pages: the byte budget did not shorten any page", pages)
	}
	// Change one byte in place: the saved next_page no longer resumes.
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteAt([]byte("L"), 5*lineLen)
	fh.Close()
	if m, code := e.call(third["tool"].(string), third["arguments"]); code != contract.CodeInputChanged || m["error"].(map[string]any)["field"] != "/sources/0" {
		t.Fatalf("changed file: %s %v", code, m["error"])
	}
}
