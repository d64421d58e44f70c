package perf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/tool"
)

// recordInput is a file preview_artifact reads and the exact bytes of its
// records, by record id (JSON entry index or key, JSONL/CSV record).
type recordInput struct {
	name, file string
	records    []string // raw bytes of each record, in order
	id         func(row map[string]any) string
	big        []int // records that pass the default budget
}

func recordInputs() []recordInput {
	// A JSON document of about 1 MB: a root array whose element 1 is an
	// object of many strings with escapes and multi-byte characters.
	var obj strings.Builder
	obj.WriteString("{")
	for i := 0; obj.Len() < 1000000; i++ {
		if i > 0 {
			obj.WriteString(", ")
		}
		fmt.Fprintf(&obj, "%q: \"é漢\\u00e9 <&> \\\"q\\\" %s\"", fmt.Sprint("k", i), strings.Repeat("v", 200))
	}
	obj.WriteString("}")
	arr := []string{`{"a": 1}`, obj.String(), `[1, 2, 3]`, `"tail"`}
	jsonDoc := "[\n  " + strings.Join(arr, ",\n  ") + "\n]\n"
	// A root object whose field and section element are 330 KB strings.
	field := `"` + strings.Repeat("漢字 x\\n", 30000) + `"`
	objDoc := `{"first": 1, "big": ` + field + `, "list": [true, ` + field + `], "last": null}`
	// JSONL whose 3rd line is 500 KB.
	var lines []string
	for i := 0; i < 5; i++ {
		lines = append(lines, fmt.Sprintf(`{"i": %d}`, i))
	}
	lines[2] = `{"i": 2, "s": "` + strings.Repeat("abc\\t", 125000) + `"}`
	// CSV whose 2nd data row has a 300 KB cell (quoted, with quotes and a
	// line break inside).
	cell := `"` + strings.Repeat(`x""y`+"\n", 60000) + `"`
	csvRecs := []string{"1,a", "2," + cell, "3,c"}
	byRecord := func(row map[string]any) string { return fmt.Sprint(row["record"]) }
	return []recordInput{
		{"json-array", jsonDoc, arr, func(row map[string]any) string { return fmt.Sprint(row["index"]) }, []int{1}},
		{"json-object", objDoc, []string{"1", field, "true", field, "null"}, func(row map[string]any) string {
			if row["kind"] == "section" {
				return fmt.Sprint(row["section"], row["index"])
			}
			return fmt.Sprint(row["key"])
		}, []int{1, 3}},
		{"json-first", "\ufeff[" + field + ",2]", []string{field, "2"}, func(row map[string]any) string { return fmt.Sprint(row["index"]) }, []int{0}},
		{"json-scalar", " " + field + "\n", []string{field}, func(row map[string]any) string { return fmt.Sprint(row["kind"]) }, []int{0}},
		{"jsonl", strings.Join(lines, "\n") + "\n", lines, byRecord, []int{2}},
		{"csv", "n,s\r\n" + strings.Join(csvRecs, "\r\n") + "\r\n", csvRecs, byRecord, []int{1}},
	}
}

func (in recordInput) ids() []string {
	switch in.name {
	case "json-array":
		return []string{"0", "1", "2", "3"}
	case "json-object":
		return []string{"first", "big", "list0", "list1", "last"}
	case "json-first":
		return []string{"0", "1"}
	case "json-scalar":
		return []string{"value"}
	}
	var ids []string
	for i := range in.records {
		ids = append(ids, strconv.Itoa(i))
	}
	return ids
}

