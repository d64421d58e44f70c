//go:build linux

package perf

import "golang.org/x/sys/unix"

// onPseudoFS reports whether path lies on procfs (PROC_SUPER_MAGIC) or
// sysfs (SYSFS_MAGIC) by statfs(2) f_type: their files report a size
// that is not their content (0 or 4096) and some, like /proc/PID/pagemap,
// produce hundreds of GiB when read.
func onPseudoFS(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.PROC_SUPER_MAGIC || st.Type == unix.SYSFS_MAGIC
}
