package evidence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/inquest-dev/inquest/internal/fsguard"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/inquest-dev/inquest/internal/contract"
)

// storeFS performs every file operation of a store relative to one
// verified directory handle (os.Root: openat(2) with O_NOFOLLOW on each
// component, no escape from the directory). The directory and each of its
// subdirectories are checked when first used: a real directory, not a
// symbolic link, owned by the current user, not writable by group or
// others. Files are opened only after Lstat says they are regular files,
// and the opened file must be the one Lstat saw, so no symbolic link is
// followed that the store did not create (it creates none).
type storeFS struct {
	dir  string
	root *os.Root
}

// faultAt, when positive (tests only), makes the faultAt-th write step
// of the store (create, write, sync, rename, directory sync, index
// commit) fail with ENOSPC, as a full disk would at that point; faults
// counts the steps.
var (
	faultAt int64
	faults  atomic.Int64
)

// injected returns the injected ENOSPC for this write step, or nil.
func injected() error {
	if faultAt > 0 && faults.Add(1) == faultAt {
		return &os.PathError{Op: "write", Path: "evidence", Err: syscall.ENOSPC}
	}
	return nil
}

// maxManifestBytes bounds one manifest read into memory.
const maxManifestBytes = 16 << 20

// lockName is the flock(2) file that orders temp-file creation against the
// sweep of dead writers' temp files.
const lockName = "tmp/.lock"

func openFS(abs string) (*storeFS, error) {
	if err := os.MkdirAll(abs, 0o700); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			if e := blockedBy(abs); e != nil {
				return nil, e
			}
		}
		return nil, ioFail(abs, err, "the evidence directory cannot be created")
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, ioFail(abs, err, "the evidence directory cannot be examined")
	}
	if err := checkDir(abs, fi); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, ioFail(abs, err, "the evidence directory cannot be opened")
	}
	rfi, err := root.Stat(".")
	if err != nil || !os.SameFile(fi, rfi) {
		root.Close()
		return nil, unsafeDir(abs, "it was replaced while it was being opened")
	}
	s := &storeFS{dir: abs, root: root}
	for _, d := range []string{"objects", "objects/sha256", "manifests", "tmp"} {
		if err := s.mkdirVerified(d); err != nil {
			root.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *storeFS) Close() error { return s.root.Close() }

// unsafeDir is the refusal of a directory the store must not use.
func unsafeDir(dir, why string) *contract.Error {
	return contract.Errorf(contract.CodePermissionDenied,
		"the evidence store refuses the directory %s: %s. Use a directory you own that only you can write (chmod go-w; or set INQUEST_DATA_DIR to one)", dir, why).
		WithDetail("directory", dir)
}

// blockedBy explains why this user can neither reach nor create the
// store directory abs (MkdirAll failed with EACCES/EPERM): it is owned by
// another user, or the nearest ancestor this user can examine (lstat(2))
// denies search (its child exists but cannot be examined: the store may
// be another user's) or the creation of an entry (nothing below it
// exists). PERMISSION_DENIED with details directory, blocked_by (the
// path), owner_uid, mode (octal) and uid (this user's effective uid);
// nil when no ancestor can be examined.
func blockedBy(abs string) *contract.Error {
	p, below := abs, error(nil)
	for {
		fi, err := os.Lstat(p)
		if err == nil {
			if p == abs {
				if e := checkDir(p, fi); e != nil {
					return contract.AsError(e)
				}
				return nil
			}
			uid, ok := ownerOf(fi)
			me, okMe := currentUID()
			if !ok || !okMe {
				return nil
			}
			var e *contract.Error
			if errors.Is(below, fs.ErrPermission) {
				e = contract.Errorf(contract.CodePermissionDenied,
					"the evidence directory %s cannot be reached: this user (uid %d) may not search %s (owned by uid %d, mode %04o), so what is inside it (perhaps another user's store) is out of reach. Set INQUEST_DATA_DIR to a directory this user owns", abs, me, p, uid, fi.Mode().Perm())
			} else {
				e = contract.Errorf(contract.CodePermissionDenied,
					"the evidence directory %s cannot be created: this user (uid %d) may not create entries in %s (owned by uid %d, mode %04o). Set INQUEST_DATA_DIR to a directory this user owns", abs, me, p, uid, fi.Mode().Perm())
			}
			return e.
				WithDetail("directory", abs).WithDetail("blocked_by", p).WithDetail("owner_uid", uid).
				WithDetail("mode", fmt.Sprintf("%04o", fi.Mode().Perm())).WithDetail("uid", me)
		}
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p, below = parent, err
	}
}

// checkDir accepts fi (from Lstat of p) only as a real directory owned by
// the current user and not writable by group or others (fsguard.CheckDir,
// the check of every directory inquest writes into).
func checkDir(p string, fi fs.FileInfo) error {
	var e *fsguard.Error
	if err := fsguard.CheckDirInfo(p, fi, fsguard.GroupOther); errors.As(err, &e) {
		return unsafeDir(p, e.Reason)
	}
	return nil
}

// mkdirVerified creates rel (0700) when missing and checks it.
func (s *storeFS) mkdirVerified(rel string) error {
	if err := s.root.Mkdir(rel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return ioFail(s.dir, err, "the evidence directory cannot be created")
	}
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return ioFail(s.dir, err, "the evidence directory cannot be examined")
	}
	return checkDir(filepath.Join(s.dir, filepath.FromSlash(rel)), fi)
}

