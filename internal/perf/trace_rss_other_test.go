//go:build !linux

package perf

import "os"

// peakRSS is unknown here (-1): the trace benchmark reports peak RSS on
// Linux only.
func peakRSS(*os.ProcessState) int64 { return -1 }
