package sample

import "sort"

func sortProcs(p []Process) { sort.Slice(p, func(i, j int) bool { return p[i].PID < p[j].PID }) }