// errNotRegular is returned for a store path that is a symbolic link or
// anything else but a regular file.
var errNotRegular = errors.New("evidence: not a regular file")

// open opens the existing regular file rel without following a symbolic
// link in its last component, and checks it is the file Lstat saw.
func (s *storeFS) open(rel string) (*os.File, error) {
	lfi, err := s.root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !lfi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := s.root.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !os.SameFile(lfi, fi) {
		f.Close()
		return nil, errNotRegular
	}
	return f, nil
}

// readFile reads the regular file rel (at most maxManifestBytes).
func (s *storeFS) readFile(rel string) ([]byte, error) {
	f, err := s.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err == nil && len(b) > maxManifestBytes {
		err = errNotRegular
	}
	return b, err
}

// exists reports whether rel exists (a symbolic link counts).
func (s *storeFS) exists(rel string) bool {
	_, err := s.root.Lstat(rel)
	return err == nil
}

// tempFile is a temp file under DIR/tmp held under an exclusive flock(2)
// until Done, so a sweep by another process never removes it while its
// writer lives.
type tempFile struct {
	*os.File
	rel string
	fs  *storeFS
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createTemp creates DIR/tmp/PREFIX+random (0600, O_EXCL: never through a
// symbolic link) and locks it. Creation happens under a shared lock of
// tmp/.lock, which a sweep holds exclusively, so a sweep never sees a temp
// file between its creation and its lock.
func (s *storeFS) createTemp(prefix string) (*tempFile, error) {
	var guard *os.File
	if canSweep {
		g, err := s.lockTmp(false)
		if err != nil {
			return nil, err
		}
		guard = g
		defer guard.Close()
	}
	if err := injected(); err != nil {
		return nil, ioFail(s.dir, err, "the evidence store is not writable")
	}
	for range 16 {
		rel := "tmp/" + prefix + randHex(8)
		f, err := s.root.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, ioFail(s.dir, err, "the evidence store is not writable")
		}
		if err := lockFile(f, true); err != nil {
			f.Close()
			s.root.Remove(rel)
			return nil, ioFail(s.dir, err, "a temp file of the evidence store cannot be locked")
		}
		return &tempFile{File: f, rel: rel, fs: s}, nil
	}
	return nil, ioErr("no unique temp file name in the evidence store")
}

// lockTmp opens tmp/.lock and locks it shared or exclusive; closing the
// returned file releases the lock.
func (s *storeFS) lockTmp(exclusive bool) (*os.File, error) {
	if fi, err := s.root.Lstat(lockName); err == nil && !fi.Mode().IsRegular() {
		return nil, corrupt("the evidence store's tmp/.lock is not a regular file")
	}
	f, err := s.root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, ioFail(s.dir, err, "the evidence store lock cannot be opened")
	}
	if err := lockFile(f, exclusive); err != nil {
		f.Close()
		return nil, ioFail(s.dir, err, "the evidence store lock cannot be taken")
	}
	return f, nil
}

