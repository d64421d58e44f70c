package evidence

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Orphaned objects
//
// An object file is renamed into objects/ before the manifest that
// references it is written, so a publisher killed between the two leaves
// an object no record references. Every publish therefore holds
// tmp/.lock shared from its first object to its index entry and keeps a
// pending marker, tmp/p-RAND (flock-held like every temp file), listing
// the digest of each object before it renames or reuses it. Whoever holds
// tmp/.lock exclusively knows no publish is in flight: an object listed
// only in a dead marker (its writer gone) that no manifest references is
// an orphan of a killed publish, removed by the next Open; any other
// unreferenced object is removed by SweepObjects once it is older than
// the grace period.

// pendingPrefix names the pending markers under DIR/tmp.
const pendingPrefix = "p-"

// DefaultSweepGrace is the grace period of `inquest evidence sweep`: an
// unreferenced object younger than this (by modification time) is kept.
const DefaultSweepGrace = 10 * time.Minute

// sweepLockWait bounds how long SweepObjects waits for in-flight
// publishes to finish (tmp/.lock exclusive) before it answers BUSY.
const sweepLockWait = 30 * time.Second

// testHookObjectPublished, when set (tests only), runs after an object is
// renamed into place and before the manifest that references it is
// written.
var testHookObjectPublished func(sum string)

// SweepReport is what SweepObjects found and did. Objects are files under
// objects/sha256; bytes are their sizes. Unreferenced objects are those no
// manifest references: Removed of them (RemovedBytes) were deleted,
// Recent (RecentBytes) were kept because they are younger than the grace
// period. Nothing is removed when a manifest cannot be read
// (UnreadableManifests > 0), because an object it references cannot be
// told from an orphan; Reason says why nothing was removed then.
type SweepReport struct {
	Objects             int64   `json:"objects"`
	Referenced          int64   `json:"referenced_objects"`
	Removed             int64   `json:"removed_objects"`
	RemovedBytes        int64   `json:"removed_bytes"`
	Recent              int64   `json:"recent_unreferenced_objects"`
	RecentBytes         int64   `json:"recent_unreferenced_bytes"`
	UnreadableManifests int64   `json:"unreadable_manifests"`
	GraceSeconds        float64 `json:"grace_seconds"`
	DryRun              bool    `json:"dry_run"`
	Reason              string  `json:"reason,omitempty"`
}

// objectEntry is one object file found under objects/sha256.
type objectEntry struct {
	sum   string
	size  int64
	mtime time.Time
}

// listObjects returns every object file (objects/sha256/XX/SUM with SUM 64
// lower-case hex digits starting with XX, a regular file). Other entries
// are not the store's and are left alone.
func (s *storeFS) listObjects(ctx context.Context) ([]objectEntry, error) {
	d, err := s.root.Open("objects/sha256")
	if err != nil {
		return nil, ioFail(s.dir, err, "the evidence objects cannot be listed")
	}
	subs, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, ioFail(s.dir, err, "the evidence objects cannot be listed")
	}
	var out []objectEntry
	for _, sub := range subs {
		if err := ctx.Err(); err != nil {
			return nil, contract.AsError(err)
		}
		if !sub.IsDir() || len(sub.Name()) != 2 {
			continue
		}
		sd, err := s.root.Open("objects/sha256/" + sub.Name())
		if err != nil {
			return nil, ioFail(s.dir, err, "the evidence objects cannot be listed")
		}
		ents, err := sd.ReadDir(-1)
		sd.Close()
		if err != nil {
			return nil, ioFail(s.dir, err, "the evidence objects cannot be listed")
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !hexPattern.MatchString(e.Name()) || e.Name()[:2] != sub.Name() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			out = append(out, objectEntry{sum: e.Name(), size: fi.Size(), mtime: fi.ModTime()})
		}
	}
	return out, nil
}

