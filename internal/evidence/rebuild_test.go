package evidence

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// listPages walks every page of a query (page size n) and
// returns the rows and the summed unreadable count.
func listPages(t *testing.T, s *Store, f Filter, n int) ([]Summary, int) {
	t.Helper()
	var rows []Summary
	unreadable := 0
	cursor := ""
	for {
		p, err := s.Query(context.Background(), f, n, cursor)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		if p.Offset != int64(len(rows)) {
			t.Fatalf("page offset %d after %d rows", p.Offset, len(rows))
		}
		rows = append(rows, p.Rows...)
		unreadable += p.Unreadable
		if p.NextCursor == "" {
			return rows, unreadable
		}
		cursor = p.NextCursor
	}
}

// TestRebuildListsEveryManifest: whatever happens to manifests and to the
// index, every manifest file stays listed; the unreadable ones as rows
// with a problem, counted, and the listing, the counts and the record
// count are identical before and after the index is rebuilt or lost.
func TestRebuildListsEveryManifest(t *testing.T) {
	type damage func(t *testing.T, s *Store, m *Manifest)
	write := func(body func(old []byte) []byte) damage {
		return func(t *testing.T, s *Store, m *Manifest) {
			p := s.manifestPath(m.EvidenceID)
			old, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, body(old), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	manifests := []struct {
		name    string
		damage  damage
		facts   bool // the damaged record's facts stay known (its manifest parses)
		problem string
	}{
		{"corrupt manifest", write(func([]byte) []byte { return []byte("{bad") }), false, "not valid JSON"},
		{"id mismatch", func(t *testing.T, s *Store, m *Manifest) {
			other := m.EvidenceID[:len(m.EvidenceID)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(m.EvidenceID, "a")]
			write(func(old []byte) []byte {
				return []byte(strings.Replace(string(old), `"evidence_id": "`+m.EvidenceID+`"`, `"evidence_id": "`+other+`"`, 1))
			})(t, s, m)
		}, false, "not a version 1 manifest for that id"},
		{"truncated manifest", write(func(old []byte) []byte { return old[:len(old)/2] }), false, "not valid JSON"},
		{"zero-length manifest", write(func([]byte) []byte { return nil }), false, "not valid JSON"},
		{"missing blob", func(t *testing.T, s *Store, m *Manifest) {
			if err := os.Remove(s.objectPath(m.Artifacts[0].SHA256)); err != nil {
				t.Fatal(err)
			}
		}, true, `artifact "source-0" is missing`},
	}
	indexes := []struct {
		name  string
		apply func(t *testing.T, dir string)
	}{
		{"index garbage", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, indexName), []byte("garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"index deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, indexName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"index zero-length", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, indexName), 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, mc := range manifests {
		for _, ic := range indexes {
			t.Run(mc.name+"/"+ic.name, func(t *testing.T) {
				dir := t.TempDir()
				s, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				ms := publishN(t, s, 6, "op", "text")
				bad := []*Manifest{ms[1], ms[4]}
				for _, m := range bad {
					mc.damage(t, s, m)
				}
				before, unreadBefore := listPages(t, s, Filter{}, 200)
				paged, _ := listPages(t, s, Filter{}, 4)
				if !reflect.DeepEqual(before, paged) {
					t.Fatalf("pages of 4 differ from one page:\n%+v\n%+v", paged, before)
				}
				filteredBefore, _ := listPages(t, s, Filter{Operation: "other"}, 200)
				locBefore, err := s.Location(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				for _, f := range []string{"index.sqlite-wal", "index.sqlite-shm"} {
					os.Remove(filepath.Join(dir, f))
				}
				ic.apply(t, dir)
				s2, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				defer s2.Close()
				after, unreadAfter := listPages(t, s2, Filter{}, 200)
				locAfter, err := s2.Location(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(before, after) || unreadBefore != unreadAfter {
					t.Fatalf("rows differ after the rebuild:\nbefore %+v (unreadable %d)\nafter  %+v (unreadable %d)", before, unreadBefore, after, unreadAfter)
				}
				if locBefore.Records != locAfter.Records || locBefore.Unreadable != locAfter.Unreadable {
					t.Fatalf("location before %+v after %+v", locBefore, locAfter)
				}
				if len(after) != 6 || unreadAfter != 2 || locAfter.Records != 6 || locAfter.Unreadable != 2 {
					t.Fatalf("rows %d unreadable %d; location records %d unreadable %d; want 6, 2", len(after), unreadAfter, locAfter.Records, locAfter.Unreadable)
				}
				// Newest first, every record, the damaged two with their
				// problem and, when the manifest no longer parses, no facts.
				for i, r := range after {
					m := ms[len(ms)-1-i]
					if r.EvidenceID != m.EvidenceID {
						t.Fatalf("row %d is %s, want %s", i, r.EvidenceID, m.EvidenceID)
					}
					if want := m.CreatedAt.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"); r.CreatedAt != want {
						t.Fatalf("%s created_at %q, want %q", r.EvidenceID, r.CreatedAt, want)
					}
					isBad := m == bad[0] || m == bad[1]
					if isBad != (r.Problem != "") || (isBad && !strings.Contains(r.Problem, mc.problem)) {
						t.Fatalf("%s: problem %q (damaged %v, want %q)", r.EvidenceID, r.Problem, isBad, mc.problem)
					}
					known := !isBad || mc.facts
					if known != (r.Operation == "op" && r.Toolset == "perf" && r.SourceCount != nil && r.Formats != nil) {
						t.Fatalf("%s: facts %+v, known %v", r.EvidenceID, r, known)
					}
					if !known && (r.Operation != "" || r.Status != "" || r.SourceCount != nil || r.ArtifactCount != nil || r.TotalBytes != "" || r.Formats != nil) {
						t.Fatalf("%s: unknown facts reported: %+v", r.EvidenceID, r)
					}
				}
				// show answers REPOSITORY_CORRUPT for exactly the rows with a problem.
				for _, m := range ms {
					_, err := s2.Get(m.EvidenceID)
					isBad := m == bad[0] || m == bad[1]
					if isBad != (contract.CodeOf(err) == contract.CodeRepositoryCorrupt) || (!isBad && err != nil) {
						t.Fatalf("get %s: %v", m.EvidenceID, err)
					}
				}
				// A fact filter cannot exclude a record whose facts are unknown.
				filtered, unread := listPages(t, s2, Filter{Operation: "other"}, 200)
				if want := map[bool]int{true: 0, false: 2}[mc.facts]; len(filtered) != want || unread != want || !reflect.DeepEqual(filtered, filteredBefore) {
					t.Fatalf("filter operation=other: %d rows (%d unreadable), want %d; before the rebuild %+v", len(filtered), unread, want, filteredBefore)
				}
				// Every index file, and the set-aside, is owner-only.
				checkPrivate(t, dir)
			})
		}
	}
}

// TestRepairedManifestGetsItsFacts: a manifest restored after it was
// indexed unreadable is listed with its facts again, keeping its place.
func TestRepairedManifestGetsItsFacts(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ms := publishN(t, s, 3, "op", "text")
	p := s.manifestPath(ms[1].EvidenceID)
	good, _ := os.ReadFile(p)
	os.WriteFile(p, []byte("{bad"), 0o600)
	s.Close()
	os.Remove(filepath.Join(dir, indexName))
	os.Remove(filepath.Join(dir, indexName+"-wal"))
	os.Remove(filepath.Join(dir, indexName+"-shm"))
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Reindex(context.Background()); contract.CodeOf(err) != contract.CodeRepositoryCorrupt {
		t.Fatalf("reindex with an unreadable manifest: %v", err)
	}
	rows, unread := listPages(t, s, Filter{}, 200)
	if len(rows) != 3 || unread != 1 || rows[1].Problem == "" || rows[1].Operation != "" {
		t.Fatalf("damaged: %+v", rows)
	}
	os.WriteFile(p, good, 0o600)
	rows, unread = listPages(t, s, Filter{}, 200)
	if len(rows) != 3 || unread != 0 || rows[1].EvidenceID != ms[1].EvidenceID || rows[1].Operation != "op" || rows[1].Problem != "" {
		t.Fatalf("repaired: %+v", rows)
	}
	if rows, _ := listPages(t, s, Filter{Format: "text"}, 200); len(rows) != 3 {
		t.Fatalf("repaired record lost its format: %+v", rows)
	}
	if err := s.Reindex(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// checkPrivate fails when any index file or set-aside under dir is not
// mode 0600.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), indexName) {
			continue
		}
		n++
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is mode %04o, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if n == 0 {
		t.Fatalf("no index file in %s", dir)
	}
}

// TestIndexFilesArePrivate: a new store's index, its -wal and -shm, an
// index an older version left 0644, and a corrupt index set aside are all
// mode 0600, like every other store file.
func TestIndexFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, s, 1, "op", "text")
	for _, f := range []string{"", "-wal", "-shm"} {
		if _, err := os.Lstat(filepath.Join(dir, indexName+f)); err != nil {
			t.Fatalf("%s%s: %v", indexName, f, err)
		}
	}
	checkPrivate(t, dir)
	s.Close()
	for _, f := range []string{"", "-wal", "-shm"} {
		os.Chmod(filepath.Join(dir, indexName+f), 0o644)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir)
	s.Close()
	os.WriteFile(filepath.Join(dir, indexName), []byte("garbage"), 0o644)
	os.Chmod(filepath.Join(dir, indexName), 0o644)
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	asides, _ := filepath.Glob(filepath.Join(dir, indexName+".corrupt-*"))
	if len(asides) == 0 {
		t.Fatal("no set-aside of the garbage index")
	}
	checkPrivate(t, dir)
}

// FuzzIDTime: idTime never panics, accepts only ids that decode to a
// positive time, and returns the time newID encoded.
func FuzzIDTime(f *testing.F) {
	for _, ns := range []int64{1, 1_700_000_000_123_456_789, 1<<63 - 1} {
		f.Add(newID(time.Unix(0, ns)))
	}
	f.Add("ev-")
	f.Add("ev-" + strings.Repeat("a", 26))
	f.Add("ev-" + strings.Repeat("7", 26))
	f.Add("not an id")
	f.Fuzz(func(t *testing.T, id string) {
		tm, ok := idTime(id)
		if ok && tm.UnixNano() <= 0 {
			t.Fatalf("%q: non-positive time %v accepted", id, tm)
		}
		if ok != !tm.IsZero() {
			t.Fatalf("%q: ok %v with time %v", id, ok, tm)
		}
	})
}

// TestIDTimeRoundTrip: the creation time idTime reads back is the one
// newID encoded, to the nanosecond.
func TestIDTimeRoundTrip(t *testing.T) {
	for _, ns := range []int64{1, 1_700_000_000_123_456_789, 1<<63 - 1} {
		want := time.Unix(0, ns).UTC()
		id := newID(want)
		if !ValidID(id) {
			t.Fatalf("newID %q is not a valid id", id)
		}
		if got, ok := idTime(id); !ok || !got.Equal(want) {
			t.Fatalf("%s: idTime %v %v, want %v", id, got, ok, want)
		}
	}
	if _, ok := idTime("ev-" + strings.Repeat("a", 26)); ok {
		t.Fatal("an id encoding time 0 was accepted")
	}
}
