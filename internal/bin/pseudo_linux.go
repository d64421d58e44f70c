//go:build linux

package bin

import (
	"os"

	"golang.org/x/sys/unix"
)

// pseudoFS names the kernel pseudo-file system fh lies on (fstatfs(2)
// f_type), or "" for an ordinary one. Files there report a size that is
// not their content (0 or 4096: /proc/self/environ reads as bytes while
// stat says 0), so bin tools refuse them instead of returning an empty
// answer marked complete.
func pseudoFS(fh *os.File) string {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(fh.Fd()), &st); err != nil {
		return ""
	}
	switch st.Type {
	case unix.PROC_SUPER_MAGIC:
		return "proc"
	case unix.SYSFS_MAGIC:
		return "sysfs"
	case unix.DEBUGFS_MAGIC:
		return "debugfs"
	case unix.TRACEFS_MAGIC:
		return "tracefs"
	case unix.SECURITYFS_MAGIC:
		return "securityfs"
	case unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return "cgroup"
	}
	return ""
}
