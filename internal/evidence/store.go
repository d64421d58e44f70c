package evidence

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// FormatVersion is the on-disk layout version written in every manifest's
// schema_version.
const FormatVersion = 1

// Artifact roles. An analysis source is a native input an analysis tool can
// replay; outputs and diagnostics are kept for inspection only.
const (
	RoleAnalysisSource = "analysis_source"
	RoleOutput         = "output"
	RoleDiagnostic     = "diagnostic"
)

// Record statuses.
const (
	StatusComplete = "complete"
	StatusPartial  = "partial"
	StatusFailed   = "failed"
)

// EnvDataDir overrides the store location.
const EnvDataDir = "INQUEST_DATA_DIR"

var (
	idPattern   = &lazyRegexp{expr: `^ev-[a-z2-7]{26}$`}
	namePattern = &lazyRegexp{expr: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`}
	hexPattern  = &lazyRegexp{expr: `^[0-9a-f]{64}$`}
	idEncoding  = base32.StdEncoding.WithPadding(base32.NoPadding)
)

// lazyRegexp compiles its expression on first use: the bounded repeats
// above expand to large programs, and compiling them in package init cost
// every inquest command about 0.5 ms of start-up (GODEBUG=inittrace=1).
type lazyRegexp struct {
	once sync.Once
	expr string
	re   *regexp.Regexp
}

func (l *lazyRegexp) MatchString(s string) bool {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re.MatchString(s)
}

// ValidID reports whether id has the evidence id shape "ev-" + 26 lower-case
// base32 characters.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// DefaultDir returns the store directory: $INQUEST_DATA_DIR when set, else
// $XDG_DATA_HOME/inquest/evidence, else $HOME/.local/share/inquest/evidence
// (XDG Base Directory Specification defaults).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDataDir); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "inquest", "evidence"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", contract.Errorf(contract.CodeInternalError, "no evidence directory: set INQUEST_DATA_DIR or XDG_DATA_HOME")
	}
	return filepath.Join(home, ".local", "share", "inquest", "evidence"), nil
}

// ArtifactInput is one artifact to publish. Exactly one of Path and Data is
// set. Name is the logical selector, unique within the record
// ([A-Za-z0-9][A-Za-z0-9._-]{0,63}). When ExpectedSHA256 is set (lower-case
// hex), content read from Path must match it or Publish fails with
// INPUT_CHANGED.
type ArtifactInput struct {
	Name           string
	Role           string
	Format         string
	Producer       string
	Path           string
	Data           []byte
	ExpectedSHA256 string
}

// Artifact is one artifact as recorded in a manifest: its logical name,
// role, format, producer and content identity (SHA-256 hex, size in bytes).
type Artifact struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Format   string `json:"format"`
	Producer string `json:"producer,omitempty"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size_bytes"`
}

// Provenance is host-specific execution context. It is kept in the manifest
// for the full (local CLI) view and omitted from Redacted projections.
type Provenance struct {
	Argv []string `json:"argv,omitempty"`
	// Env holds environment names and values that shaped the result.
	Env map[string]string `json:"environment,omitempty"`
	Cwd string            `json:"cwd,omitempty"`
	// HostPaths maps artifact names to the paths they were read from.
	HostPaths map[string]string `json:"host_paths,omitempty"`
}

// Record is what a toolset publishes: operation identity, ordered artifacts
// (analysis sources in analysis order), the arguments and effective limits
// that produced the result, its coverage and status.
type Record struct {
	Toolset    string
	Operation  string
	Artifacts  []ArtifactInput
	Arguments  map[string]any
	Limits     map[string]any
	Coverage   map[string]any
	Status     string
	Producers  map[string]string
	Provenance Provenance
}

// Toolsets are the values a manifest's toolset takes, the toolset of the
// tool that preserved the record: the query_evidence toolset filter and
// `inquest evidence query --toolset` accept exactly these.
var Toolsets = []string{"perf", "bin", "proc"}

// Manifest is the immutable description of one evidence record, stored as
// DIR/manifests/ID.json. CreatedAt is UTC with nanoseconds. Producers maps
// component names (inquest, go, module paths) to versions.
type Manifest struct {
	SchemaVersion int               `json:"schema_version"`
	EvidenceID    string            `json:"evidence_id"`
	CreatedAt     time.Time         `json:"created_at"`
	Toolset       string            `json:"toolset"`
	Operation     string            `json:"operation"`
	Status        string            `json:"status"`
	Artifacts     []Artifact        `json:"artifacts"`
	Arguments     map[string]any    `json:"arguments"`
	Limits        map[string]any    `json:"limits"`
	Coverage      map[string]any    `json:"coverage"`
	Producers     map[string]string `json:"producers"`
	Provenance    Provenance        `json:"provenance"`
}

// AnalysisSources returns the analysis-source artifacts in analysis order.
func (m *Manifest) AnalysisSources() []Artifact {
	var out []Artifact
	for _, a := range m.Artifacts {
		if a.Role == RoleAnalysisSource {
			out = append(out, a)
		}
	}
	return out
}

// Artifact returns the named artifact.
func (m *Manifest) Artifact(name string) (Artifact, bool) {
	for _, a := range m.Artifacts {
		if a.Name == name {
			return a, true
		}
	}
	return Artifact{}, false
}

// Formats returns the distinct artifact formats, sorted.
func (m *Manifest) Formats() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range m.Artifacts {
		if a.Format != "" && !seen[a.Format] {
			seen[a.Format] = true
			out = append(out, a.Format)
		}
	}
	sort.Strings(out)
	return out
}