// referenced returns the digests every readable manifest references and
// how many manifest files cannot be read or parsed.
func (s *storeFS) referenced(ctx context.Context) (map[string]bool, int64, error) {
	d, err := s.root.Open("manifests")
	if err != nil {
		return nil, 0, ioFail(s.dir, err, "the evidence manifests cannot be listed")
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, 0, ioFail(s.dir, err, "the evidence manifests cannot be listed")
	}
	used := map[string]bool{}
	var bad int64
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, 0, contract.AsError(err)
		}
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidID(id) {
			continue
		}
		body, err := s.readFile(manifestRel(id))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				bad++
			}
			continue
		}
		m, err := parseManifest(body, id)
		if err != nil {
			bad++
			continue
		}
		for _, a := range m.Artifacts {
			used[a.SHA256] = true
		}
	}
	return used, bad, nil
}

// markerDigests reads the digests a pending marker lists, one per line.
func markerDigests(r io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(io.LimitReader(r, maxManifestBytes))
	for sc.Scan() {
		if l := sc.Text(); hexPattern.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// pendingMarkers reads every pending marker under DIR/tmp. live holds the
// digests of markers whose writer still holds them (a publish in
// flight), dead those of writers that are gone, and deadFiles the dead
// markers' names (relative to the root). The caller holds tmp/.lock
// exclusively.
func (s *storeFS) pendingMarkers() (live, dead map[string]bool, deadFiles []string, err error) {
	d, err := s.root.Open("tmp")
	if err != nil {
		return nil, nil, nil, ioFail(s.dir, err, "the evidence store's tmp directory cannot be read")
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, nil, nil, ioFail(s.dir, err, "the evidence store's tmp directory cannot be read")
	}
	live, dead = map[string]bool{}, map[string]bool{}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), pendingPrefix) || !e.Type().IsRegular() {
			continue
		}
		rel := "tmp/" + e.Name()
		f, err := s.open(rel)
		if err != nil {
			continue
		}
		mine := tryLockFile(f)
		for _, sum := range markerDigests(f) {
			if mine {
				dead[sum] = true
			} else {
				live[sum] = true
			}
		}
		if mine {
			deadFiles = append(deadFiles, rel)
		}
		f.Close()
	}
	return live, dead, deadFiles, nil
}

// removeObjects deletes the objects sums and syncs their directories.
func (s *storeFS) removeObjects(sums []string) {
	dirs := map[string]bool{}
	for _, sum := range sums {
		rel := objectRel(sum)
		if s.root.Remove(rel) == nil {
			dirs[path.Dir(rel)] = true
		}
	}
	for d := range dirs {
		s.syncDir(d)
	}
}

// sweepDeadPublishes removes the objects that dead pending markers list
// and no manifest references (the leftovers of publishes killed between
// an object and its manifest), then the dead markers. The caller holds
// tmp/.lock exclusively, so no publish is in flight. When a manifest
// cannot be read nothing is removed but the markers (an object it
// references cannot be told from an orphan; SweepObjects reports them).
func (s *storeFS) sweepDeadPublishes(ctx context.Context) (removed int64, bytes int64, err error) {
	live, dead, files, err := s.pendingMarkers()
	if err != nil || len(files) == 0 {
		return 0, 0, err
	}
	used, bad, err := s.referenced(ctx)
	if err != nil {
		return 0, 0, err
	}
	if bad == 0 {
		var sums []string
		for sum := range dead {
			if used[sum] || live[sum] {
				continue
			}
			if fi, err := s.root.Lstat(objectRel(sum)); err == nil && fi.Mode().IsRegular() {
				sums = append(sums, sum)
				bytes += fi.Size()
			}
		}
		s.removeObjects(sums)
		removed = int64(len(sums))
	}
	for _, rel := range files {
		s.root.Remove(rel)
	}
	return removed, bytes, nil
}

