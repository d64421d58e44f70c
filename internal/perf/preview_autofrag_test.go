package perf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestPreviewAutoFragment: a text line that alone passes the result budget
// is split into fragments automatically, every default page fits the
// budget as delivered, and the pages' rows rebuild the file exactly.
func TestPreviewAutoFragment(t *testing.T) {
	tests := []struct {
		name, content string
	}{
		{"ascii", strings.Repeat(strings.Repeat("x", 100000)+"\n", 5)},
		{"cjk", strings.Repeat(strings.Repeat("漢字", 30000)+"\n", 3) + "short\n" + strings.Repeat("é", 70000)},
		{"control", "head\n" + strings.Repeat("\x01", 40000) + "\ntail\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.write("long.txt", tt.content)
			cur := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}})
			var sb strings.Builder
			pages := 0
			for {
				pages++
				body, _ := json.Marshal(cur)
				if n := tool.DeliveredBytes(body); n > tool.DefaultResultBytes {
					t.Fatalf("page %d delivers %d bytes, over %d", pages, n, tool.DefaultResultBytes)
				}
				for _, r := range data(cur)["rows"].([]any) {
					row := r.(map[string]any)
					text := row["text"].(string)
					if _, frag := row["fragment"]; !frag && row["line_terminated"] == true {
						text += "\n"
					}
					sb.WriteString(text)
				}
				na, _ := cur["next_action"].(map[string]any)
				if na == nil {
					break
				}
				cur = e.mustCall(na["tool"].(string), na["arguments"])
			}
			if sb.String() != tt.content {
				t.Fatalf("pages rebuild %d bytes, want %d (equal: %v)", sb.Len(), len(tt.content), sb.String() == tt.content)
			}
			if pages < 2 {
				t.Fatalf("%d page(s)", pages)
			}
		})
	}
}

// TestPreviewBudgetCoverage: a page the byte budget ends says so in
// coverage.page_ended_by and carries no internal row-budget figure (an
// earlier page_budget_bytes reported the pager's lowered retry budget,
// down to 1).
func TestPreviewBudgetCoverage(t *testing.T) {
	e := newEnv(t)
	p := e.write("lines.txt", strings.Repeat(strings.Repeat("漢", 2000)+"\n", 200))
	m := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}})
	cov := m["coverage"].(map[string]any)
	if cov["page_ended_by"] != "byte_budget" || m["next_action"] == nil {
		t.Fatalf("page not ended by the byte budget: %v", cov)
	}
	if v, ok := cov["page_budget_bytes"]; ok {
		t.Fatalf("coverage.page_budget_bytes = %v", v)
	}
}

// TestPreviewReplacedSourceField: a source replaced between pages is
// INPUT_CHANGED pointing at the source argument (resolve sets it; this
// guards it alongside the decoder errors sourceError points).
func TestPreviewReplacedSourceField(t *testing.T) {
	e := newEnv(t)
	p := e.write("a.txt", "one\ntwo\nthree\nfour\n")
	m := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "page_size": 2})
	na := m["next_action"].(map[string]any)
	tmp := e.write("b.txt", "uno\ndos\ntres\ncuatro\n")
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	m, code := e.call(na["tool"].(string), na["arguments"])
	if code != contract.CodeInputChanged {
		t.Fatalf("code %s %v", code, m["error"])
	}
	if f := m["error"].(map[string]any)["field"]; f == nil || !strings.HasPrefix(f.(string), "/sources/0") {
		t.Fatalf("field %v: %v", f, m["error"])
	}
}

// FuzzTextFragments: textFragments (automatic fragments of one line) makes
// the fragments previewFragments (text_fragment_chars) reads with
// bufio.Reader.ReadRune from the same bytes, and their sizes cover the line.
func FuzzTextFragments(f *testing.F) {
	f.Add([]byte("abc\n"), 3)
	f.Add([]byte("漢字\xffx\n"), 1)
	f.Add([]byte("no newline"), 4)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 1 || n > 4096 {
			return
		}
		// One line: up to and including the first LF.
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		}
		texts, sizes := textFragments(b, n)
		r := bufio.NewReader(bytes.NewReader(b))
		total := 0
		for i, text := range texts {
			var sb strings.Builder
			for chars := 0; chars < n; {
				c, _, err := r.ReadRune()
				if err != nil {
					break
				}
				sb.WriteRune(c)
				chars++
				if c == '\n' {
					break
				}
			}
			if sb.String() != text {
				t.Fatalf("fragment %d: %q, ReadRune gives %q", i, text, sb.String())
			}
			total += sizes[i]
		}
		if _, err := r.ReadByte(); err == nil || total != len(b) {
			t.Fatalf("fragments cover %d of %d bytes", total, len(b))
		}
	})
}