// Redacted is the projection returned to MCP clients: the manifest without
// provenance (argv, environment, cwd, host paths).
type Redacted struct {
	SchemaVersion int               `json:"schema_version"`
	EvidenceID    string            `json:"evidence_id"`
	CreatedAt     string            `json:"created_at"`
	Toolset       string            `json:"toolset"`
	Operation     string            `json:"operation"`
	Status        string            `json:"status"`
	Artifacts     []Artifact        `json:"artifacts"`
	Arguments     map[string]any    `json:"arguments"`
	Limits        map[string]any    `json:"limits"`
	Coverage      map[string]any    `json:"coverage"`
	Producers     map[string]string `json:"producers"`
}

// Redacted returns the projection without provenance.
func (m *Manifest) Redacted() Redacted {
	return Redacted{
		SchemaVersion: m.SchemaVersion, EvidenceID: m.EvidenceID,
		CreatedAt: m.CreatedAt.UTC().Format(time.RFC3339Nano),
		Toolset:   m.Toolset, Operation: m.Operation, Status: m.Status,
		Artifacts: m.Artifacts, Arguments: m.Arguments, Limits: m.Limits,
		Coverage: m.Coverage, Producers: m.Producers,
	}
}

// Store is an open evidence store. It is safe for concurrent use by
// goroutines and by several processes (SQLite WAL, busy timeout).
type Store struct {
	dir  string
	fs   *storeFS
	key  []byte
	cont *Continuations
	mu   sync.Mutex // serializes index writes within the process
	// dbmu guards db: operations hold it shared, a rebuild that replaces
	// the index holds it exclusively.
	dbmu sync.RWMutex
	db   *sql.DB
	// gen counts index replacements (guarded by dbmu); rbmu serializes
	// rebuilds.
	gen  uint64
	rbmu sync.Mutex
	// readOnly is set (guarded by dbmu) while db is an in-memory index
	// built from the manifests because the disk is full: reads list and
	// verify every stored record, publishing reopens the index first.
	readOnly bool
}

// OpenDefault opens the store at DefaultDir.
func OpenDefault() (*Store, error) {
	d, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return Open(d)
}

