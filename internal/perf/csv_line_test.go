package perf

import (
	"encoding/csv"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestCSVErrorLine: the line preview_artifact names for a malformed CSV
// record is encoding/csv's ParseError line over the whole file (read here
// in the same run), on the first page and on a later page, with quoted
// fields spanning lines before and inside the bad record, CRLF line
// ends and a multi-line header.
func TestCSVErrorLine(t *testing.T) {
	tests := []struct {
		name, data string
		pageSize   int
	}{
		{"ragged after two records", "a,b\n1,2\n3,4\n5,6,7\n", 0},
		{"ragged first record", "a,b\n1\n", 0},
		{"quoted newlines before", "a,b\n\"x\ny\",2\n\"p\n\nq\",4\n5,6,7\n", 0},
		{"ragged record spans lines", "a,b\n1,2\n\"m\nn\",2,3\n", 0},
		{"multi-line header", "\"a\nA\",b\n1,2\n3\n", 0},
		{"CRLF", "a,b\r\n1,2\r\n\"x\r\ny\",2\r\n3,4,5\r\n", 0},
		{"bare quote", "a,b\n1,2\n3,x\"y\n", 0},
		{"unterminated quote over lines", "a,b\n1,2\n\"3\n4\n5,6\n", 0},
		{"bad record on a later page", "a,b\n1,2\n\"x\ny\",2\n5,6\n7,8\n9\n", 2},
	}
	e := newEnv(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The reference: encoding/csv over the whole file.
			cr := csv.NewReader(strings.NewReader(tt.data))
			var pe *csv.ParseError
			for {
				if _, err := cr.Read(); err != nil {
					if !errors.As(err, &pe) {
						t.Fatalf("encoding/csv reads it: %v", err)
					}
					break
				}
			}
			path := e.write(fmt.Sprintf("r%d.csv", i), tt.data)
			args := map[string]any{"sources": []any{pathSrc(path)}}
			if tt.pageSize > 0 {
				args["page_size"] = tt.pageSize
			}
			m, code := e.call("preview_artifact", args)
			for code == "" {
				// Follow the pages up to the bad record.
				na, _ := m["next_action"].(map[string]any)
				if na == nil {
					t.Fatalf("no error: %v", m)
				}
				m, code = e.call(na["tool"].(string), na["arguments"])
			}
			if code != contract.CodeDecodeFailed {
				t.Fatalf("code %s %v", code, m["error"])
			}
			er := m["error"].(map[string]any)
			d := er["details"].(map[string]any)
			if d["line"] != float64(pe.StartLine) {
				t.Errorf("line %v, encoding/csv %d (%v); message %s", d["line"], pe.StartLine, pe, er["message"])
			}
			if !strings.Contains(er["message"].(string), fmt.Sprintf("line %d ", pe.StartLine)) {
				t.Errorf("message %s", er["message"])
			}
			if pe.Line != pe.StartLine && d["error_line"] != float64(pe.Line) {
				t.Errorf("error_line %v, encoding/csv %d", d["error_line"], pe.Line)
			}
		})
	}
}
