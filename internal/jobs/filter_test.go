package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
)

// TestCollectionFilterRecoversFromTooLarge: a capture over the retained
// budget fails RESULT_TOO_LARGE whose message and details name the
// collection filter terms of its kind; the same collection with a filter
// keeps only matching rows (the rest never encoded or charged) and says so
// in coverage.
func TestCollectionFilterRecoversFromTooLarge(t *testing.T) {
	l := DefaultLimits()
	l.RetainedBytes = 8 << 10
	m, _ := newTest(l)
	s := m.NewSession()
	defer s.Close()
	mixed := func() Spec {
		return Spec{Kind: capture.KindFileUsers, Run: rows(1000, ".log")}
	}
	j, _ := s.Start(mixed())
	j = waitDone(t, s, j.ID)
	if j.State != Failed || j.Err.Code != contract.CodeResultTooLarge {
		t.Fatalf("over-budget job: %+v", j)
	}
	if !strings.Contains(j.Err.Message, "filter (path, extension, owner_name)") || !strings.Contains(j.Err.Message, "not truncated") {
		t.Fatalf("message does not name the collection filter: %q", j.Err.Message)
	}
	if terms, _ := j.Err.Details["filter_terms"].([]string); len(terms) != 3 {
		t.Fatalf("details: %v", j.Err.Details)
	}
	spec := mixed()
	spec.Filter = capture.Filter{Path: "/d/f3"}
	j, _ = s.Start(spec)
	j = waitDone(t, s, j.ID)
	if j.State != Succeeded {
		t.Fatalf("filtered job: %+v", j.Err)
	}
	c, _ := s.Capture(j.CaptureID)
	if len(c.Rows) != 143 { // i%7 == 3 for i < 1000
		t.Fatalf("filtered rows: %d", len(c.Rows))
	}
	for _, r := range c.Rows {
		if r.Path != "/d/f3.log" {
			t.Fatalf("row %q passed the filter", r.Path)
		}
	}
	if c.Coverage["rows_filtered_out"] != 857 || c.Coverage["collection_filter"] != (capture.Filter{Path: "/d/f3"}) {
		t.Fatalf("coverage %v", c.Coverage)
	}
	if _, _, b, _ := s.Usage(); b != c.Bytes || b > l.RetainedBytes {
		t.Fatalf("charged %d, capture %d", b, c.Bytes)
	}
}

// TestViewSelectorsPerKind: selectors that cannot apply to a kind, or a
// blank path, are INVALID_ARGUMENT with the field; an empty selection is
// an empty page ([]), never null; a projected process_info field that was
// not collected keeps the {value}|{unavailable} shape.
func TestViewSelectorsPerKind(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	start := func(kind string, rs ...capture.Row) *Capture {
		j, err := s.Start(Spec{Kind: kind, Run: func(context.Context) (*capture.Capture, error) {
			return &capture.Capture{Kind: kind, Rows: rs, Partial: true, Warnings: []string{"2 fds could not be read"}}, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		j = waitDone(t, s, j.ID)
		if j.State != Succeeded || !j.Partial || len(j.Warnings) != 1 {
			t.Fatalf("job does not carry the capture's partial status: %+v", j)
		}
		c, _ := s.Capture(j.CaptureID)
		return c
	}
	of := start(capture.KindOpenFiles, capture.Row{Path: "/a.log", Fields: []capture.Field{{Key: "path", Value: "/a.log"}}})
	for _, tc := range []struct {
		q     Query
		field string
	}{
		{Query{OwnerName: "sshd"}, "/owner_name"},
		{Query{Path: "   "}, "/path"},
		{Query{Path: "\t"}, "/path"},
		{Query{DistinctPaths: true}, "/distinct_paths"},
	} {
		_, err := s.View(of.ID, tc.q)
		if e := contract.AsError(err); e == nil || e.Code != contract.CodeInvalidArgument || e.Field != tc.field {
			t.Fatalf("%+v: %v", tc.q, err)
		}
	}
	v, err := s.View(of.ID, Query{Path: "nomatch"})
	if err != nil {
		t.Fatal(err)
	}
	rowsOut, _, err := Page(v, 0, 10, 1<<20)
	if err != nil || rowsOut == nil || len(rowsOut) != 0 {
		t.Fatalf("empty page: %v %v", rowsOut, err)
	}
	if b, _ := json.Marshal(rowsOut); string(b) != "[]" {
		t.Fatalf("empty page encodes as %s", b)
	}
	th := start(capture.KindThreads, capture.Row{Owner: "sleep", Fields: []capture.Field{{Key: "tid", Value: 1}}})
	if _, err := s.View(th.ID, Query{Path: "/x"}); contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Fatalf("path on threads: %v", err)
	}
	pi := start(capture.KindProcessInfo, capture.Row{Owner: "sleep", Fields: []capture.Field{{Key: "exe", Value: map[string]any{"value": "/bin/sleep"}}}})
	v, err = s.View(pi.ID, Query{Projection: []string{"cwd", "exe"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s", v.Enc[0]); got != `{"cwd":{"unavailable":"not_requested"},"exe":{"value":"/bin/sleep"}}` {
		t.Fatalf("projection of an uncollected field: %s", got)
	}
}
