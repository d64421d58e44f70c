//go:build !linux

package sample

import (
	"os"

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
