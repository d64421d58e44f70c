//go:build linux

package host

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// watchExit waits until the verified lifetime id exits or ctx ends. On
// Linux it holds a pidfd (pidfd_open(2)) and polls it: the pidfd becomes
// readable when that process terminates, and a pidfd keeps naming the
// same process even if its PID is later reused. The identity is checked
// again right after opening (a PID reused between the check and the open
// would be another process). Without pidfd support it falls back to
// polling /proc/PID/stat once per sampling interval. An access failure is
// never taken as an exit. ev is the exit evidence, or nil with last (the
// last observation) when ctx ended first.
func watchExit(ctx context.Context, id sample.Identity, interval time.Duration) (ev, last map[string]any, err error) {
	fd, oerr := unix.PidfdOpen(int(id.PID), 0)
	if oerr != nil {
		if errors.Is(oerr, unix.ESRCH) {
			// No process has this PID any more: the lifetime verified
			// alive a moment ago has exited (a PID is reused only after
			// its process is gone).
			return map[string]any{"exited": true, "method": "pidfd_open", "observed": "no process has the PID (ESRCH)", "detected_at": contract.TS(time.Now())}, nil, nil
		}
		return pollExit(ctx, id, interval)
	}
	defer unix.Close(fd)
	switch sample.Verify(id) {
	case sample.Exited:
		return map[string]any{"exited": true, "method": "pidfd_open", "observed": "the lifetime's start time no longer matches or it is a zombie", "detected_at": contract.TS(time.Now())}, nil, nil
	case sample.Unverifiable:
		return nil, nil, contract.Errorf(contract.CodeIdentityUnverifiable, "the process's start time cannot be read, so the held handle cannot be tied to this lifetime")
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if ctx.Err() != nil {
			return nil, map[string]any{"alive": true, "method": "pidfd_poll", "checked_at": contract.TS(time.Now())}, nil
		}
		wait := 50
		if dl, ok := ctx.Deadline(); ok {
			if ms := int(time.Until(dl).Milliseconds()); ms < wait {
				wait = max(ms, 0)
			}
		}
		fds[0].Revents = 0
		n, perr := unix.Poll(fds, wait)
		if perr != nil {
			if errors.Is(perr, unix.EINTR) {
				continue
			}
			return pollExit(ctx, id, interval)
		}
		if n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0 {
			return map[string]any{"exited": true, "method": "pidfd_poll", "observed": "the held pidfd became readable (the process terminated)", "detected_at": contract.TS(time.Now())}, nil, nil
		}
	}
}

// exitedState reports, for a lifetime that no longer verifies as alive,
// what /proc shows now: "zombie" when the same lifetime (PID and start
// time, /proc/PID/stat fields 1 and 22) is in state Z or X (it has exited
// and only awaits reaping by its parent), "gone" when no process has the
// PID or another lifetime holds it, "" when /proc cannot be read (never
// taken as an exit).
func exitedState(id sample.Identity) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(id.PID)) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return "gone"
		}
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return ""
	}
	if start != id.StartTicks {
		return "gone"
	}
	if f[0] == "Z" || f[0] == "X" {
		return "zombie"
	}
	return ""
}