// Open opens (creating when missing) the store rooted at dir. It refuses
// (PERMISSION_DENIED) a directory, or a subdirectory, that is a symbolic
// link, is owned by another user or is writable by group or others; it
// removes the temp files of writers that died (killed mid-publish); it
// opens the index, rebuilding it from the manifests when it is missing or
// corrupt, and indexes every manifest the index lacks (a publisher killed
// between its manifest and its index entry). Errors: RESOURCE_LIMIT (not
// retryable) when the disk is full, REPOSITORY_FORMAT_UNSUPPORTED when
// DIR/format.json names a format version other than FormatVersion, REPOSITORY_CORRUPT when the index can
// be neither opened nor rebuilt, INTERNAL_ERROR for other I/O failures.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, ioErr("the evidence directory is unusable")
	}
	fsys, err := openFS(abs)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(fsys); err != nil {
		fsys.Close()
		return nil, err
	}
	if _, err := fsys.sweep(); err != nil {
		fsys.Close()
		return nil, err
	}
	key, err := loadKey(fsys)
	if err != nil {
		fsys.Close()
		return nil, err
	}
	s := &Store{dir: abs, fs: fsys, key: key, cont: NewContinuations(key)}
	if err := s.openIndex(context.Background()); err != nil {
		fsys.Close()
		return nil, err
	}
	return s, nil
}

// Dir returns the absolute store directory.
func (s *Store) Dir() string { return s.dir }

// Key returns the store's 32-byte HMAC key (for contract.NewCursorCodec).
func (s *Store) Key() []byte { return append([]byte(nil), s.key...) }

// Continuations returns the continuation codec sealed with the store key.
func (s *Store) Continuations() *Continuations { return s.cont }

// Close closes the index and the store directory.
func (s *Store) Close() error {
	s.dbmu.Lock()
	defer s.dbmu.Unlock()
	var err error
	if s.db != nil {
		err = s.db.Close()
		s.db = nil
	}
	s.fs.Close()
	return err
}

// formatName is the file naming the store's format version, written when
// a store is created (and into a store an older inquest created without
// it): {"format_version": N}.
const formatName = "format.json"

// unsupportedFormat is the refusal of a store or manifest written in a
// format version this inquest does not read.
func unsupportedFormat(what string, version int64) *contract.Error {
	return contract.Errorf(contract.CodeRepositoryFormat,
		"%s is in evidence store format version %d; this inquest reads version %d only. It was written by a newer inquest: read it with that version (or set INQUEST_DATA_DIR to another store); nothing was changed", what, version, FormatVersion).
		WithDetail("format_version", version).WithDetail("supported_format_version", FormatVersion)
}

// checkFormat reads DIR/format.json: a version other than FormatVersion
// is REPOSITORY_FORMAT_UNSUPPORTED (before anything in the store is
// touched), a file that does not parse REPOSITORY_CORRUPT. A store
// without the file gets one.
func checkFormat(fsys *storeFS) error {
	b, err := fsys.readFile(formatName)
	if errors.Is(err, fs.ErrNotExist) {
		body, _ := json.Marshal(map[string]int{"format_version": FormatVersion})
		return fsys.writeAtomic(formatName, append(body, '\n'))
	}
	if err != nil {
		return ioFail(fsys.dir, err, "the evidence store's format file cannot be read")
	}
	var f struct {
		Version *int64 `json:"format_version"`
	}
	if json.Unmarshal(b, &f) != nil || f.Version == nil || *f.Version < 1 {
		return corrupt("the evidence store's %s does not name a format version (want {\"format_version\": %d}); if this is an inquest store, write that into it", formatName, FormatVersion).
			WithDetail("directory", fsys.dir).WithDetail("path", filepath.Join(fsys.dir, formatName))
	}
	if *f.Version != FormatVersion {
		return unsupportedFormat("the evidence store "+fsys.dir, *f.Version).WithDetail("directory", fsys.dir)
	}
	return nil
}

