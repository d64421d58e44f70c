package perf

import (
	"os"
	"syscall"
)

// peakRSS is the peak resident set size of a finished process in bytes
// (getrusage ru_maxrss, which Linux reports in KiB), or -1 when unknown.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss) * 1024
	}
	return -1
}
