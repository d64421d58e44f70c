//go:build !linux

package sample

import (
	"os"
	"strings"

	"github.com/shirou/gopsutil/v4/process"
)

// CommandLine returns argv through gopsutil after checking the identity.
func CommandLine(id Identity) ([]string, error) {
	if Verify(id) != Alive {
		return nil, os.ErrNotExist
	}
	p, err := process.NewProcess(id.PID)
	if err != nil {
		return nil, err
	}
	return p.CmdlineSlice()
}

// ReadCommandLine returns argv through gopsutil after checking the
// identity, as NUL-terminated arguments (the layout of Linux's
// /proc/PID/cmdline); complete is always true.
func ReadCommandLine(id Identity) (raw []byte, complete bool, err error) {
	args, err := CommandLine(id)
	if err != nil {
		return nil, false, err
	}
	if len(args) == 0 {
		return []byte{}, true, nil
	}
	return []byte(strings.Join(args, "\x00") + "\x00"), true, nil
}
