//go:build linux

package perf

import "syscall"

// ctimeOf returns the inode change time in ns (st_ctim); any write changes it.
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Sec*1e9 + st.Ctim.Nsec }
