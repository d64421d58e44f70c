package perf

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"
	u16 "unicode/utf16"

	"github.com/inquest-dev/inquest/internal/contract"
)

func utf16Text(s string) []byte {
	b := []byte{0xff, 0xfe}
	for _, u := range u16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

// TestJSONReadersKeepTheEncodingCause: the JSON preview, Chrome trace and
// JSONL readers skip a UTF-8 byte-order mark and read the rows behind it,
// and name UTF-16, empty and truncated input instead of "malformed near
// byte 0".
func TestJSONReadersKeepTheEncodingCause(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	doc := `[{"a":1},{"a":2}]`
	trace := `[{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"x"}]`
	jsonl := "{\"a\":1}\n{\"a\":2}\n"

	preview := func(b []byte) (int, error) {
		p := &pager{max: 10}
		_, err := traverseJSON(context.Background(), bytes.NewReader(b), p, nil)
		return len(p.rows), err
	}
	scan := func(b []byte) (int, error) {
		n := 0
		_, err := scanTrace(context.Background(), bytes.NewReader(b), 1<<20, func(*traceEvent, int64, int64, bool) error { n++; return nil }, func(*traceEvent) {})
		return n, err
	}
	lines := func(b []byte) (int, error) {
		p := &pager{max: 10}
		rows, _, _, err := decodeJSONL(context.Background(), bufio.NewReader(bytes.NewReader(b)), p, textState{}, 1<<16)
		return len(rows), err
	}
	for _, r := range []struct {
		name string
		read func([]byte) (int, error)
		text string
		rows int
	}{{"json preview", preview, doc, 2}, {"chrome trace", scan, trace, 1}, {"jsonl", lines, jsonl, 2}} {
		t.Run(r.name, func(t *testing.T) {
			if n, err := r.read([]byte(bom + r.text)); err != nil || n != r.rows {
				t.Fatalf("with a UTF-8 BOM: %d rows, %v; want %d rows", n, err, r.rows)
			}
			_, err := r.read(utf16Text(r.text))
			if e := contract.AsError(err); err == nil || e.Code != contract.CodeDecodeFailed || !strings.Contains(e.Message, "UTF-16") {
				t.Errorf("UTF-16: %v, want DECODE_FAILED naming UTF-16", err)
			}
			if r.name == "jsonl" {
				return // an empty JSONL file has no records, and a cut line is a line
			}
			if _, err := r.read(nil); err == nil || !strings.Contains(err.Error(), "empty") {
				t.Errorf("empty: %v, want it named empty", err)
			}
			if _, err := r.read([]byte(bom)); err == nil || !strings.Contains(err.Error(), "empty") {
				t.Errorf("BOM only: %v, want it named empty", err)
			}
		})
	}
	if _, err := preview([]byte(bom + doc[:9])); err == nil || !strings.Contains(err.Error(), "truncated: it ends at byte 12") {
		t.Errorf("truncated JSON after a BOM: %v", err)
	}
}
