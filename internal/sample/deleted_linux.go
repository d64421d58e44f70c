//go:build linux

package sample

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Deletion is what is known about whether a /proc link target (an fd, the
// exe link, a mapping) names an unlinked object.
type Deletion int8

// Deletion outcomes.
const (
	// NotDeleted: the object is reachable under the printed path.
	NotDeleted Deletion = iota
	// Deleted: the kernel reports the link as deleted (the object has no
	// links left, or it is no longer reachable under the printed name).
	Deleted
	// DeletionUnknown: the target ends in " (deleted)" but neither the
	// object nor the literal path could be examined.
	DeletionUnknown
)

// JSON returns the value of a row's deleted field: true, false, or nil
// (unknown).
func (d Deletion) JSON() any {
	switch d {
	case Deleted:
		return true
	case NotDeleted:
		return false
	}
	return nil
}

// ResolveDeleted decides from facts, not from the string, whether link (a
// target read from /proc/PID/fd/N, /proc/PID/exe or /proc/PID/maps) names
// a deleted object, and returns the path without the kernel's suffix when
// it does. obj is the stat of the object itself (fstatat through the
// magic link, or of map_files), nil when unreadable; literal stats a path
// as the process sees it (through /proc/PID/root), returning an error when
// the path does not exist or cannot be examined.
//
// Rules: a target that does not end in " (deleted)" or is not absolute is
// not deleted. With the suffix: an object with st_nlink 0 is deleted; a
// literal path that stats to the same device and inode as the object is a
// live file whose real name ends in " (deleted)" (not deleted); otherwise
// the printed dentry was unlinked while other links remain (deleted). With
// obj unknown the literal path alone cannot tell, so the result is
// DeletionUnknown and the path is returned as printed.
func ResolveDeleted(link string, obj *unix.Stat_t, literal func(path string) (*unix.Stat_t, error)) (string, Deletion) {
	if !strings.HasSuffix(link, DeletedSuffix) || !strings.HasPrefix(link, "/") {
		return link, NotDeleted
	}
	trimmed := link[:len(link)-len(DeletedSuffix)]
	if obj != nil && obj.Nlink == 0 {
		return trimmed, Deleted
	}
	if obj == nil {
		return link, DeletionUnknown
	}
	if literal != nil {
		if st, err := literal(link); err == nil && st.Dev == obj.Dev && st.Ino == obj.Ino {
			return link, NotDeleted
		}
	}
	return trimmed, Deleted
}

// StatInRoot returns a literal-path stat function for ResolveDeleted that
// resolves path through dir's "root" entry (dir is an open /proc/PID
// directory), so the path is looked up in the process's mount namespace
// and root directory. The final component is not followed (lstat).
func StatInRoot(dir int) func(path string) (*unix.Stat_t, error) {
	return func(path string) (*unix.Stat_t, error) {
		var st unix.Stat_t
		if err := unix.Fstatat(dir, "root"+path, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, err
		}
		return &st, nil
	}
}
