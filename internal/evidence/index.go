package evidence

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
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
CREATE TABLE IF NOT EXISTS manifest_stat (
	evidence_id TEXT PRIMARY KEY,
	sig         TEXT NOT NULL
) WITHOUT ROWID;
`

const indexName = "index.sqlite"

// sqlite result codes (primary codes, the low byte of extended codes).
const (
	sqliteCorrupt  = 11 // SQLITE_CORRUPT: the database disk image is malformed
	sqliteFull     = 13 // SQLITE_FULL: insertion failed because the disk is full
	sqliteNotADB   = 26 // SQLITE_NOTADB: not a database file
	sqliteIOErr    = 10 // SQLITE_IOERR
	sqliteCantOpen = 14 // SQLITE_CANTOPEN
	sqliteBusy     = 5  // SQLITE_BUSY: another connection holds the lock
	sqliteLocked   = 6  // SQLITE_LOCKED: a table is locked
)

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// errIndexCorrupt marks an index that SQLite opened but whose integrity
// check failed.
var errIndexCorrupt = errors.New("evidence: index integrity check failed")

// isCorruptDB reports whether err says the index file itself is damaged
// (SQLITE_CORRUPT, SQLITE_NOTADB, or a failed quick_check). Only then is
// the index replaced; busy, I/O, permission and disk-space errors never
// set an index aside.
func isCorruptDB(err error) bool {
	if errors.Is(err, errIndexCorrupt) {
		return true
	}
	c := sqliteCode(err)
	return c == sqliteCorrupt || c == sqliteNotADB
}

// dbFail turns an index error into the store's typed error: a full disk
// (SQLITE_FULL, ENOSPC, or an I/O failure while the file system has less
// than 1 MiB free) is RESOURCE_LIMIT naming the directory, not
// retryable; a corrupt index that could not be rebuilt is
// REPOSITORY_CORRUPT with the rebuild path; the rest INTERNAL_ERROR.
func (s *Store) dbFail(err error, msg string) error {
	if ce := (*contract.Error)(nil); errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return contract.AsError(err)
	}
	c := sqliteCode(err)
	if c == sqliteFull || isNoSpace(err) {
		return diskFull(s.dir)
	}
	if c == sqliteIOErr || c == sqliteCantOpen {
		if free, ok := freeBytes(s.dir); ok && free < minFreeBytes {
			return diskFull(s.dir)
		}
	}
	if isCorruptDB(err) {
		return corruptIndex(s.dir)
	}
	if c == sqliteBusy || c == sqliteLocked {
		return indexBusy(s.dir, c)
	}
	return ioFail(s.dir, err, msg)
}

// indexBusyWait is how long a store call waits for another process's
// lock on the index (SQLite busy_timeout) before it answers BUSY, well
// inside a bridge call's 10 s response deadline.
const indexBusyWait = 3 * time.Second

// indexBusy is the error of a store call that waited indexBusyWait for
// the index lock another process (or connection) holds: BUSY, retryable,
// details directory, path (the index), cause (SQLITE_BUSY or
// SQLITE_LOCKED), lock "index" and retry_after_ms.
func indexBusy(dir string, code int) *contract.Error {
	cause := "SQLITE_BUSY"
	if code == sqliteLocked {
		cause = "SQLITE_LOCKED"
	}
	p := filepath.Join(dir, indexName)
	e := contract.Errorf(contract.CodeBusy, "the evidence index %s stayed locked by another process for %v (an inquest preserving or rebuilding in the same store); nothing was changed: retry shortly", p, indexBusyWait).
		WithDetail("directory", dir).WithDetail("path", p).WithDetail("cause", cause).WithDetail("lock", "index").WithDetail("retry_after_ms", 1000)
	e.Retryable = true
	return e
}

// corruptIndex is the error for an index that is damaged and could not be
// rebuilt automatically.
func corruptIndex(dir string) *contract.Error {
	return corrupt("the evidence index %s is damaged and could not be rebuilt from the manifests. The manifests are the record; the index is derived: move index.sqlite (and any index.sqlite-wal, index.sqlite-shm) out of the store directory and repeat the call, and the store rebuilds it",
		filepath.Join(dir, indexName)).WithDetail("directory", dir).WithDetail("rebuild", "remove "+indexName+" from the store directory; the next call rebuilds it from manifests/")
}

// openIndex opens index.sqlite, checks it (PRAGMA quick_check) and
// reconciles it with the manifests. A missing index is created and filled
// from the manifests; a corrupt one is rebuilt beside it and swapped in
// (rebuild). When the disk is full (the index cannot be opened for
// writing or brought up to date) the store reads from an in-memory index
// built from the manifests instead (memoryIndex), so every stored record
// stays listed and readable. Any other failure leaves the index file
// untouched.
func (s *Store) openIndex(ctx context.Context) error {
	err := s.openFileIndex(ctx)
	if isDiskFull(err) {
		return s.memoryIndex(ctx)
	}
	return err
}

// isDiskFull reports whether err is the store's RESOURCE_LIMIT error for a
// full disk (diskFull).
func isDiskFull(err error) bool {
	ce := (*contract.Error)(nil)
	return errors.As(err, &ce) && ce.Code == contract.CodeResourceLimit
}

// ReadOnlyWarning is the warning of a listing made while the disk holding
// the store is full (Page.Warning).
const ReadOnlyWarning = "the disk holding the evidence store is full, so its index cannot be opened for writing: this listing was read from the manifests (every stored record is listed); preserving evidence fails until space is freed"

// memoryIndex replaces the index with an in-memory one filled from every
// manifest (the rebuild path, without writing to disk) and marks the
// store read-only (Store.readOnly). Errors: those of listing the
// manifests.
func (s *Store) memoryIndex(ctx context.Context) error {
	items, _, err := s.scanManifests(nil)
	if err != nil {
		return err
	}
	db, err := openDB(":memory:", true)
	if err == nil {
		// One connection holds the in-memory database: keep it open.
		db.SetMaxIdleConns(1)
		err = insertAll(ctx, db, items)
		if err != nil {
			db.Close()
		}
	}
	if err != nil {
		return s.dbFail(err, "the evidence manifests cannot be indexed in memory")
	}
	s.dbmu.Lock()
	defer s.dbmu.Unlock()
	if s.db != nil {
		s.db.Close()
	}
	s.db, s.readOnly = db, true
	s.gen++
	return nil
}

// reopenIfReadOnly opens the file index again when the store reads from
// an in-memory one (the disk was full): on success the store is writable
// again; while the disk is still full it stays read-only and the error is
// RESOURCE_LIMIT.
func (s *Store) reopenIfReadOnly(ctx context.Context) error {
	s.dbmu.RLock()
	ro := s.readOnly
	s.dbmu.RUnlock()
	if !ro {
		return nil
	}
	return s.openFileIndex(ctx)
}

// openFileIndex opens, checks and reconciles index.sqlite (openIndex
// without the in-memory fallback).
func (s *Store) openFileIndex(ctx context.Context) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := s.fs.root.Lstat(indexName + suffix); err == nil && !fi.Mode().IsRegular() {
			return corrupt("the evidence store's %s is a symbolic link or not a regular file; the store does not open it", indexName+suffix).WithDetail("directory", s.dir)
		}
	}
	// SQLite would create a missing index (and its -wal and -shm, with
	// the index's mode) under the umask: create it 0600 first, and narrow
	// the files of an index created before.
	if err := s.fs.createPrivate(indexName); err != nil {
		return err
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := s.fs.restrict(indexName + suffix); err != nil {
			return err
		}
	}
	db, err := openDB(filepath.Join(s.dir, indexName), false)
	if err == nil {
		err = quickCheck(ctx, db)
		if err != nil {
			db.Close()
		}
	}
	if err != nil {
		if isCorruptDB(err) {
			s.dbmu.RLock()
			gen := s.gen
			s.dbmu.RUnlock()
			return s.rebuild(ctx, gen)
		}
		return s.dbFail(err, "the evidence index cannot be opened")
	}
	s.dbmu.Lock()
	if s.db != nil {
		s.db.Close()
		s.gen++
	}
	s.db, s.readOnly = db, false
	s.dbmu.Unlock()
	if _, err := s.reconcile(ctx); err != nil {
		if isDiskFull(err) {
			return err
		}
		s.dbmu.Lock()
		s.db.Close()
		s.db = nil
		s.dbmu.Unlock()
		return err
	}
	return nil
}

// openDB opens the SQLite file p and creates the schema when missing.
// build selects the settings of a private rebuild file (no journal: a
// crash leaves a temp file the next open sweeps).
func openDB(p string, build bool) (*sql.DB, error) {
	dsn := "file:" + p + "?_pragma=busy_timeout(" + strconv.FormatInt(indexBusyWait.Milliseconds(), 10) + ")&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	if build {
		dsn = "file:" + p + "?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if build {
		db.SetMaxOpenConns(1)
	}
	if _, err := db.Exec(schemaSQL); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// quickCheck runs PRAGMA quick_check (every page and index entry read and
// checked for well-formedness, in time linear in the index size).
func quickCheck(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return err
		}
		if r != "ok" {
			return errIndexCorrupt
		}
	}
	return rows.Err()
}

// withDB runs fn on the index. When fn fails because the index is corrupt
// (it may have been damaged after Open), the index is rebuilt from the
// manifests and fn runs once more.
func (s *Store) withDB(ctx context.Context, fn func(db *sql.DB) error) error {
	for attempt := 0; ; attempt++ {
		s.dbmu.RLock()
		db, gen := s.db, s.gen
		var err error
		if db == nil {
			err = contract.Errorf(contract.CodeInternalError, "the evidence store is closed")
		} else {
			err = fn(db)
		}
		s.dbmu.RUnlock()
		if attempt == 0 && isCorruptDB(err) {
			if rerr := s.rebuild(ctx, gen); rerr != nil {
				return rerr
			}
			continue
		}
		return err
	}
}

// rebuild replaces a corrupt index: it builds a new index from every valid
// manifest in a locked temp file, then moves the damaged index (and its
// -wal and -shm) aside under a unique name (index.sqlite.corrupt-TIME-RAND,
// kept for inspection) and renames the new one into place. Nothing is set
// aside until the replacement is complete; a crash at any point leaves
// either index, or none (the next open rebuilds), and a temp file the
// next open sweeps. seen is the index generation the caller found
// corrupt: when another goroutine has replaced that index meanwhile,
// rebuild does nothing. It does not hold s.mu (callers may), so a publish
// that commits to the old index while the new one is built is indexed
// again by the next reconcile (its manifest is on disk).
func (s *Store) rebuild(ctx context.Context, seen uint64) error {
	s.rbmu.Lock()
	defer s.rbmu.Unlock()
	s.dbmu.RLock()
	current := s.gen
	s.dbmu.RUnlock()
	if current != seen {
		return nil
	}
	items, _, err := s.scanManifests(nil)
	if err != nil {
		return err
	}
	tmp, err := s.fs.createTemp("index-")
	if err != nil {
		return err
	}
	tmpPath := filepath.Join(s.dir, filepath.FromSlash(tmp.rel))
	ndb, err := openDB(tmpPath, true)
	if err == nil {
		err = insertAll(ctx, ndb, items)
		if cerr := ndb.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		tmp.Discard()
		if isCorruptDB(err) {
			return corruptIndex(s.dir)
		}
		return s.dbFail(err, "the evidence index cannot be rebuilt")
	}
	s.dbmu.Lock()
	defer s.dbmu.Unlock()
	if s.db != nil {
		s.db.Close()
		s.db = nil
	}
	aside := indexName + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z") + "-" + randHex(4)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if s.fs.exists(indexName + suffix) {
			if err := s.fs.root.Rename(indexName+suffix, aside+suffix); err != nil {
				tmp.Discard()
				return ioFail(s.dir, err, "the damaged evidence index cannot be set aside")
			}
			// The set-aside keeps the index's records: owner-only, like
			// every store file.
			if err := s.fs.restrict(aside + suffix); err != nil {
				tmp.Discard()
				return err
			}
		}
	}
	if err := tmp.publish(indexName); err != nil {
		return err
	}
	db, err := openDB(filepath.Join(s.dir, indexName), false)
	if err != nil {
		return s.dbFail(err, "the rebuilt evidence index cannot be opened")
	}
	s.db, s.readOnly = db, false
	s.gen++
	return nil
}

// manifestItem is one manifest file found under DIR/manifests: its id
// (from the file name), its creation time, and, when it reads, parses and
// names that id, the manifest and its bytes. m is nil for an unreadable
// or inconsistent manifest, which is still indexed (as a placeholder row,
// manifest_sha256 "") so it is listed with a problem, never hidden.
type manifestItem struct {
	id      string
	created time.Time
	m       *Manifest
	body    []byte
	// sig identifies the file version that was read (statSig, taken
	// before the read); "" when it could not be taken.
	sig string
}

// idTime returns the creation time an evidence id encodes (newID: the
// first 8 of its 16 base32 bytes are the big-endian Unix nanoseconds).
func idTime(id string) (time.Time, bool) {
	b, err := idEncoding.DecodeString(strings.ToUpper(strings.TrimPrefix(id, "ev-")))
	if err != nil || len(b) < 8 {
		return time.Time{}, false
	}
	ns := int64(binary.BigEndian.Uint64(b[:8]))
	if ns <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns).UTC(), true
}

// scanManifests reads the manifest files under DIR/manifests and returns
// one item for every file named ID.json with a valid id, in creation
// order: valid ones with their manifest, unreadable or inconsistent ones
// (bad JSON, another id inside, truncated, not a regular file) without,
// counted in bad. A file whose id is in seen with the same non-empty stat
// signature is skipped unread (it has not changed since it was indexed).
func (s *Store) scanManifests(seen map[string]string) ([]manifestItem, int, error) {
	d, err := s.fs.root.Open("manifests")
	if err != nil {
		return nil, 0, ioFail(s.dir, err, "the evidence manifests cannot be listed")
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, 0, ioFail(s.dir, err, "the evidence manifests cannot be listed")
	}
	var items []manifestItem
	bad := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidID(id) {
			continue
		}
		it := manifestItem{id: id}
		if fi, err := e.Info(); err == nil {
			it.sig = statSig(fi)
		}
		if old, ok := seen[id]; ok && old != "" && old == it.sig {
			continue
		}
		it.created, _ = idTime(id)
		if body, err := s.fs.readFile(manifestRel(id)); err == nil {
			if m, err := parseManifest(body, id); err == nil {
				it.m, it.body, it.created = m, body, m.CreatedAt
			}
		}
		if it.m == nil {
			bad++
		}
		items = append(items, it)
	}
	// Creation order keeps seq monotonic with created_at.
	sort.SliceStable(items, func(i, j int) bool { return items[i].created.Before(items[j].created) })
	return items, bad, nil
}

// statSig is the signature of one version of a manifest file: size,
// modification time in nanoseconds and inode (Lstat). Manifests are
// never rewritten by the store, so a changed signature means the file
// was damaged, replaced or restored since it was indexed.
func statSig(fi fs.FileInfo) string {
	return fmt.Sprintf("%d:%d:%d", fi.Size(), fi.ModTime().UnixNano(), fileIno(fi))
}

func insertAll(ctx context.Context, db *sql.DB, items []manifestItem) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, it := range items {
		var err error
		if it.m != nil {
			err = insertRecord(ctx, tx, it.m, it.body)
		} else {
			err = insertPlaceholder(ctx, tx, it.id, it.created)
		}
		if err == nil {
			err = recordSig(ctx, tx, it)
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

// reconcile brings the index in line with the manifest files (manifests
// are the truth): every file the index lacks is indexed, a valid one with
// its facts, an unreadable or inconsistent one as a placeholder row, so
// no stored record is ever left out of a listing. Every file whose stat
// signature changed since it was indexed (or that has none recorded) is
// re-read: a record whose manifest no longer parses loses its facts (it
// becomes the placeholder an index rebuilt now would hold, so filters
// treat it the same before and after a rebuild), and a placeholder whose
// manifest validates again (restored) gets its facts. Unchanged files
// are not read (one Lstat each). It writes nothing when the index is
// current, so a read on a full disk succeeds when nothing changed and
// fails with the disk error (never a short listing) when something did.
// It returns how many manifests it found unreadable or inconsistent
// among the ones it read.
func (s *Store) reconcile(ctx context.Context) (int, error) {
	type row struct{ placeholder bool }
	known := map[string]row{}
	seen := map[string]string{}
	err := s.withDB(ctx, func(db *sql.DB) error {
		clear(known)
		clear(seen)
		rows, err := db.QueryContext(ctx, `SELECT r.evidence_id, r.manifest_sha256 = '', COALESCE(m.sig, '') FROM records r LEFT JOIN manifest_stat m ON m.evidence_id = r.evidence_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, sig string
			var ph bool
			if err := rows.Scan(&id, &ph, &sig); err != nil {
				return err
			}
			known[id] = row{ph}
			seen[id] = sig
		}
		return rows.Err()
	})
	if err != nil {
		return 0, s.dbFail(err, "the evidence index cannot be read")
	}
	items, bad, err := s.scanManifests(seen)
	if err != nil {
		return bad, err
	}
	if len(items) == 0 {
		return bad, nil
	}
	var added, repaired, demoted, same []manifestItem
	for _, it := range items {
		k, ok := known[it.id]
		switch {
		case !ok:
			added = append(added, it)
		case k.placeholder && it.m != nil:
			repaired = append(repaired, it)
		case !k.placeholder && it.m == nil:
			demoted = append(demoted, it)
		default:
			same = append(same, it)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(added)+len(repaired)+len(demoted) > 0 {
		err = s.withDB(ctx, func(db *sql.DB) error {
			if err := insertAll(ctx, db, added); err != nil {
				return err
			}
			return updateKnown(ctx, db, repaired, demoted)
		})
		if err != nil {
			return bad, s.dbFail(err, "the evidence index cannot be written")
		}
	}
	if len(same) > 0 {
		// Only signatures changed (a file touched, or an index from
		// before signatures were kept): recording them saves re-reading
		// those files next time, and changes no answer, so a failure
		// (a full disk) is not the read's failure; they are re-read and
		// recorded next time.
		_ = s.withDB(ctx, func(db *sql.DB) error { return updateKnown(ctx, db, nil, nil, same...) })
	}
	return bad, nil
}

// recordSig records the stat signature of the manifest file version it
// was indexed from.
func recordSig(ctx context.Context, tx *sql.Tx, it manifestItem) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO manifest_stat(evidence_id, sig) VALUES (?,?) ON CONFLICT(evidence_id) DO UPDATE SET sig = excluded.sig`, it.id, it.sig)
	return err
}

// updateKnown rewrites rows whose manifest file changed: repaired
// placeholders get their facts, demoted records (manifest no longer
// parses) lose theirs, and every re-read file's signature is recorded.
// Rows keep their sequence (and so their place in snapshots).
func updateKnown(ctx context.Context, db *sql.DB, repaired, demoted []manifestItem, same ...manifestItem) error {
	if len(repaired)+len(demoted)+len(same) == 0 {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, it := range repaired {
		f := recordFacts(it.m, it.body)
		var seq int64
		err := tx.QueryRowContext(ctx, `UPDATE records SET created_at_ns=?, toolset=?, operation=?, status=?, source_count=?, artifact_count=?, total_bytes=?, formats=?, manifest_sha256=? WHERE evidence_id=? AND manifest_sha256='' RETURNING seq`,
			f.created, f.toolset, f.operation, f.status, f.sources, f.artifacts, f.total, strings.Join(f.formats, ","), f.digest, it.id).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		for _, fm := range f.formats {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO record_formats(format, seq) VALUES (?,?)`, fm, seq); err != nil {
				return err
			}
		}
	}
	for _, it := range demoted {
		var seq int64
		err := tx.QueryRowContext(ctx, `UPDATE records SET toolset='', operation='', status='', source_count=0, artifact_count=0, total_bytes=0, formats='', manifest_sha256='' WHERE evidence_id=? RETURNING seq`, it.id).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM record_formats WHERE seq = ?`, seq); err != nil {
			return err
		}
	}
	for _, list := range [][]manifestItem{repaired, demoted, same} {
		for _, it := range list {
			if err := recordSig(ctx, tx, it); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// indexFault, when set (tests only), is returned by the index commit of
// Publish in place of writing, like a commit that fails on a full disk.
var indexFault error

// index inserts m (whose canonical bytes are body) into the index, with
// the stat signature of its manifest file as published.
func (s *Store) index(ctx context.Context, m *Manifest, body []byte) error {
	sig := ""
	if fi, err := s.fs.root.Lstat(manifestRel(m.EvidenceID)); err == nil {
		sig = statSig(fi)
	}
	s.mu.Lock()
	err := s.withDB(ctx, func(db *sql.DB) error {
		if indexFault != nil {
			return indexFault
		}
		if err := injected(); err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := insertRecord(ctx, tx, m, body); err != nil {
			return err
		}
		if err := recordSig(ctx, tx, manifestItem{id: m.EvidenceID, sig: sig}); err != nil {
			return err
		}
		return tx.Commit()
	})
	s.mu.Unlock()
	if err != nil {
		return s.dbFail(err, "the evidence index cannot be committed")
	}
	return nil
}

// facts are the indexed columns of a valid manifest.
type facts struct {
	created                    int64
	toolset, operation, status string
	sources, artifacts         int
	total                      int64
	formats                    []string
	digest                     string
}

func recordFacts(m *Manifest, body []byte) facts {
	sum := sha256.Sum256(body)
	f := facts{created: m.CreatedAt.UnixNano(), toolset: m.Toolset, operation: m.Operation, status: m.Status,
		sources: len(m.AnalysisSources()), artifacts: len(m.Artifacts), formats: m.Formats(), digest: hex.EncodeToString(sum[:])}
	for _, a := range m.Artifacts {
		f.total += a.Size
	}
	return f
}

func insertRecord(ctx context.Context, tx *sql.Tx, m *Manifest, body []byte) error {
	f := recordFacts(m, body)
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO records(evidence_id, created_at_ns, toolset, operation, status, source_count, artifact_count, total_bytes, formats, manifest_sha256) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		m.EvidenceID, f.created, f.toolset, f.operation, f.status, f.sources, f.artifacts, f.total, strings.Join(f.formats, ","), f.digest)
	if err != nil {
		return err
	}
	seq, err := res.LastInsertId()
	if n, _ := res.RowsAffected(); err != nil || n == 0 {
		return nil // already indexed
	}
	for _, fm := range f.formats {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO record_formats(format, seq) VALUES (?,?)`, fm, seq); err != nil {
			return err
		}
	}
	return nil
}