// Sync fsyncs the temp file.
func (t *tempFile) Sync() error {
	if err := injected(); err != nil {
		return err
	}
	return t.File.Sync()
}

// faultWriter writes to a temp file with the injected fault checked on
// each write.
type faultWriter struct{ t *tempFile }

func (w faultWriter) Write(p []byte) (int, error) {
	if err := injected(); err != nil {
		return 0, err
	}
	return w.t.File.Write(p)
}

// Discard removes the temp file and releases it.
func (t *tempFile) Discard() {
	t.fs.root.Remove(t.rel)
	t.File.Close()
}

// publish moves the temp file to rel (rename(2) within the store: a
// symbolic link at rel is replaced, never followed), syncs rel's directory
// and releases the temp file. On error the temp file is removed.
func (t *tempFile) publish(rel string) error {
	if !canSweep {
		t.File.Close() // some systems cannot rename an open file
	}
	err := injected()
	if err == nil {
		err = t.fs.root.Rename(t.rel, rel)
	}
	if err != nil {
		t.Discard()
		return ioFail(t.fs.dir, err, "the evidence store cannot publish")
	}
	t.File.Close()
	return t.fs.syncDir(path.Dir(rel))
}

// syncDir fsyncs the directory rel so a rename in it is durable.
func (s *storeFS) syncDir(rel string) error {
	d, err := s.root.Open(rel)
	if err != nil {
		return ioFail(s.dir, err, "the evidence directory cannot be synced")
	}
	defer d.Close()
	if err := injected(); err != nil {
		return ioFail(s.dir, err, "the evidence directory cannot be synced")
	}
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, syscall.EINVAL) {
		return ioFail(s.dir, err, "the evidence directory cannot be synced")
	}
	return nil
}

// writeAtomic writes data to rel through a locked temp file: write, fsync,
// rename, fsync of rel's directory.
func (s *storeFS) writeAtomic(rel string, data []byte) error {
	t, err := s.createTemp("w-")
	if err != nil {
		return err
	}
	if _, err := (faultWriter{t}).Write(data); err != nil {
		t.Discard()
		return ioFail(s.dir, err, "the evidence store is not writable")
	}
	if err := t.Sync(); err != nil {
		t.Discard()
		return ioFail(s.dir, err, "the evidence store cannot be synced")
	}
	return t.publish(rel)
}

// sweep removes the temp files under DIR/tmp whose writer is gone (no
// flock held on them): the leftovers of processes killed mid-publish. It
// holds tmp/.lock exclusively, so no temp file is seen between creation
// and lock; when that lock is busy it sweeps nothing this time. It
// returns how many entries it removed. Then it removes the objects that
// publishes killed before their manifest left behind, and their pending
// markers (sweepDeadPublishes).
func (s *storeFS) sweep() (int, error) {
	if !canSweep {
		return 0, nil
	}
	if fi, err := s.root.Lstat(lockName); err == nil && !fi.Mode().IsRegular() {
		return 0, corrupt("the evidence store's tmp/.lock is not a regular file")
	}
	guard, err := s.root.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, ioFail(s.dir, err, "the evidence store lock cannot be opened")
	}
	defer guard.Close()
	if !tryLockFile(guard) {
		// A writer is between creating and locking its temp file (or
		// another open is sweeping): sweep next time rather than wait.
		return 0, nil
	}
	d, err := s.root.Open("tmp")
	if err != nil {
		return 0, ioFail(s.dir, err, "the evidence store's tmp directory cannot be read")
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return 0, ioFail(s.dir, err, "the evidence store's tmp directory cannot be read")
	}
	n := 0
	for _, e := range ents {
		rel := "tmp/" + e.Name()
		if rel == lockName || (strings.HasPrefix(e.Name(), pendingPrefix) && e.Type().IsRegular()) {
			continue // pending markers: sweepDeadPublishes below
		}
		if !e.Type().IsRegular() {
			// Nothing the store writes; RemoveAll never follows links.
			if s.root.RemoveAll(rel) == nil {
				n++
			}
			continue
		}
		f, err := s.open(rel)
		if err != nil {
			continue
		}
		if tryLockFile(f) {
			if s.root.Remove(rel) == nil {
				n++
			}
		}
		f.Close()
	}
	if _, _, err := s.sweepDeadPublishes(context.Background()); err != nil {
		return n, err
	}
	return n, nil
}

