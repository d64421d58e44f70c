package bin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestPagedHalvesMatchPaged checks pagedHead, rows and pagedTail are
// paged's JSON members in its order, with its types and tags.
func TestPagedHalvesMatchPaged(t *testing.T) {
	var want, got []reflect.StructField
	pt := reflect.TypeOf(paged{})
	for i := 0; i < pt.NumField(); i++ {
		if f := pt.Field(i); f.Tag.Get("json") != "-" {
			want = append(want, f)
		}
	}
	for _, h := range []reflect.Type{reflect.TypeOf(pagedHead{}), nil, reflect.TypeOf(pagedTail{})} {
		if h == nil {
			f, _ := pt.FieldByName("Rows")
			got = append(got, f)
			continue
		}
		for i := 0; i < h.NumField(); i++ {
			got = append(got, h.Field(i))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d members in the halves and rows, paged has %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Type != want[i].Type || got[i].Tag != want[i].Tag {
			t.Errorf("member %d: %s %s %q, paged has %s %s %q", i, got[i].Name, got[i].Type, got[i].Tag, want[i].Name, want[i].Type, want[i].Tag)
		}
	}
}

// TestPagedMarshalMatchesEncodingJSON checks contract.Marshal, which
// copies a page's rows through paged.AppendJSON, writes the bytes
// encoding/json writes for the same result: real pages of real files
// (libc's disassembly, its symbols, strings holding HTML characters,
// U+2028, invalid UTF-8 and control bytes) and pages built by hand.
func TestPagedMarshalMatchesEncodingJSON(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "odd.bin")
	if err := os.WriteFile(odd, []byte("\x00\x00<script>&amp;</script>\x00\x00line\u2028sep\u2029x\x00\x00caf\u00e9 \xff\xfe bad\x00\x00tab\there \"q\" \\b\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	type tc struct {
		tool string
		args map[string]any
	}
	cases := []tc{
		{"search_strings", map[string]any{"path": odd, "min_length": 3}},
		{"disassemble", map[string]any{"path": self, "section": ".text", "max_instructions": 300}},
		{"list_symbols", map[string]any{"path": self, "limit": 200}},
		{"inspect_binary", map[string]any{"path": self}},
	}
	if _, err := os.Stat(libc); err == nil {
		cases = append(cases, tc{"disassemble", map[string]any{"path": libc, "section": ".text", "max_instructions": 5000}},
			tc{"list_symbols", map[string]any{"path": libc}})
	}
	r := registry(t, "")
	for _, c := range cases {
		raw, _ := json.Marshal(c.args)
		res, err := r.Call(context.Background(), c.tool, raw)
		if err != nil {
			t.Fatalf("%s %v: %v", c.tool, c.args, err)
		}
		got, isErr := contract.Marshal(res, nil)
		if isErr {
			t.Fatalf("%s: %s", c.tool, got)
		}
		want, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s %v: contract.Marshal differs from json.Marshal\n got %.300s\nwant %.300s", c.tool, c.args, got, want)
		}
	}
	cur := "tok<&>"
	rowsOf := func(vs ...any) []json.RawMessage {
		out := []json.RawMessage{}
		for _, v := range vs {
			b, _ := json.Marshal(v)
			out = append(out, b)
		}
		return out
	}
	for i, d := range []*paged{
		{Rows: []json.RawMessage{}},
		{Rows: rowsOf("a<b>", map[string]any{"s": "\u2028\xff\x01"}, 3)},
		{Rows: []json.RawMessage{nil, json.RawMessage(`{"a":1}`)}},
		{Rows: []string{"not", "encoded"}},
		{File: &Identity{CallerInputPath: "/x<y>"}, Summary: map[string]any{"rows": nil}, Rows: rowsOf(1, 2), NextCursor: &cur, Extra: map[string]any{"k": "&"}, AnalysisID: "an-1"},
		nil,
	} {
		res := contract.NewResult(Source, time.Unix(1, 5), d)
		res.NextAction = &contract.Action{Tool: "t", Arguments: map[string]any{"cursor": cur}}
		got, _ := contract.Marshal(res, nil)
		want, _ := json.Marshal(res)
		if !bytes.Equal(got, want) {
			t.Errorf("page %d: contract.Marshal differs from json.Marshal\n got %s\nwant %s", i, got, want)
		}
	}
}