// insertPlaceholder indexes the manifest file of id that cannot be read,
// parsed or names another id: a row with manifest_sha256 "" and no facts
// (created_at_ns from the id, 0 when the id encodes none), so the record
// is listed with its problem and counted, never left out.
func insertPlaceholder(ctx context.Context, tx *sql.Tx, id string, created time.Time) error {
	var ns int64
	if !created.IsZero() {
		ns = created.UnixNano()
	}
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO records(evidence_id, created_at_ns, toolset, operation, status, source_count, artifact_count, total_bytes, formats, manifest_sha256) VALUES (?,?,'','','',0,0,0,'','')`, id, ns)
	return err
}

func (s *Store) indexedDigest(id string) (string, bool) {
	var d string
	err := s.withDB(context.Background(), func(db *sql.DB) error {
		return db.QueryRow(`SELECT manifest_sha256 FROM records WHERE evidence_id = ?`, id).Scan(&d)
	})
	return d, err == nil
}

// Reindex indexes every manifest file under DIR/manifests that the index
// does not hold, in creation order (Open and the first page of every
// Query do the same): valid ones with their facts, unreadable or
// inconsistent ones as rows without facts that queries list with a
// problem. When any indexed manifest cannot be read or parsed it returns
// REPOSITORY_CORRUPT with details.corrupt_manifests (their count) after
// indexing everything.
func (s *Store) Reindex(ctx context.Context) error {
	if _, err := s.reconcile(ctx); err != nil {
		return err
	}
	var bad int
	err := s.withDB(ctx, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT COUNT(*) FROM records WHERE manifest_sha256 = ''`).Scan(&bad)
	})
	if err != nil {
		return s.dbFail(err, "the evidence index cannot be read")
	}
	if bad > 0 {
		return corrupt("%d manifests cannot be read or parsed; they are indexed without their facts and listed with a problem", bad).WithDetail("corrupt_manifests", bad)
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

// Summary is one manifest row of a query page. Fields whose value is
// unknown (a manifest that cannot be read) are absent, never zero.
type Summary struct {
	EvidenceID    string   `json:"evidence_id"`
	CreatedAt     string   `json:"created_at"`
	Toolset       string   `json:"toolset,omitempty"`
	Operation     string   `json:"operation,omitempty"`
	Status        string   `json:"status,omitempty"`
	Formats       []string `json:"formats,omitzero"`
	SourceCount   *int     `json:"source_count,omitempty"`
	ArtifactCount *int     `json:"artifact_count,omitempty"`
	TotalBytes    string   `json:"total_bytes,omitempty"`
	// Problem is set when the record's manifest file is missing, cannot
	// be read or parsed, names another id, references an object that is
	// missing or has the wrong size, or no longer matches the digest
	// recorded at publication (show and inspect_evidence then answer
	// REPOSITORY_CORRUPT). When the manifest cannot be read or parsed, or
	// names another id, the record's facts are unknown: only evidence_id,
	// created_at (from the time the id encodes) and problem are set. When
	// it parses, the facts are the ones indexed from it.
	Problem string `json:"problem,omitempty"`
}

// Page is one page of Query results. NextCursor is "" on the last page.
// Snapshot is the highest record sequence visible to this query (records
// published after the first page are not returned by its continuation).
type Page struct {
	Rows       []Summary `json:"rows"`
	NextCursor string    `json:"next_cursor"`
	Snapshot   int64     `json:"snapshot"`
	// Offset is the number of manifests listed before this page (0 on
	// the first page; carried in the cursor).
	Offset int64 `json:"offset"`
	// Unreadable counts the rows of this page whose manifest failed its
	// check (Summary.Problem set).
	Unreadable int `json:"unreadable"`
	// Warning is ReadOnlyWarning when the disk holding the store is full
	// and the page was read from the manifests, else "".
	Warning string `json:"warning,omitempty"`
}

// MaxPageSize bounds Query's page size (1-200 manifests; docs/perf.md, "Evidence").
const MaxPageSize = 200

type queryPos struct {
	CreatedNS int64 `json:"c"`
	Seq       int64 `json:"q"`
	// Listed is the number of manifests listed before the position.
	Listed int64 `json:"n,omitempty"`
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
		// A first page lists every manifest on disk: index the ones a
		// killed publisher left unindexed first. On a full disk the
		// listing comes from the manifests (memoryIndex).
		if err := s.reopenIfReadOnly(ctx); err != nil && !isDiskFull(err) {
			return nil, err
		}
		if _, err := s.reconcile(ctx); err != nil {
			if !isDiskFull(err) {
				return nil, err
			}
			if err := s.memoryIndex(ctx); err != nil {
				return nil, err
			}
		}
		err := s.withDB(ctx, func(db *sql.DB) error {
			return db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq),0) FROM records`).Scan(&snapshot)
		})
		if err != nil {
			return nil, s.dbFail(err, "the evidence index cannot be read")
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
		where = append(where, "(r.operation = ? OR r.manifest_sha256 = '')")
		args = append(args, f.Operation)
	}
	if f.Toolset != "" {
		where = append(where, "(r.toolset = ? OR r.manifest_sha256 = '')")
		args = append(args, f.Toolset)
	}
	if f.Format != "" {
		where = append(where, "(EXISTS (SELECT 1 FROM record_formats rf WHERE rf.format = ? AND rf.seq = r.seq) OR r.manifest_sha256 = '')")
		args = append(args, f.Format)
	}
	if pos != nil {
		where = append(where, "(r.created_at_ns < ? OR (r.created_at_ns = ? AND r.seq < ?))")
		args = append(args, pos.CreatedNS, pos.CreatedNS, pos.Seq)
	}
	q := `SELECT r.seq, r.evidence_id, r.created_at_ns, r.toolset, r.operation, r.status, r.formats, r.source_count, r.artifact_count, r.total_bytes, r.manifest_sha256 FROM records r WHERE ` +
		strings.Join(where, " AND ") + ` ORDER BY r.created_at_ns DESC, r.seq DESC LIMIT ?`
	args = append(args, pageSize+1)
	var page *Page
	var last queryPos
	more := false
	err := s.withDB(ctx, func(db *sql.DB) error {
		page, more = &Page{Rows: []Summary{}, Snapshot: snapshot}, false
		if s.readOnly { // withDB holds dbmu shared
			page.Warning = ReadOnlyWarning
		}
		if pos != nil {
			page.Offset = pos.Listed
		}
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if len(page.Rows) == pageSize {
				more = true
				break
			}
			var seq, created, total int64
			var sources, artifacts int
			var sm Summary
			var formats, digest string
			if err := rows.Scan(&seq, &sm.EvidenceID, &created, &sm.Toolset, &sm.Operation, &sm.Status, &formats, &sources, &artifacts, &total, &digest); err != nil {
				return err
			}
			problem, m := s.checkManifest(sm.EvidenceID, digest)
			switch {
			case m == nil:
				// Unreadable or inconsistent: its facts are unknown
				// (whatever the index recorded), so the row is the same
				// before and after the index is rebuilt.
				sm = Summary{EvidenceID: sm.EvidenceID}
				if t, ok := idTime(sm.EvidenceID); ok {
					sm.CreatedAt = t.Format(time.RFC3339Nano)
				}
			case digest == "":
				// A placeholder whose manifest validates again.
				f := recordFacts(m, nil)
				sm.CreatedAt = m.CreatedAt.UTC().Format(time.RFC3339Nano)
				sm.Toolset, sm.Operation, sm.Status = f.toolset, f.operation, f.status
				sm.Formats = append([]string{}, f.formats...)
				sm.SourceCount, sm.ArtifactCount = &f.sources, &f.artifacts
				sm.TotalBytes = contract.Int(f.total)
			default:
				sm.CreatedAt = time.Unix(0, created).UTC().Format(time.RFC3339Nano)
				sm.Formats = []string{}
				if formats != "" {
					sm.Formats = strings.Split(formats, ",")
				}
				sm.SourceCount, sm.ArtifactCount = &sources, &artifacts
				sm.TotalBytes = contract.Int(total)
			}
			if problem != "" {
				sm.Problem = problem
				page.Unreadable++
			}
			page.Rows = append(page.Rows, sm)
			last = queryPos{CreatedNS: created, Seq: seq, Listed: page.Offset + int64(len(page.Rows))}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.dbFail(err, "the evidence index cannot be read")
	}
	if more {
		extra, _ := json.Marshal(last)
		page.NextCursor = codec.Encode(contract.Cursor{Scope: "evidence-snapshot:" + contract.Int(snapshot), Query: qh, Offset: snapshot, Extra: extra})
	}
	return page, nil
}

// checkManifest re-reads the manifest of id and returns its problem and
// the parsed manifest. The problem is "" when the manifest reads, parses,
// names id, matches digest (its SHA-256 recorded at publication; "" for a
// placeholder row, which records none) and every artifact's object is
// present with its recorded size (what show and inspect_evidence check
// before they answer). m is nil when the file cannot be read or parsed or
// names another id: the record's facts are then unknown. The checks run
// in an order that does not depend on the index (file, parse, objects
// before the digest), so a record has the same problem before and after
// the index is rebuilt.
func (s *Store) checkManifest(id, digest string) (string, *Manifest) {
	body, err := s.fs.readFile(manifestRel(id))
	if errors.Is(err, fs.ErrNotExist) {
		return "the manifest file " + manifestRel(id) + " is missing", nil
	}
	if err != nil {
		return "the manifest file " + manifestRel(id) + " cannot be read", nil
	}
	m, err := parseManifest(body, id)
	if err != nil {
		return contract.AsError(err).Message + " (file " + manifestRel(id) + ")", nil
	}
	for _, a := range m.Artifacts {
		fi, err := s.fs.root.Lstat(objectRel(a.SHA256))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != a.Size {
			return fmt.Sprintf("artifact %q is missing from the object store or has the wrong size", a.Name), m
		}
	}
	if digest != "" {
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != digest {
			return "the manifest differs from the digest recorded when it was published", m
		}
	}
	return "", m
}
