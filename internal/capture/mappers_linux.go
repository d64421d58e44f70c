package capture

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Mappers is the answer of MappersOf: which processes map one file.
type Mappers struct {
	// PIDs are the processes with at least one mapping of the file in
	// /proc/PID/maps, ascending.
	PIDs []int32
	// Examined counts processes whose maps were read; Unreadable those
	// whose maps could not be read (permission: PIDs is then a lower
	// bound); Exited those that ended during the scan.
	Examined, Unreadable, Exited int
}

// MappersOf scans /proc/PID/maps of every process for mappings of the
// regular file at path: a maps line matches when its inode is the file's
// and its device is the file's st_dev, or (btrfs reports a subvolume's
// st_dev in stat but the filesystem's in maps) when its path is the file's
// resolved path and the process shares our mount namespace (elsewhere the
// same path may name another file). A path that is missing or not a regular file is
// INVALID_ARGUMENT; ctx cancellation stops the scan between processes.
func MappersOf(ctx context.Context, path string) (*Mappers, error) {
	return FS{}.MappersOf(ctx, path)
}

// MappersOf is the package's MappersOf in the tree fs.
func (fs FS) MappersOf(ctx context.Context, path string) (*Mappers, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "path is not a regular file that can be examined")
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		resolved = path
	}
	if abs, err := filepath.Abs(resolved); err == nil {
		resolved = abs
	}
	pids, err := fs.listPIDs()
	if err != nil {
		return nil, contract.Errorf(contract.CodeCollectionFailed, "cannot list processes: %v", err)
	}
	out := &Mappers{}
	for i, pid := range pids {
		if i&31 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		b, err := os.ReadFile(filepath.Join(fs.Root(), strconv.Itoa(int(pid)), "maps"))
		if err != nil {
			if gone(err) {
				out.Exited++
			} else {
				out.Unreadable++
			}
			continue
		}
		out.Examined++
		for len(b) > 0 {
			line := b
			if j := bytes.IndexByte(b, '\n'); j >= 0 {
				line, b = b[:j], b[j+1:]
			} else {
				b = nil
			}
			m, ok := parseMapsLine(line)
			if !ok || m.inode != st.Ino {
				continue
			}
			// the path fallback only where the path means the same
			// file: a process in another mount namespace may map
			// another object at the same path (with the same inode
			// number on another filesystem)
			if unix.Mkdev(m.major, m.minor) == st.Dev || m.path == resolved && fs.sameMountNSAs(pid) {
				out.PIDs = append(out.PIDs, pid)
				break
			}
		}
	}
	return out, nil
}

// sameMountNSAs reports whether process pid of the tree is in this
// process's mount namespace (false when either cannot be read).
func (fs FS) sameMountNSAs(pid int32) bool {
	var a, b [64]byte
	mine, err1 := readlinkAt(unix.AT_FDCWD, fs.path("self/ns/mnt"), a[:])
	theirs, err2 := readlinkAt(unix.AT_FDCWD, fs.path(strconv.Itoa(int(pid))+"/ns/mnt"), b[:])
	return err1 == nil && err2 == nil && string(mine) == string(theirs)
}