func loadKey(fsys *storeFS) ([]byte, error) {
	const name = "cursor.key"
	b, err := fsys.readFile(name)
	if err == nil && len(b) == 32 {
		return b, nil
	}
	if err == nil {
		return nil, contract.Errorf(contract.CodeRepositoryCorrupt, "the evidence store key file cursor.key is malformed (%d bytes, want 32); continuation tokens cannot be issued or resumed. Delete cursor.key in the evidence store directory (inquest evidence location) to generate a new key; outstanding continuations become invalid, evidence records are unaffected", len(b)).WithDetail("key_file", "cursor.key")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, ioFail(fsys.dir, err, "the evidence store key cannot be read")
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, ioErr("no entropy for the evidence store key")
	}
	if err := fsys.writeAtomic(name, key); err != nil {
		return nil, err
	}
	// Another process may have won the race; everyone uses the file.
	if b, err := fsys.readFile(name); err == nil && len(b) == 32 {
		return b, nil
	}
	return key, nil
}

func ioErr(msg string) *contract.Error {
	e := contract.Errorf(contract.CodeInternalError, "%s", msg)
	e.Retryable = true
	return e
}

func corrupt(format string, args ...any) *contract.Error {
	return contract.Errorf(contract.CodeRepositoryCorrupt, format, args...)
}

func (s *Store) objectPath(sum string) string {
	return filepath.Join(s.dir, "objects", "sha256", sum[:2], sum)
}

func (s *Store) manifestPath(id string) string {
	return filepath.Join(s.dir, "manifests", id+".json")
}

// objectRel and manifestRel are the same files relative to the store root.
func objectRel(sum string) string { return "objects/sha256/" + sum[:2] + "/" + sum }

func manifestRel(id string) string { return "manifests/" + id + ".json" }

// putObject copies r into the object store and returns its digest and
// size, and whether it created the object (false: it existed already).
// pending is the publish's marker: each digest is listed there (and
// synced) before the object is reused or renamed into place.
func (s *Store) putObject(ctx context.Context, r io.Reader, pending *tempFile) (sum string, size int64, created bool, err error) {
	sum, size, err = s.copyObject(ctx, r, &created, pending)
	return sum, size, created, err
}

func (s *Store) copyObject(ctx context.Context, r io.Reader, created *bool, pending *tempFile) (string, int64, error) {
	tmp, err := s.fs.createTemp("o-")
	if err != nil {
		return "", 0, err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(faultWriter{tmp}, h), ctxReader{ctx, r}, make([]byte, 256<<10))
	if err != nil {
		tmp.Discard()
		if ce := contract.AsError(err); ce.Code == contract.CodeCancelled || ce.Code == contract.CodeTimeout {
			return "", 0, ce
		}
		if rerr := (readErr{}); errors.As(err, &rerr) {
			return "", 0, contract.Errorf(contract.CodeInputChanged, "an artifact's source could not be read to the end while it was preserved")
		}
		return "", 0, ioFail(s.dir, err, "an artifact could not be copied into the evidence store")
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := tmp.Sync(); err != nil {
		tmp.Discard()
		return "", 0, ioFail(s.dir, err, "the evidence store cannot be synced")
	}
	if _, err := (faultWriter{pending}).Write([]byte(sum + "\n")); err != nil {
		tmp.Discard()
		return "", 0, ioFail(s.dir, err, "the evidence store is not writable")
	}
	if err := pending.Sync(); err != nil {
		tmp.Discard()
		return "", 0, ioFail(s.dir, err, "the evidence store cannot be synced")
	}
	target := objectRel(sum)
	if fi, err := s.fs.root.Lstat(target); err == nil && fi.Mode().IsRegular() && fi.Size() == n {
		tmp.Discard()
		return sum, n, nil // deduplicated
	}
	if err := s.fs.mkdirVerified(path.Dir(target)); err != nil {
		tmp.Discard()
		return "", 0, err
	}
	if err := tmp.Chmod(0o400); err != nil {
		tmp.Discard()
		return "", 0, ioFail(s.dir, err, "the evidence store is not writable")
	}
	if err := tmp.publish(target); err != nil {
		// A rename followed by a failed directory sync leaves the object.
		*created = s.fs.exists(target)
		return sum, n, err
	}
	*created = true
	if testHookObjectPublished != nil {
		testHookObjectPublished(sum)
	}
	return sum, n, nil
}

// readErr marks a failure reading an artifact's source (not the store).
type readErr struct{ err error }

func (e readErr) Error() string { return e.err.Error() }
func (e readErr) Unwrap() error { return e.err }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = readErr{err}
	}
	return n, err
}