// lockExclusive takes tmp/.lock exclusively, polling (a publish holds it
// shared for its whole duration) until ctx is done or wait has passed:
// then BUSY (retryable) with details.lock "tmp/.lock".
func (s *storeFS) lockExclusive(ctx context.Context, wait time.Duration) (*os.File, error) {
	if fi, err := s.root.Lstat(lockName); err == nil && !fi.Mode().IsRegular() {
		return nil, corrupt("the evidence store's tmp/.lock is not a regular file")
	}
	f, err := s.root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, ioFail(s.dir, err, "the evidence store lock cannot be opened")
	}
	deadline := time.Now().Add(wait)
	for !tryLockFile(f) {
		if err := ctx.Err(); err != nil {
			f.Close()
			return nil, contract.AsError(err)
		}
		if time.Now().After(deadline) {
			f.Close()
			e := contract.Errorf(contract.CodeBusy, "the evidence store %s has publishes in flight without a pause for %s; repeat the sweep when fewer preserves run", s.dir, wait).
				WithDetail("lock", lockName).WithDetail("directory", s.dir).WithDetail("retry_after_ms", 1000)
			e.Retryable = true
			return nil, e
		}
		time.Sleep(20 * time.Millisecond)
	}
	return f, nil
}

// SweepObjects removes the objects no manifest references that are older
// than grace (by modification time) and that no live pending marker
// lists, and reports what it found and removed; with dryRun it removes
// nothing and reports what it would remove. It holds tmp/.lock
// exclusively while it looks, so no publish is between writing an object
// and indexing the record that references it: a referenced object, or
// one an in-flight publish is about to reference, is never removed. An
// object listed by the pending marker of a killed publish is removed
// whatever its age. Errors: BUSY (retryable) when publishes held the lock
// without a pause for 30 s, CANCELLED, UNSUPPORTED where flock(2) is
// missing, REPOSITORY_IO_FAILED / PERMISSION_DENIED for I/O failures.
func (s *Store) SweepObjects(ctx context.Context, grace time.Duration, dryRun bool) (SweepReport, error) {
	rep := SweepReport{GraceSeconds: grace.Seconds(), DryRun: dryRun}
	if !canSweep {
		return rep, contract.Errorf(contract.CodeUnsupported, "sweeping the evidence store needs flock(2), which this platform lacks")
	}
	lock, err := s.fs.lockExclusive(ctx, sweepLockWait)
	if err != nil {
		return rep, err
	}
	defer lock.Close()
	live, dead, deadFiles, err := s.fs.pendingMarkers()
	if err != nil {
		return rep, err
	}
	used, bad, err := s.fs.referenced(ctx)
	if err != nil {
		return rep, err
	}
	objs, err := s.fs.listObjects(ctx)
	if err != nil {
		return rep, err
	}
	rep.UnreadableManifests = bad
	cutoff := time.Now().Add(-grace)
	var remove []string
	for _, o := range objs {
		rep.Objects++
		switch {
		case used[o.sum]:
			rep.Referenced++
		case live[o.sum] || (!dead[o.sum] && o.mtime.After(cutoff)):
			rep.Recent++
			rep.RecentBytes += o.size
		default:
			remove = append(remove, o.sum)
			rep.Removed++
			rep.RemovedBytes += o.size
		}
	}
	if bad > 0 {
		rep.Reason = "some manifests cannot be read, so an object they reference cannot be told from an unreferenced one; nothing was removed (inquest evidence query lists them with their problem)"
		rep.Recent += rep.Removed
		rep.RecentBytes += rep.RemovedBytes
		rep.Removed, rep.RemovedBytes = 0, 0
		return rep, nil
	}
	if dryRun {
		return rep, nil
	}
	s.fs.removeObjects(remove)
	for _, rel := range deadFiles {
		s.fs.root.Remove(rel)
	}
	return rep, nil
}

// unreferenced counts the objects no manifest references (count, bytes),
// without a lock: objects of publishes in flight are among them. ok is
// false when a manifest cannot be read (then the figures are unknown).
func (s *Store) unreferenced(ctx context.Context) (n, bytes int64, ok bool, err error) {
	used, bad, err := s.fs.referenced(ctx)
	if err != nil || bad > 0 {
		return 0, 0, false, err
	}
	objs, err := s.fs.listObjects(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	for _, o := range objs {
		if !used[o.sum] {
			n++
			bytes += o.size
		}
	}
	return n, bytes, true, nil
}
