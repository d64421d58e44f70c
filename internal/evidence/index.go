package evidence

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

const schemaSQL = `
CREATE TABLE IF NOT EXISTS records (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	evidence_id     TEXT NOT NULL UNIQUE,
	created_at_ns   INTEGER NOT NULL,
	toolset         TEXT NOT NULL,
	operation       TEXT NOT NULL,
	status          TEXT NOT NULL,
	source_count    INTEGER NOT NULL,
	artifact_count  INTEGER NOT NULL,
	total_bytes     INTEGER NOT NULL,
	formats         TEXT NOT NULL,
	manifest_sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_created ON records(created_at_ns, seq);
CREATE INDEX IF NOT EXISTS records_operation ON records(operation, created_at_ns, seq);
CREATE TABLE IF NOT EXISTS record_formats (
	format TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	PRIMARY KEY (format, seq)
) WITHOUT ROWID;
`

func (s *Store) openIndex() error {
	p := filepath.Join(s.dir, "index.sqlite")
	_, statErr := os.Stat(p)
	fresh := os.IsNotExist(statErr)
	db, err := openDB(p)
	if err != nil {
		// The index is derived data: set a damaged one aside and rebuild
		// it from the manifests, which are the authority.
		aside := p + ".corrupt-" + time.Now().UTC().Format("20060102T150405")
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Rename(p+suffix, aside+suffix)
		}
		if db, err = openDB(p); err != nil {
			return corrupt("the evidence index cannot be opened or rebuilt")
		}
		fresh = true
	}
	s.db = db
	if fresh {
		return s.Reindex(context.Background())
	}
	return nil
}

func openDB(p string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(schemaSQL); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// index inserts m (whose canonical bytes are body) into the index.
func (s *Store) index(ctx context.Context, m *Manifest, body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return ioErr("the evidence index is busy or unwritable")
	}
	defer tx.Rollback()
	if err := insertRecord(ctx, tx, m, body); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return ioErr("the evidence index cannot be committed")
	}
	return nil
}