func newID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixNano()))
	_, _ = rand.Read(b[8:])
	return "ev-" + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// ProducerVersions returns the versions of inquest and of the modules that
// decode evidence, read from the binary's build information
// (runtime/debug.ReadBuildInfo): "inquest", "go", and each dependency
// module path whose prefix is listed in modules.
func ProducerVersions(modules ...string) map[string]string {
	out := map[string]string{}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	out["go"] = bi.GoVersion
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	out["inquest"] = v
	for _, d := range bi.Deps {
		for _, m := range modules {
			if strings.HasPrefix(d.Path, m) {
				out[d.Path] = d.Version
			}
		}
	}
	return out
}

func validateRecord(rec *Record) error {
	bad := func(msg string) error {
		return contract.Errorf(contract.CodeInvalidArgument, "evidence record: %s", msg)
	}
	if rec.Toolset == "" || rec.Operation == "" {
		return bad("toolset and operation are required")
	}
	switch rec.Status {
	case StatusComplete, StatusPartial, StatusFailed:
	default:
		return bad("status must be complete, partial or failed")
	}
	if len(rec.Artifacts) == 0 {
		return bad("at least one artifact is required")
	}
	seen := map[string]bool{}
	for _, a := range rec.Artifacts {
		if !namePattern.MatchString(a.Name) || seen[a.Name] {
			return bad("artifact names must be unique selectors of 1-64 characters [A-Za-z0-9._-]")
		}
		seen[a.Name] = true
		switch a.Role {
		case RoleAnalysisSource, RoleOutput, RoleDiagnostic:
		default:
			return bad("artifact role must be analysis_source, output or diagnostic")
		}
		if (a.Path == "") == (a.Data == nil) {
			return bad("each artifact needs exactly one of Path and Data")
		}
		if a.ExpectedSHA256 != "" && !hexPattern.MatchString(a.ExpectedSHA256) {
			return bad("expected_sha256 must be 64 lower-case hex digits")
		}
	}
	return nil
}

