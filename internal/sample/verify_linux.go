//go:build linux

package sample

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Liveness is the outcome of Verify.
type Liveness int

// Verify outcomes.
const (
	// Alive: the same lifetime runs now (not a zombie; a zombie leader
	// whose other threads run is alive, see LeaderExited).
	Alive Liveness = iota
	// Exited: no process has the PID, the PID was reused by another
	// lifetime, or the lifetime is a zombie.
	Exited
	// Unverifiable: the start time could not be read (access failure is
	// not an exit).
	Unverifiable
)

// Verify reads /proc/PID/stat now and compares the start time (field 22).
func Verify(id Identity) Liveness { return VerifyIn("/proc", id) }

// VerifyIn is Verify reading root/PID/stat (root is a procfs tree: the
// live /proc or a fixture laid out as it is).
func VerifyIn(root string, id Identity) Liveness {
	b, err := os.ReadFile(root + "/" + strconv.Itoa(int(id.PID)) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return Exited
		}
		return Unverifiable
	}
	var p Process
	if _, err := parseStat(b, &p); err != nil {
		return Unverifiable
	}
	if p.StartTicks != id.StartTicks || p.State == 'X' || (p.State == 'Z' && !LeaderExited(p.State, p.Vals[PThreads])) {
		return Exited
	}
	return Alive
}

// IdentityOf reads the lifetime under pid now from /proc/PID/stat (field
// 22, start time in clock ticks since boot): the identity the sampler
// records for it, so the process_ref the proc host issues for it names this
// lifetime. running is false for a zombie or dead process (state Z or X;
// a zombie leader whose other threads run is running, see LeaderExited),
// whose start time still reads until it is reaped. A missing process is
// os.ErrNotExist; a stat that does not parse is an error naming the file.
// The answer names one lifetime only while the PID cannot be reaped and
// reused (the caller holds an unreaped child), or when checked later with
// Verify.
func IdentityOf(pid int32) (id Identity, running bool, err error) {
	path := "/proc/" + strconv.Itoa(int(pid)) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return Identity{}, false, os.ErrNotExist
		}
		return Identity{}, false, err
	}
	var p Process
	if _, err := parseStat(b, &p); err != nil {
		return Identity{}, false, errors.New(path + ": " + err.Error())
	}
	return Identity{PID: pid, StartTicks: p.StartTicks}, p.State != 'X' && (p.State != 'Z' || LeaderExited(p.State, p.Vals[PThreads])), nil
}
