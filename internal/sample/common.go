package sample

import "slices"

func sortProcs(p []Process) {
	slices.SortFunc(p, func(a, b Process) int { return int(a.PID) - int(b.PID) })
}