// Publish copies every artifact into the object store, writes the manifest
// atomically and indexes it. Artifacts are deduplicated by digest. It
// returns the published manifest. Errors: INVALID_ARGUMENT for a malformed
// record, INPUT_CHANGED when an artifact does not match ExpectedSHA256 or a
// source path is missing, INTERNAL_ERROR for I/O failures.
func (s *Store) Publish(ctx context.Context, rec Record) (*Manifest, error) {
	if err := validateRecord(&rec); err != nil {
		return nil, err
	}
	// A store opened on a full disk reads from an in-memory index: write
	// only once the file index opens again.
	if err := s.reopenIfReadOnly(ctx); err != nil {
		return nil, err
	}
	// A publish holds tmp/.lock shared from its first object to its index
	// entry, and lists each object in its pending marker before it renames
	// or reuses it (see sweep.go); a failed one removes the objects it
	// created (reclaim).
	var guard *os.File
	if canSweep {
		g, err := s.fs.lockTmp(false)
		if err != nil {
			return nil, err
		}
		guard = g
	}
	pending, err := s.fs.createTemp(pendingPrefix)
	if err != nil {
		if guard != nil {
			guard.Close()
		}
		return nil, err
	}
	var created []string
	published := false
	defer func() {
		if !published {
			s.reclaim(guard, created)
		} else if guard != nil {
			guard.Close()
		}
		pending.Discard()
	}()
	now := time.Now().UTC()
	m := &Manifest{
		SchemaVersion: FormatVersion, EvidenceID: newID(now), CreatedAt: now,
		Toolset: rec.Toolset, Operation: rec.Operation, Status: rec.Status,
		Arguments: nonNil(rec.Arguments), Limits: nonNil(rec.Limits), Coverage: nonNil(rec.Coverage),
		Producers: map[string]string{}, Provenance: rec.Provenance,
	}
	for k, v := range ProducerVersions() {
		m.Producers[k] = v
	}
	for k, v := range rec.Producers {
		m.Producers[k] = v
	}
	for _, a := range rec.Artifacts {
		var r io.Reader
		if a.Path != "" {
			f, err := os.Open(a.Path)
			if errors.Is(err, fs.ErrPermission) {
				return nil, contract.Errorf(contract.CodePermissionDenied, "artifact %q cannot be read from its source path: permission denied", a.Name).WithDetail("artifact", a.Name)
			}
			if err != nil {
				return nil, contract.Errorf(contract.CodeInputChanged, "artifact %q can no longer be read from its source path", a.Name)
			}
			defer f.Close()
			r = f
		} else {
			r = strings.NewReader(string(a.Data))
		}
		sum, n, isNew, err := s.putObject(ctx, r, pending)
		if isNew && sum != "" {
			created = append(created, sum)
		}
		if err != nil {
			return nil, err
		}
		if a.ExpectedSHA256 != "" && sum != a.ExpectedSHA256 {
			return nil, contract.Errorf(contract.CodeInputChanged, "artifact %q changed since it was analyzed (sha256 differs)", a.Name).
				WithDetail("artifact", a.Name).WithDetail("expected_sha256", a.ExpectedSHA256).WithDetail("actual_sha256", sum)
		}
		m.Artifacts = append(m.Artifacts, Artifact{Name: a.Name, Role: a.Role, Format: a.Format, Producer: a.Producer, SHA256: sum, Size: n})
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "evidence record: arguments, limits or coverage are not JSON-encodable")
	}
	// The manifest is the record; the index entry makes it visible. A
	// record whose index entry cannot be committed is withdrawn (its
	// manifest removed) so nothing is published that queries cannot list;
	// a publisher killed between the two leaves a manifest that the next
	// Open or first query page indexes.
	rel := manifestRel(m.EvidenceID)
	if err := s.fs.writeAtomic(rel, body); err != nil {
		// A rename that happened before a failed directory sync would
		// leave the manifest published: withdraw it (its id is new).
		if s.fs.root.Remove(rel) == nil {
			s.fs.syncDir("manifests")
		}
		return nil, err
	}
	if err := s.index(ctx, m, body); err != nil {
		if s.fs.root.Remove(rel) == nil {
			s.fs.syncDir("manifests")
		}
		return nil, err
	}
	published = true
	return m, nil
}