// TestPreviewRecordFragments: a JSON entry, JSONL record or CSV record
// whose row alone passes the page's byte budget is delivered as ordered
// fragments: at 16 KiB and at the default budget every page fits, the
// fragments concatenate to the record's exact bytes (bytes_total and
// sha256 agree), every record is reached once, and the warning's
// --max-result-bytes delivers the record whole.
func TestPreviewRecordFragments(t *testing.T) {
	for _, in := range recordInputs() {
		for _, budget := range []int{16 << 10, tool.DefaultResultBytes} {
			t.Run(fmt.Sprintf("%s/%d", in.name, budget), func(t *testing.T) {
				e := newEnv(t)
				e.ctx = tool.WithResultBudget(context.Background(), budget)
				format := map[string]string{"json-array": "json", "json-object": "json", "json-first": "json", "json-scalar": "json", "jsonl": "jsonl", "csv": "csv"}[in.name]
				p := e.write("in."+format, in.file)
				cur := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p, format)}})
				ids := in.ids()
				next := 0 // index into ids of the next record expected
				var frag bytes.Buffer
				fragNext := 0
				pages := 0
				wholeBudget := 0
				for {
					pages++
					body, _ := json.Marshal(cur)
					if n := tool.DeliveredBytes(body); n > budget {
						t.Fatalf("page %d delivers %d bytes, over %d", pages, n, budget)
					}
					for _, w := range cur["warnings"].([]any) {
						if m := regexp.MustCompile(`--max-result-bytes (\d+) or more`).FindStringSubmatch(w.(string)); m != nil {
							wholeBudget, _ = strconv.Atoi(m[1])
						}
					}
					for _, r := range data(cur)["rows"].([]any) {
						row := r.(map[string]any)
						if next >= len(ids) || in.id(row) != ids[next] {
							t.Fatalf("page %d: row %v, want record %v", pages, in.id(row), ids[min(next, len(ids)-1)])
						}
						fi, ok := row["fragment"]
						if !ok {
							if fragNext != 0 {
								t.Fatalf("record %s: a whole row inside fragments", ids[next])
							}
							next++
							continue
						}
						if int(fi.(float64)) != fragNext {
							t.Fatalf("record %s: fragment %v, want %d", ids[next], fi, fragNext)
						}
						text := row["text"].(string)
						if !utf8.ValidString(text) {
							t.Fatalf("fragment is not valid UTF-8")
						}
						frag.WriteString(text)
						fragNext++
						if fragNext == int(row["fragments"].(float64)) {
							want := in.records[next]
							got := frag.String()
							if got != want {
								t.Fatalf("record %s: fragments rebuild %d bytes, want %d (equal %v)", ids[next], len(got), len(want), got == want)
							}
							sum := sha256.Sum256([]byte(want))
							if row["sha256"] != hex.EncodeToString(sum[:]) || int(row["bytes_total"].(float64)) != len(want) {
								t.Fatalf("record %s: sha256 %v bytes_total %v", ids[next], row["sha256"], row["bytes_total"])
							}
							if fragNext < 2 {
								t.Fatalf("record %s: %d fragment(s)", ids[next], fragNext)
							}
							frag.Reset()
							fragNext = 0
							next++
						}
					}
					na, _ := cur["next_action"].(map[string]any)
					if na == nil {
						break
					}
					cur = e.mustCall(na["tool"].(string), na["arguments"])
				}
				if next != len(ids) || fragNext != 0 {
					t.Fatalf("reached %d of %d records (inside fragment %d)", next, len(ids), fragNext)
				}
				if cur["status"] != "complete" {
					t.Fatalf("last page status %v: %v", cur["status"], cur["warnings"])
				}
				if wholeBudget == 0 {
					t.Fatalf("no warning names the budget that delivers a record whole")
				}
				// At the budget the warning names, the big records come whole.
				e.ctx = tool.WithResultBudget(context.Background(), wholeBudget)
				rows, _ := e.follow(e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p, format)}}))
				if len(rows) != len(ids) {
					t.Fatalf("at --max-result-bytes %d: %d rows, want %d whole", wholeBudget, len(rows), len(ids))
				}
				for _, r := range rows {
					if _, ok := r.(map[string]any)["fragment"]; ok {
						t.Fatalf("at --max-result-bytes %d a record is still fragmented", wholeBudget)
					}
				}
				t.Logf("%d pages", pages)
			})
		}
	}
}

// FuzzSplitRecord: splitRecord's fragments cover the input in order, cut
// only at rune boundaries, and each is within the limit unless it is one
// rune; a fragment row of that text costs no more than its weight says.
func FuzzSplitRecord(f *testing.F) {
	f.Add([]byte(`{"a": "é漢\u2028<&>"}`), 64)
	f.Add([]byte("x\xff\xfe\"\\\n"), 13)
	f.Add([]byte(""), 100)
	f.Fuzz(func(t *testing.T, b []byte, limit int) {
		if limit < 1 || limit > 1<<20 {
			return
		}
		ends := splitRecord(b, limit)
		start := 0
		for i, end := range ends {
			if end < start || end > len(b) || (end == start && len(b) > 0) {
				t.Fatalf("fragment %d: [%d, %d) of %d", i, start, end, len(b))
			}
			w, runes := 0, 0
			for j := start; j < end; {
				r, size := utf8.DecodeRune(b[j:])
				w += runeWeight(r, size)
				runes++
				j += size
				if j > end {
					t.Fatalf("fragment %d cuts a rune", i)
				}
			}
			if w > limit && runes > 1 {
				t.Fatalf("fragment %d weighs %d, over %d", i, w, limit)
			}
			text := strings.ToValidUTF8(string(b[start:end]), "\uFFFD")
			enc, _ := json.Marshal(text)
			if c := tool.RowCost(enc); 2*c > w+9 { // the quotes weigh 6 (\" in the text block), rounding 3
				t.Fatalf("fragment %d costs %d, weight %d", i, c, w)
			}
			start = end
		}
		if start != len(b) {
			t.Fatalf("fragments end at %d of %d", start, len(b))
		}
	})
}
