//go:build !linux

// Package capture runs one workload under measurement; it is implemented
// on Linux only.
package capture