// reclaim removes the objects (digests) a failed publish created, so
// nothing of it stays in the store. It releases the publish's shared
// tmp/.lock (guard) and takes it exclusively: no other publish is then
// between finding an object present (deduplication) and indexing its
// record. An object that any manifest references is kept; when a manifest
// cannot be read, or without the lock (guard nil), every object is kept
// (an unreferenced object wastes space; removing a referenced one would
// damage a record).
func (s *Store) reclaim(guard *os.File, sums []string) {
	if guard == nil {
		return
	}
	guard.Close()
	if len(sums) == 0 {
		return
	}
	ex, err := s.fs.lockTmp(true)
	if err != nil {
		return
	}
	defer ex.Close()
	items, bad, err := s.scanManifests(nil)
	if err != nil || bad > 0 {
		return
	}
	used := map[string]bool{}
	for _, it := range items {
		for _, a := range it.m.Artifacts {
			used[a.SHA256] = true
		}
	}
	dirs := map[string]bool{}
	for _, sum := range sums {
		if used[sum] {
			continue
		}
		rel := objectRel(sum)
		if s.fs.root.Remove(rel) == nil {
			dirs[path.Dir(rel)] = true
		}
	}
	for d := range dirs {
		s.fs.syncDir(d)
	}
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Get returns the validated manifest of id. Errors: INVALID_ARGUMENT for a
// malformed id, EVIDENCE_NOT_FOUND when no manifest exists,
// REPOSITORY_FORMAT_UNSUPPORTED for a manifest of a newer format version,
// REPOSITORY_CORRUPT when the manifest does not parse, names another id,
// differs from the digest recorded in the index, or references a missing
// object.
func (s *Store) Get(id string) (*Manifest, error) {
	if !ValidID(id) {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "evidence_id must be \"ev-\" followed by 26 base32 characters")
	}
	body, err := s.fs.readFile(manifestRel(id))
	if errors.Is(err, fs.ErrNotExist) {
		// The caller's id is not repeated: the tool sets field to the
		// argument that gave it.
		return nil, contract.Errorf(contract.CodeEvidenceNotFound, "no evidence record with this evidence_id in this store")
	}
	if err != nil {
		return nil, ioFail(s.dir, err, "the evidence manifest cannot be read")
	}
	m, err := parseManifest(body, id)
	if err != nil {
		return nil, err
	}
	if want, ok := s.indexedDigest(id); ok {
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != want {
			return nil, corrupt("the manifest of %s differs from the digest recorded when it was published", id).WithDetail("evidence_id", id)
		}
	}
	for _, a := range m.Artifacts {
		fi, err := s.fs.root.Lstat(objectRel(a.SHA256))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != a.Size {
			return nil, corrupt("artifact %q of %s is missing or has the wrong size", a.Name, id).WithDetail("evidence_id", id).WithDetail("artifact", a.Name)
		}
	}
	return m, nil
}

// maxManifestDepth bounds the nesting of a manifest's JSON (its arguments
// and coverage are returned inside results, which must stay encodable).
const maxManifestDepth = 64

func parseManifest(body []byte, id string) (*Manifest, error) {
	if contract.JSONDepth(body) > maxManifestDepth {
		return nil, corrupt("the manifest of %s nests deeper than %d levels", id, maxManifestDepth).WithDetail("evidence_id", id)
	}
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, corrupt("the manifest of %s is not valid JSON", id).WithDetail("evidence_id", id)
	}
	if m.SchemaVersion > FormatVersion && m.EvidenceID == id {
		return nil, unsupportedFormat("the manifest of "+id, int64(m.SchemaVersion)).WithDetail("evidence_id", id)
	}
	if m.SchemaVersion != FormatVersion || m.EvidenceID != id || m.Operation == "" || m.CreatedAt.IsZero() || len(m.Artifacts) == 0 {
		return nil, corrupt("the manifest of %s is not a version %d manifest for that id", id, FormatVersion).WithDetail("evidence_id", id)
	}
	for _, a := range m.Artifacts {
		if !hexPattern.MatchString(a.SHA256) || a.Size < 0 || !namePattern.MatchString(a.Name) {
			return nil, corrupt("the manifest of %s has a malformed artifact entry", id).WithDetail("evidence_id", id)
		}
	}
	return &m, nil
}