// minFreeBytes is the free space below which an I/O failure of SQLite is
// reported as a full disk (SQLite reports ENOSPC on its -shm mapping and
// some opens only as a generic I/O error).
const minFreeBytes = 1 << 20

// diskFull is the typed error for a store whose file system has no space
// left: RESOURCE_LIMIT, not retryable (repeating fails the same way until
// space is freed), naming the directory.
func diskFull(dir string) *contract.Error {
	e := contract.Errorf(contract.CodeResourceLimit,
		"no space left on the file system holding the evidence store %s; free space there (or set INQUEST_DATA_DIR to a store elsewhere), then repeat the call. Nothing was published and no record was changed", dir).
		WithDetail("directory", dir).WithDetail("cause", "ENOSPC")
	e.Retryable = false
	return e
}

// IOFailure is the error the store gives for err, a failed system call on
// the store at dir, with msg saying what was being done (ioFail): callers
// that examine the store's directories themselves report the same codes
// the store does (PERMISSION_DENIED for EACCES/EPERM, the disk-full code,
// REPOSITORY_IO_FAILED with details.cause otherwise).
func IOFailure(dir string, err error, msg string) *contract.Error { return ioFail(dir, err, msg) }

// ioFail classifies an I/O failure in the store at dir: no space →
// diskFull; permission → PERMISSION_DENIED (not retryable, details
// cause and path); anything else REPOSITORY_IO_FAILED (retryable) with
// msg, details.cause the errno name (EIO, EROFS ...) and details.path the
// file the system call named.
func ioFail(dir string, err error, msg string) *contract.Error {
	if ce := (*contract.Error)(nil); errors.As(err, &ce) {
		return ce
	}
	if isNoSpace(err) {
		return diskFull(dir)
	}
	if errors.Is(err, fs.ErrPermission) {
		e := contract.Errorf(contract.CodePermissionDenied, "%s: permission denied in the evidence store %s", msg, dir).WithDetail("directory", dir)
		if n := fsguard.ErrnoName(err); n != "" {
			e = e.WithDetail("cause", n)
		}
		if p := errPath(err); p != "" {
			e = e.WithDetail("path", p)
		}
		return e
	}
	if errors.Is(err, errNotRegular) {
		return corrupt("%s: a store file is a symbolic link or not a regular file", msg).WithDetail("directory", dir)
	}
	e := contract.Errorf(contract.CodeRepositoryIO, "%s: %s in the evidence store %s", msg, errText(err), dir).WithDetail("directory", dir)
	if n := fsguard.ErrnoName(err); n != "" {
		e = e.WithDetail("cause", n)
	}
	if p := errPath(err); p != "" {
		e = e.WithDetail("path", p)
	}
	return e
}

// errText is the system error's text without the path it names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// errPath is the path an *fs.PathError names ("" otherwise).
func errPath(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}

// restrict makes the regular file rel mode 0600 (owner read and write
// only) when it exists with any other permission: SQLite creates the
// index and its -wal and -shm with the process umask (0644 under the
// usual 022), while every other store file is 0600. The mode is changed
// on the opened file (fchmod), never through a symbolic link.
func (s *storeFS) restrict(rel string) error {
	f, err := s.open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return ioFail(s.dir, err, "the evidence index cannot be opened")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ioFail(s.dir, err, "the evidence index cannot be examined")
	}
	if fi.Mode().Perm() == 0o600 {
		return nil
	}
	if err := f.Chmod(0o600); err != nil {
		return ioFail(s.dir, err, "the evidence index's mode cannot be set to 0600")
	}
	return nil
}

// createPrivate creates the empty regular file rel with mode 0600 when it
// does not exist (O_EXCL: never through a symbolic link).
func (s *storeFS) createPrivate(rel string) error {
	f, err := s.root.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return ioFail(s.dir, err, "the evidence index cannot be created")
	}
	return f.Close()
}
