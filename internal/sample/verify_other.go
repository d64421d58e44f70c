//go:build !linux

package sample

import "github.com/shirou/gopsutil/v4/process"

// Liveness is the outcome of Verify.
type Liveness int

// Verify outcomes.
const (
	Alive Liveness = iota
	Exited
	Unverifiable
)

// Verify checks that a process with id.PID exists and has the same create
// time (milliseconds, gopsutil) as the identity.
func Verify(id Identity) Liveness {
	p, err := process.NewProcess(id.PID)
	if err != nil {
		return Exited
	}
	ct, err := p.CreateTime()
	if err != nil {
		return Unverifiable
	}
	if uint64(ct) != id.StartTicks {
		return Exited
	}
	return Alive
}