// OpenArtifact opens the named artifact of m for reading. The caller checks
// content against Artifact.SHA256 while reading (VerifyArtifact does it in
// one pass). Errors: EVIDENCE_NOT_FOUND for an unknown name,
// REPOSITORY_CORRUPT for a missing object or a size mismatch.
func (s *Store) OpenArtifact(m *Manifest, name string) (*os.File, Artifact, error) {
	a, ok := m.Artifact(name)
	if !ok {
		return nil, Artifact{}, contract.Errorf(contract.CodeEvidenceNotFound, "evidence %s has no artifact %q", m.EvidenceID, name).WithDetail("evidence_id", m.EvidenceID)
	}
	f, err := s.fs.open(objectRel(a.SHA256))
	if err != nil {
		return nil, a, corrupt("artifact %q of %s is missing", name, m.EvidenceID).WithDetail("evidence_id", m.EvidenceID)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != a.Size {
		f.Close()
		return nil, a, corrupt("artifact %q of %s has the wrong size", name, m.EvidenceID).WithDetail("evidence_id", m.EvidenceID)
	}
	return f, a, nil
}

// ArtifactPath returns the object path of an artifact (for readers that
// need a file name). Same errors as OpenArtifact.
func (s *Store) ArtifactPath(m *Manifest, name string) (string, Artifact, error) {
	f, a, err := s.OpenArtifact(m, name)
	if err != nil {
		return "", a, err
	}
	f.Close()
	return s.objectPath(a.SHA256), a, nil
}

// VerifyArtifact hashes the named artifact and returns REPOSITORY_CORRUPT
// when its SHA-256 differs from the manifest.
func (s *Store) VerifyArtifact(ctx context.Context, m *Manifest, name string) error {
	f, a, err := s.OpenArtifact(m, name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, ctxReader{ctx, f}, make([]byte, 256<<10)); err != nil {
		return contract.AsError(err)
	}
	if hex.EncodeToString(h.Sum(nil)) != a.SHA256 {
		return corrupt("artifact %q of %s does not match its recorded sha256", name, m.EvidenceID).WithDetail("evidence_id", m.EvidenceID)
	}
	return nil
}

// Location describes where the store lives, for `inquest evidence
// location`. Records counts every manifest file indexed (one per record
// stored, readable or not); Unreadable counts those among them whose
// manifest is missing, cannot be read or parsed, names another id,
// references a missing object or differs from its publication digest
// (the rows query_evidence lists with a problem). UnreferencedObjects and
// UnreferencedBytes count the object files no manifest references
// (objects of publishes in flight, or left by a killed or failed one:
// SweepObjects removes them); both are nil (unknown) when a manifest
// cannot be read.
type Location struct {
	Dir        string `json:"dir"`
	Index      string `json:"index"`
	Source     string `json:"source"` // INQUEST_DATA_DIR, XDG_DATA_HOME or HOME
	Records    int64  `json:"records"`
	Unreadable int64  `json:"unreadable_manifests"`
	Snapshot   int64  `json:"snapshot"`
	FormatVer  int    `json:"format_version"`

	UnreferencedObjects *int64 `json:"unreferenced_objects"`
	UnreferencedBytes   *int64 `json:"unreferenced_bytes"`
}

// Location returns the store's paths and record counts. It indexes
// manifests the index lacks first (as the first page of a query does) and
// re-checks every record's manifest, so it reads every manifest once.
func (s *Store) Location(ctx context.Context) (Location, error) {
	src := "HOME"
	if os.Getenv(EnvDataDir) != "" {
		src = EnvDataDir
	} else if os.Getenv("XDG_DATA_HOME") != "" {
		src = "XDG_DATA_HOME"
	}
	l := Location{Dir: s.dir, Index: filepath.Join(s.dir, "index.sqlite"), Source: src, FormatVer: FormatVersion}
	if _, err := s.reconcile(ctx); err != nil {
		return l, err
	}
	type rec struct{ id, digest string }
	var recs []rec
	err := s.withDB(ctx, func(db *sql.DB) error {
		recs = recs[:0]
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq),0) FROM records`).Scan(&l.Snapshot); err != nil {
			return err
		}
		rows, err := db.QueryContext(ctx, `SELECT evidence_id, manifest_sha256 FROM records WHERE seq <= ?`, l.Snapshot)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r rec
			if err := rows.Scan(&r.id, &r.digest); err != nil {
				return err
			}
			recs = append(recs, r)
		}
		return rows.Err()
	})
	if err != nil {
		return l, s.dbFail(err, "the evidence index cannot be read")
	}
	l.Records = int64(len(recs))
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return l, contract.AsError(err)
		}
		if problem, _ := s.checkManifest(r.id, r.digest); problem != "" {
			l.Unreadable++
		}
	}
	n, b, ok, err := s.unreferenced(ctx)
	if err != nil {
		return l, err
	}
	if ok {
		l.UnreferencedObjects, l.UnreferencedBytes = &n, &b
	}
	return l, nil
}
