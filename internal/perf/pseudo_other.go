//go:build !linux

package perf

// onPseudoFS is false where procfs and sysfs do not exist; zero-size files
// that still produce data are caught by isPseudoFile's read probe.
func onPseudoFS(path string) bool { return false }
