//go:build linux

package sample

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
)

// ReadCommandLine reads /proc/PID/cmdline (NUL-terminated argv) up to
// MaxCommandLineRead bytes and then checks that the same lifetime still
// runs, so a reused PID's argv is never returned (os.ErrNotExist).
// complete is false when the command line is longer than the bound. A
// kernel thread has an empty command line.
func ReadCommandLine(id Identity) (raw []byte, complete bool, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(int(id.PID)) + "/cmdline")
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	raw, err = io.ReadAll(io.LimitReader(f, MaxCommandLineRead+1))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, os.ErrNotExist
		}
		return nil, false, err
	}
	if Verify(id) != Alive {
		return nil, false, os.ErrNotExist
	}
	complete = len(raw) <= MaxCommandLineRead
	if !complete {
		raw = raw[:MaxCommandLineRead]
	}
	return raw, complete, nil
}

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
