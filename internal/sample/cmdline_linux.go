//go:build linux

package sample

import (
	"bytes"
	"os"
	"strconv"
)

// MaxCommandLine bounds the command line read from /proc/PID/cmdline.
const MaxCommandLine = 64 << 10

// CommandLine reads /proc/PID/cmdline (NUL-separated argv) and then checks
// that the same lifetime still runs, so a reused PID's argv is never
// returned. A kernel thread has an empty command line.
func CommandLine(id Identity) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(id.PID)) + "/cmdline")
	if err != nil {
		return nil, err
	}
	if Verify(id) != Alive {
		return nil, os.ErrNotExist
	}
	if len(b) > MaxCommandLine {
		b = b[:MaxCommandLine]
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return []string{}, nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out, nil
}
