//go:build linux

package capture

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PerfEventAccess is the result of ProbePerfEvents.
type PerfEventAccess struct {
	// Paranoid is /proc/sys/kernel/perf_event_paranoid, nil when unreadable.
	Paranoid *int `json:"perf_event_paranoid"`
	// Allowed says perf_event_open(2) of a user-space cpu-clock sampling
	// event on this process succeeded.
	Allowed bool `json:"perf_event_open"`
	// Errno names the perf_event_open failure (e.g. "EACCES"), "" when
	// allowed.
	Errno string `json:"errno,omitempty"`
	// Guidance says how to get access when not allowed.
	Guidance string `json:"guidance,omitempty"`
}

// ProbePerfEvents checks, without starting any process, whether this
// process may open the kind of event `perf record` needs: it opens (and
// closes at once) a disabled PERF_TYPE_SOFTWARE / PERF_COUNT_SW_CPU_CLOCK
// sampling event with a user callchain, excluding kernel and hypervisor,
// on itself. EACCES/EPERM mean perf_event_paranoid, a missing
// CAP_PERFMON or a seccomp policy forbids it; ENOSYS/ENOENT mean the kernel
// has no perf events.
func ProbePerfEvents() PerfEventAccess {
	var a PerfEventAccess
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			a.Paranoid = &n
		}
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_CPU_CLOCK,
		Sample:      4000,
		Sample_type: unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_CALLCHAIN,
		Bits:        unix.PerfBitDisabled | unix.PerfBitFreq | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
		a.Allowed = true
		return a
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		a.Errno = unix.ErrnoName(errno)
	} else {
		a.Errno = err.Error()
	}
	switch {
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		p := "unknown"
		if a.Paranoid != nil {
			p = strconv.Itoa(*a.Paranoid)
		}
		a.Guidance = "perf_event_open is denied (perf_event_paranoid is " + p + "): an administrator can run `sysctl kernel.perf_event_paranoid=1` to allow user-space profiling of your own processes, or grant CAP_PERFMON; in a container, the runtime's seccomp profile must also allow perf_event_open (e.g. docker run --cap-add PERFMON)"
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP):
		a.Guidance = "this kernel has no usable perf events (CONFIG_PERF_EVENTS); perf cannot record here"
	default:
		a.Guidance = "perf_event_open failed (" + a.Errno + "); perf cannot record here"
	}
	return a
}
