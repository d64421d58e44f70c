//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package config

import "syscall"

func ctimeNs(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }
