// Package fsguard holds the one check of every directory inquest writes
// into (the evidence store, the recording directory, the runtime
// directory) and of every destination path a caller names before any work
// is done for it (rescue_evidence, exports, recordings).
//
// A directory is trusted only when it is a real directory (not a symbolic
// link, which another user could point elsewhere), owned by this user, and
// not writable by group or others (who could rename or delete what inquest
// writes there). A destination is checked for its syntax (absolute, no NUL
// byte, no component longer than 255 bytes, at most 4,095 bytes in all),
// that it does not exist yet and that its parent is an existing directory
// this user may create entries in. Failures are *Error values naming the
// path, the reason and, where a system call failed, the errno name
// (EACCES, ENOENT, ...), so callers can return the specific typed error
// with the argument's field.
package fsguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Kind classifies a refusal.
type Kind int

const (
	// Syntax: the path itself is unusable (relative, NUL byte, a component
	// longer than NameMax, longer than PathMax).
	Syntax Kind = iota + 1
	// Missing: the directory (or a destination's parent) does not exist.
	Missing
	// Exists: a destination that must be new already exists.
	Exists
	// Unsafe: a symbolic link, not a directory, owned by another user or
	// writable by group or others (or, with a stricter mask, by anyone but
	// the owner).
	Unsafe
	// Denied: this user may not examine or write it (EACCES, EPERM, EROFS).
	Denied
	// IO: another system error (Cause names it).
	IO
)

// NameMax is the longest path component most file systems accept (bytes).
const NameMax = 255

// PathMax is the longest path the kernel accepts, NUL excluded (bytes).
const PathMax = 4095

// Error is a refusal: Path is the path checked, Kind and Reason say why
// (Reason is a phrase for people: "it is a symbolic link"), Cause the
// errno name when a system call failed ("" otherwise), and Owner/Mode
// what was found when they are known (Owner -1 when not). errors.Is sees
// the system error through Unwrap.
type Error struct {
	Path   string
	Kind   Kind
	Reason string
	Cause  string
	Owner  int
	Mode   fs.FileMode
	// Err is the system error behind a Missing, Denied or IO refusal.
	Err error
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }

// Unwrap returns the system error behind the refusal (nil for a refusal
// of what was found).
func (e *Error) Unwrap() error { return e.Err }

// ErrnoName returns the symbolic errno name of err's system error
// (ENOENT, EACCES, ENOSPC ...), or "" when err carries none.
func ErrnoName(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return ""
	}
	if n := errnoName(errno); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(errno))
}

func sysErr(path string, err error, what string) *Error {
	k := IO
	switch {
	case errors.Is(err, fs.ErrNotExist):
		k = Missing
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		k = Denied
	}
	return &Error{Path: path, Kind: k, Reason: what + ": " + errText(err), Cause: ErrnoName(err), Owner: -1, Err: err}
}

// errText is the system error's own text, without the path it names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// GroupOther is the mode mask of a shared-writable directory: writable by
// group or others.
const GroupOther fs.FileMode = 0o022

// Private is the mode mask of a directory that must be 0700: any group or
// other permission.
const Private fs.FileMode = 0o077

// CheckDir accepts dir only as a real directory (Lstat: a symbolic link is
// refused, never followed) owned by this user whose mode has none of the
// bits in forbidden (GroupOther or Private). It never creates, repairs or
// removes anything.
func CheckDir(dir string, forbidden fs.FileMode) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return sysErr(dir, err, "it cannot be examined")
	}
	return CheckDirInfo(dir, fi, forbidden)
}

// CheckDirInfo is CheckDir over fi, the result of os.Lstat(dir).
func CheckDirInfo(dir string, fi fs.FileInfo, forbidden fs.FileMode) error {
	bad := func(why string) error {
		e := &Error{Path: dir, Kind: Unsafe, Reason: why, Owner: -1, Mode: fi.Mode().Perm()}
		if uid, ok := ownerOf(fi); ok {
			e.Owner = uid
		}
		return e
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return bad("it is a symbolic link")
	case !fi.IsDir():
		return bad("it is not a directory")
	}
	if uid, ok := ownerOf(fi); ok {
		if me, ok := currentUID(); ok && uid != me {
			return bad(fmt.Sprintf("it is owned by uid %d, not by this user (uid %d)", uid, me))
		}
	}
	if hasModes() && fi.Mode().Perm()&forbidden != 0 {
		if forbidden == Private {
			return bad(fmt.Sprintf("its mode is %04o; it must be 0700 (no group or other permission)", fi.Mode().Perm()))
		}
		return bad(fmt.Sprintf("it is writable by group or others (mode %04o)", fi.Mode().Perm()))
	}
	return nil
}

// MkdirChecked creates dir with mode 0700 when it is missing (its missing
// parents too, each 0700) and then checks it with CheckDir. An existing
// directory is checked as it is, never changed.
func MkdirChecked(dir string, forbidden fs.FileMode) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		var e *Error
		if ce := CheckDir(dir, forbidden); errors.As(ce, &e) && e.Kind == Unsafe {
			return e
		}
		return sysErr(dir, err, "it cannot be created")
	}
	return CheckDir(dir, forbidden)
}

// CheckPathSyntax accepts an absolute path without a NUL byte, with no
// component longer than NameMax bytes and at most PathMax bytes in all.
func CheckPathSyntax(p string) error {
	syn := func(why string) error { return &Error{Path: p, Kind: Syntax, Reason: why, Owner: -1} }
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return syn("it contains a NUL byte")
	case !filepath.IsAbs(p):
		return syn("it is not an absolute path")
	case len(p) > PathMax:
		return syn(fmt.Sprintf("it is %d bytes long; the longest path is %d bytes", len(p), PathMax))
	}
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if len(c) > NameMax {
			return syn(fmt.Sprintf("its component %.40q... is %d bytes long; a component is at most %d bytes", c, len(c), NameMax))
		}
	}
	return nil
}

// CheckDestination checks a path that inquest is to create (a directory
// or file published there): CheckPathSyntax; it must not exist (Lstat: a
// dangling symbolic link exists too); its parent must be an existing
// directory (symbolic links in the parent path are followed: the caller
// chose it) that this user may create entries in. It creates nothing.
func CheckDestination(p string) error {
	if err := CheckPathSyntax(p); err != nil {
		return err
	}
	p = filepath.Clean(p)
	if _, err := os.Lstat(p); err == nil {
		return &Error{Path: p, Kind: Exists, Reason: "it already exists", Cause: "EEXIST", Owner: -1}
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return sysErr(p, err, "it cannot be examined")
	}
	parent := filepath.Dir(p)
	fi, err := os.Stat(parent)
	if err != nil {
		e := sysErr(parent, err, "its parent directory cannot be examined")
		if e.Kind == Missing {
			e.Reason = "its parent directory does not exist"
		}
		return e
	}
	if !fi.IsDir() {
		return &Error{Path: parent, Kind: Missing, Reason: "its parent is not a directory", Cause: "ENOTDIR", Owner: -1}
	}
	if err := writable(parent); err != nil {
		return sysErr(parent, err, "this user may not create entries in its parent directory")
	}
	return nil
}
