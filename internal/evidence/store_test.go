package evidence

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

func publishN(t testing.TB, s *Store, n int, op, format string) []*Manifest {
	t.Helper()
	var out []*Manifest
	for i := 0; i < n; i++ {
		m, err := s.Publish(context.Background(), Record{
			Toolset: "perf", Operation: op, Status: StatusComplete,
			Artifacts: []ArtifactInput{{Name: "source-0", Role: RoleAnalysisSource, Format: format, Data: []byte(strings.Repeat("x", i+1))}},
			Arguments: map[string]any{"i": i},
			Provenance: Provenance{Argv: []string{"secret-argv"}, Cwd: "/secret/cwd",
				HostPaths: map[string]string{"source-0": "/secret/path"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestPublishReopenGet(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(src, []byte("hello\n"), 0o600)
	m, err := s.Publish(context.Background(), Record{
		Toolset: "perf", Operation: "preview_artifact", Status: StatusComplete,
		Artifacts: []ArtifactInput{
			{Name: "source-0", Role: RoleAnalysisSource, Format: "text", Path: src, ExpectedSHA256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"},
			{Name: "dup", Role: RoleOutput, Format: "text", Data: []byte("hello\n")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(m.EvidenceID) || len(m.Artifacts) != 2 || m.Artifacts[0].SHA256 != m.Artifacts[1].SHA256 {
		t.Fatalf("manifest %+v", m)
	}
	if m.Producers["go"] == "" {
		t.Fatal("producer versions missing")
	}
	s.Close()
	// Restart: a new Store on the same directory finds the record.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Get(m.EvidenceID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CreatedAt != m.CreatedAt || got.Artifacts[0] != m.Artifacts[0] {
		t.Fatalf("reopened manifest differs: %+v", got)
	}
	if err := s2.VerifyArtifact(context.Background(), got, "source-0"); err != nil {
		t.Fatal(err)
	}
	red, _ := json.Marshal(got.Redacted())
	if strings.Contains(string(red), "secret") || strings.Contains(string(red), src) {
		t.Fatalf("redacted projection leaks provenance: %s", red)
	}
}

func TestPublishInputChanged(t *testing.T) {
	s, _ := Open(t.TempDir())
	defer s.Close()
	src := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(src, []byte("changed\n"), 0o600)
	_, err := s.Publish(context.Background(), Record{Toolset: "perf", Operation: "x", Status: StatusComplete,
		Artifacts: []ArtifactInput{{Name: "s", Role: RoleAnalysisSource, Path: src, ExpectedSHA256: strings.Repeat("0", 64)}}})
	if contract.CodeOf(err) != contract.CodeInputChanged {
		t.Fatalf("got %v", err)
	}
}

func TestGetErrors(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	defer s.Close()
	ms := publishN(t, s, 3, "op", "text")
	tests := []struct {
		name   string
		mutate func()
		id     string
		want   contract.Code
	}{
		{"malformed id", func() {}, "nope", contract.CodeInvalidArgument},
		{"unknown id", func() {}, "ev-" + strings.Repeat("a", 26), contract.CodeEvidenceNotFound},
		{"manifest not json", func() { os.WriteFile(s.manifestPath(ms[0].EvidenceID), []byte("{"), 0o600) }, ms[0].EvidenceID, contract.CodeRepositoryCorrupt},
		{"manifest edited", func() {
			b, _ := os.ReadFile(s.manifestPath(ms[1].EvidenceID))
			os.WriteFile(s.manifestPath(ms[1].EvidenceID), []byte(strings.Replace(string(b), `"op"`, `"po"`, 1)), 0o600)
		}, ms[1].EvidenceID, contract.CodeRepositoryCorrupt},
		{"object missing", func() { os.Remove(s.objectPath(ms[2].Artifacts[0].SHA256)) }, ms[2].EvidenceID, contract.CodeRepositoryCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.mutate()
			_, err := s.Get(tt.id)
			if contract.CodeOf(err) != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
			if strings.Contains(err.Error(), dir) {
				t.Fatal("error leaks the store path")
			}
		})
	}
}

func TestVerifyDetectsFlippedByte(t *testing.T) {
	s, _ := Open(t.TempDir())
	defer s.Close()
	m := publishN(t, s, 1, "op", "text")[0]
	p := s.objectPath(m.Artifacts[0].SHA256)
	os.Chmod(p, 0o600)
	os.WriteFile(p, []byte("y"), 0o600)
	if err := s.VerifyArtifact(context.Background(), m, "source-0"); contract.CodeOf(err) != contract.CodeRepositoryCorrupt {
		t.Fatalf("got %v", err)
	}
}

func TestQueryPagingSnapshotFilters(t *testing.T) {
	s, _ := Open(t.TempDir())
	defer s.Close()
	ctx := context.Background()
	start := time.Now()
	a := publishN(t, s, 7, "summarize_profile", "pprof")
	b := publishN(t, s, 5, "preview_artifact", "csv")
	var seen []string
	cursor := ""
	for {
		p, err := s.Query(ctx, Filter{}, 3, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Rows {
			seen = append(seen, r.EvidenceID)
		}
		if cursor == "" {
			publishN(t, s, 2, "late", "text") // after the snapshot: invisible to this query
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if len(seen) != 12 || seen[0] != b[4].EvidenceID || seen[11] != a[0].EvidenceID {
		t.Fatalf("paging returned %d rows, first %s", len(seen), seen[0])
	}
	p, _ := s.Query(ctx, Filter{Format: "pprof"}, 200, "")
	if len(p.Rows) != 7 {
		t.Fatalf("format filter: %d", len(p.Rows))
	}
	p, _ = s.Query(ctx, Filter{Operation: "preview_artifact", CreatedFrom: start}, 200, "")
	if len(p.Rows) != 5 || p.Rows[0].Formats[0] != "csv" {
		t.Fatalf("operation filter: %+v", p.Rows)
	}
	p, _ = s.Query(ctx, Filter{CreatedTo: start.Add(-time.Hour)}, 200, "")
	if len(p.Rows) != 0 {
		t.Fatal("created_to filter")
	}
	first, _ := s.Query(ctx, Filter{}, 2, "")
	if _, err := s.Query(ctx, Filter{Operation: "late"}, 2, first.NextCursor); contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("changed filter: %v", err)
	}
	if _, err := s.Query(ctx, Filter{}, 3, first.NextCursor); contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("changed page size: %v", err)
	}
	if _, err := s.Query(ctx, Filter{}, 0, ""); contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Fatal("page size 0 accepted")
	}
}

func TestReindexAfterIndexLoss(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	publishN(t, s, 4, "op", "text")
	s.Close()
	for _, f := range []string{"index.sqlite", "index.sqlite-wal", "index.sqlite-shm"} {
		os.Remove(filepath.Join(dir, f))
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	p, err := s2.Query(context.Background(), Filter{}, 10, "")
	if err != nil || len(p.Rows) != 4 {
		t.Fatalf("reindex: %v %d", err, len(p.Rows))
	}
}

func TestContinuations(t *testing.T) {
	c := NewContinuations([]byte("k"))
	in := []InputIdentity{{SHA256: strings.Repeat("a", 64), Format: "text"}}
	args := json.RawMessage(`{"sources":[{"kind":"path","path":"/x"}],"page_size":10}`)
	tok := c.Issue("preview_artifact", in, args, Position{Row: 10, State: json.RawMessage(`{"b":99}`)})
	// Same bytes through an evidence source resume the same token.
	pos, err := c.Resume(tok, "preview_artifact", in, json.RawMessage(`{"sources":[{"kind":"evidence","evidence_id":"ev-x"}],"page_size":10,"continuation":"t"}`))
	if err != nil || pos.Row != 10 || string(pos.State) != `{"b":99}` {
		t.Fatalf("%v %+v", err, pos)
	}
	changed := []InputIdentity{{SHA256: strings.Repeat("b", 64), Format: "text"}}
	tests := []struct {
		name   string
		tool   string
		inputs []InputIdentity
		args   string
		want   contract.Code
	}{
		{"input changed", "preview_artifact", changed, `{"page_size":10}`, contract.CodeInputChanged},
		{"format changed", "preview_artifact", []InputIdentity{{SHA256: in[0].SHA256, Format: "csv"}}, `{"page_size":10}`, contract.CodeInputChanged},
		{"args changed", "preview_artifact", in, `{"page_size":11}`, contract.CodeCursorInvalid},
		{"other tool", "summarize_profile", in, `{"page_size":10}`, contract.CodeCursorInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Resume(tok, tt.tool, tt.inputs, json.RawMessage(tt.args))
			if contract.CodeOf(err) != tt.want {
				t.Fatalf("got %v want %s", err, tt.want)
			}
		})
	}
}

func FuzzContinuationToken(f *testing.F) {
	c := NewContinuations([]byte("fuzz"))
	in := []InputIdentity{{SHA256: strings.Repeat("a", 64), Format: "text"}}
	args := json.RawMessage(`{"page_size":10}`)
	f.Add(c.Issue("t", in, args, Position{Row: 5}))
	f.Add("")
	f.Add("abc.def")
	f.Fuzz(func(t *testing.T, tok string) {
		pos, err := c.Resume(tok, "t", in, args)
		if err != nil {
			switch contract.CodeOf(err) {
			case contract.CodeCursorInvalid, contract.CodeInputChanged:
				return
			}
			t.Fatalf("unexpected error %v", err)
		}
		if pos.Row < 0 {
			t.Fatalf("negative row accepted")
		}
	})
}

func TestCorruptIndexIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	publishN(t, s, 3, "op", "text")
	s.Close()
	for _, f := range []string{"index.sqlite-wal", "index.sqlite-shm"} {
		os.Remove(filepath.Join(dir, f))
	}
	os.WriteFile(filepath.Join(dir, "index.sqlite"), []byte("this is not a database, just garbage bytes that fill a page"), 0o600)
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	p, err := s2.Query(context.Background(), Filter{}, 10, "")
	if err != nil || len(p.Rows) != 3 {
		t.Fatalf("rebuilt index: %v %v", err, p)
	}
}

// TestQueryReportsUnreadableManifest: a manifest replaced after publication
// is listed with a problem and counted, never silently as complete.
func TestQueryReportsUnreadableManifest(t *testing.T) {
	s, _ := Open(t.TempDir())
	defer s.Close()
	ms := publishN(t, s, 3, "op", "text")
	for i, body := range []string{"garbage", ""} {
		if err := os.WriteFile(s.manifestPath(ms[i].EvidenceID), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.Query(context.Background(), Filter{}, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Unreadable != 2 {
		t.Fatalf("unreadable %d, want 2", p.Unreadable)
	}
	for _, r := range p.Rows {
		bad := r.EvidenceID == ms[0].EvidenceID || r.EvidenceID == ms[1].EvidenceID
		if bad != (r.Problem != "") {
			t.Fatalf("%s: problem %q", r.EvidenceID, r.Problem)
		}
	}
}

// TestDeepManifestIsCorrupt: a manifest nested beyond maxManifestDepth
// (e.g. rewritten before a reindex) is REPOSITORY_CORRUPT, never returned.
func TestDeepManifestIsCorrupt(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
	if _, err := parseManifest([]byte(deep), "ev-x"); contract.CodeOf(err) != contract.CodeRepositoryCorrupt {
		t.Fatalf("got %v", err)
	}
	if d := contract.JSONDepth([]byte(`{"s":"[[[[","a":[{}]}`)); d != 3 {
		t.Fatalf("depth %d, want 3", d)
	}
}