func insertRecord(ctx context.Context, tx *sql.Tx, m *Manifest, body []byte) error {
	sum := sha256.Sum256(body)
	var total int64
	for _, a := range m.Artifacts {
		total += a.Size
	}
	formats := m.Formats()
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO records(evidence_id, created_at_ns, toolset, operation, status, source_count, artifact_count, total_bytes, formats, manifest_sha256) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		m.EvidenceID, m.CreatedAt.UnixNano(), m.Toolset, m.Operation, m.Status, len(m.AnalysisSources()), len(m.Artifacts), total, strings.Join(formats, ","), hex.EncodeToString(sum[:]))
	if err != nil {
		return ioErr("the evidence index cannot be written")
	}
	seq, err := res.LastInsertId()
	if n, _ := res.RowsAffected(); err != nil || n == 0 {
		return nil // already indexed
	}
	for _, f := range formats {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO record_formats(format, seq) VALUES (?,?)`, f, seq); err != nil {
			return ioErr("the evidence index cannot be written")
		}
	}
	return nil
}

func (s *Store) indexedDigest(id string) (string, bool) {
	var d string
	if err := s.db.QueryRow(`SELECT manifest_sha256 FROM records WHERE evidence_id = ?`, id).Scan(&d); err != nil {
		return "", false
	}
	return d, true
}

// Reindex adds every valid manifest under DIR/manifests that the index does
// not hold, in creation order. It runs automatically when index.sqlite is
// missing. Manifests that fail validation are skipped and counted in the
// returned error (REPOSITORY_CORRUPT) after the valid ones are indexed.
func (s *Store) Reindex(ctx context.Context) error {
	ents, err := os.ReadDir(filepath.Join(s.dir, "manifests"))
	if err != nil {
		return ioErr("the evidence manifests cannot be listed")
	}
	type item struct {
		m    *Manifest
		body []byte
	}
	var items []item
	bad := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidID(id) {
			continue
		}
		body, err := os.ReadFile(filepath.Join(s.dir, "manifests", e.Name()))
		if err != nil {
			bad++
			continue
		}
		m, err := parseManifest(body, id)
		if err != nil {
			bad++
			continue
		}
		items = append(items, item{m, body})
	}
	// Creation order keeps seq monotonic with created_at.
	sort.SliceStable(items, func(i, j int) bool { return items[i].m.CreatedAt.Before(items[j].m.CreatedAt) })
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return ioErr("the evidence index is busy or unwritable")
	}
	defer tx.Rollback()
	for _, it := range items {
		if err := insertRecord(ctx, tx, it.m, it.body); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return ioErr("the evidence index cannot be committed")
	}
	if bad > 0 {
		return corrupt("%d manifests failed validation and were not indexed", bad).WithDetail("corrupt_manifests", bad)
	}
	return nil
}

// Filter selects records for Query. Zero fields do not filter. Created
// bounds are inclusive (created_at >= CreatedFrom, created_at <= CreatedTo).
// Format matches any artifact format of the record.
type Filter struct {
	CreatedFrom time.Time
	CreatedTo   time.Time
	Operation   string
	Toolset     string
	Format      string
}

// Summary is one manifest row of a query page.
type Summary struct {
	EvidenceID    string   `json:"evidence_id"`
	CreatedAt     string   `json:"created_at"`
	Toolset       string   `json:"toolset"`
	Operation     string   `json:"operation"`
	Status        string   `json:"status"`
	Formats       []string `json:"formats"`
	SourceCount   int      `json:"source_count"`
	ArtifactCount int      `json:"artifact_count"`
	TotalBytes    string   `json:"total_bytes"`
	// Problem is set when the record's manifest file can no longer be read,
	// parsed, or no longer matches the digest recorded at publication: the
	// indexed facts above are then unverified (REPOSITORY_CORRUPT on show
	// and inspect_evidence).
	Problem string `json:"problem,omitempty"`
}

// Page is one page of Query results. NextCursor is "" on the last page.
// Snapshot is the highest record sequence visible to this query (records
// published after the first page are not returned by its continuation).
type Page struct {
	Rows       []Summary `json:"rows"`
	NextCursor string    `json:"next_cursor"`
	Snapshot   int64     `json:"snapshot"`
	// Unreadable counts the rows of this page whose manifest failed its
	// check (Summary.Problem set).
	Unreadable int `json:"unreadable"`
}

// MaxPageSize bounds Query's page size (seed 003: 1-200 manifests).
const MaxPageSize = 200

type queryPos struct {
	CreatedNS int64 `json:"c"`
	Seq       int64 `json:"q"`
}

// Query returns manifests newest first (created_at, then sequence,
// descending). cursor is "" for the first page, else a NextCursor from a
// previous page with the same filter and page size; anything else is
// CURSOR_INVALID. pageSize must be 1..200 (INVALID_ARGUMENT otherwise).
func (s *Store) Query(ctx context.Context, f Filter, pageSize int, cursor string) (*Page, error) {
	if pageSize < 1 || pageSize > MaxPageSize {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "page_size must be 1..200").WithDetail("field", "page_size")
	}
	if !f.CreatedFrom.IsZero() && !f.CreatedTo.IsZero() && f.CreatedTo.Before(f.CreatedFrom) {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "created_to precedes created_from")
	}
	fq, _ := json.Marshal(map[string]any{"from": f.CreatedFrom.UnixNano(), "fromz": f.CreatedFrom.IsZero(), "to": f.CreatedTo.UnixNano(), "toz": f.CreatedTo.IsZero(), "op": f.Operation, "ts": f.Toolset, "fmt": f.Format, "n": pageSize})
	qh := contract.HashQuery(fq)
	codec := contract.NewCursorCodec(s.key)
	var snapshot int64
	var pos *queryPos
	if cursor != "" {
		cur, err := codec.Decode(cursor)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(cur.Scope, "evidence-snapshot:") {
			return nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor is not an evidence query cursor; restart without a cursor")
		}
		if cur.Query != qh {
			return nil, contract.Errorf(contract.CodeCursorInvalid, "the filters or page size changed since the cursor was issued; repeat them unchanged or restart without a cursor")
		}
		var p queryPos
		if err := json.Unmarshal(cur.Extra, &p); err != nil {
			return nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor is malformed; restart without a cursor")
		}
		pos = &p
		snapshot = cur.Offset
	} else {
		if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq),0) FROM records`).Scan(&snapshot); err != nil {
			return nil, ioErr("the evidence index cannot be read")
		}
	}
	var where []string
	var args []any
	where = append(where, "r.seq <= ?")
	args = append(args, snapshot)
	if !f.CreatedFrom.IsZero() {
		where = append(where, "r.created_at_ns >= ?")
		args = append(args, f.CreatedFrom.UnixNano())
	}
	if !f.CreatedTo.IsZero() {
		where = append(where, "r.created_at_ns <= ?")
		args = append(args, f.CreatedTo.UnixNano())
	}
	if f.Operation != "" {
		where = append(where, "r.operation = ?")
		args = append(args, f.Operation)
	}
	if f.Toolset != "" {
		where = append(where, "r.toolset = ?")
		args = append(args, f.Toolset)
	}
	if f.Format != "" {
		where = append(where, "EXISTS (SELECT 1 FROM record_formats rf WHERE rf.format = ? AND rf.seq = r.seq)")
		args = append(args, f.Format)
	}
	if pos != nil {
		where = append(where, "(r.created_at_ns < ? OR (r.created_at_ns = ? AND r.seq < ?))")
		args = append(args, pos.CreatedNS, pos.CreatedNS, pos.Seq)
	}
	q := `SELECT r.seq, r.evidence_id, r.created_at_ns, r.toolset, r.operation, r.status, r.formats, r.source_count, r.artifact_count, r.total_bytes, r.manifest_sha256 FROM records r WHERE ` +
		strings.Join(where, " AND ") + ` ORDER BY r.created_at_ns DESC, r.seq DESC LIMIT ?`
	args = append(args, pageSize+1)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, contract.AsError(ioErr("the evidence index cannot be read"))
	}
	defer rows.Close()
	page := &Page{Rows: []Summary{}, Snapshot: snapshot}
	var last queryPos
	more := false
	for rows.Next() {
		if len(page.Rows) == pageSize {
			more = true
			break
		}
		var seq, created, total int64
		var sm Summary
		var formats, digest string
		if err := rows.Scan(&seq, &sm.EvidenceID, &created, &sm.Toolset, &sm.Operation, &sm.Status, &formats, &sm.SourceCount, &sm.ArtifactCount, &total, &digest); err != nil {
			return nil, corrupt("the evidence index has a malformed row")
		}
		if problem := s.checkManifest(sm.EvidenceID, digest); problem != "" {
			sm.Problem = problem
			page.Unreadable++
		}
		sm.CreatedAt = time.Unix(0, created).UTC().Format(time.RFC3339Nano)
		sm.Formats = []string{}
		if formats != "" {
			sm.Formats = strings.Split(formats, ",")
		}
		sm.TotalBytes = contract.Int(total)
		page.Rows = append(page.Rows, sm)
		last = queryPos{CreatedNS: created, Seq: seq}
	}
	if err := rows.Err(); err != nil {
		return nil, ioErr("the evidence index cannot be read")
	}
	if more {
		extra, _ := json.Marshal(last)
		page.NextCursor = codec.Encode(contract.Cursor{Scope: "evidence-snapshot:" + contract.Int(snapshot), Query: qh, Offset: snapshot, Extra: extra})
	}
	return page, nil
}

// checkManifest re-reads the manifest of id and returns "" when it parses
// and matches digest (its SHA-256 recorded at publication), else a short
// description of the problem.
func (s *Store) checkManifest(id, digest string) string {
	body, err := os.ReadFile(s.manifestPath(id))
	if err != nil {
		return "the manifest file cannot be read"
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != digest {
		return "the manifest differs from the digest recorded when it was published"
	}
	if _, err := parseManifest(body, id); err != nil {
		return contract.AsError(err).Message
	}
	return ""
}
