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

// IdentityOf returns the lifetime under pid now: the PID and its create
// time (milliseconds, gopsutil), the identity this platform's sampler
// records; running is false for a zombie. A missing process is an error.
func IdentityOf(pid int32) (id Identity, running bool, err error) {
	p, err := process.NewProcess(pid)
	if err != nil {
		return Identity{}, false, err
	}
	ct, err := p.CreateTime()
	if err != nil {
		return Identity{}, false, err
	}
	running = true
	if st, err := p.Status(); err == nil && len(st) > 0 && st[0] == process.Zombie {
		running = false
	}
	return Identity{PID: pid, StartTicks: uint64(ct)}, running, nil
}
