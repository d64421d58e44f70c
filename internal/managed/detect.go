// Package managed finds the managed runtime (JVM, .NET) inside a process
// and reads the runtime's own metrics passively: for a HotSpot JVM its
// performance-data file (package hsperf), for .NET it detects the
// diagnostic IPC socket. Nothing here attaches to, signals or writes to
// the process.
package managed

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/managed/hsperf"
)

// Runtime families Detect reports.
const (
	RuntimeJVM     = "jvm"
	RuntimeDotnet  = "dotnet"
	RuntimeNone    = "none"
	RuntimeUnknown = "unknown"
)

// Unavailable reasons: why a detected runtime's metrics cannot be read.
// They are safe to show (no paths of other users, no file contents).
const (
	// ReasonPerfDataDisabled: a HotSpot JVM without a performance-data
	// file (started with -XX:-UsePerfData, or the file was removed).
	ReasonPerfDataDisabled = "perf_data_disabled"
	// ReasonPermission: the file or the process's /proc entries belong to
	// another user.
	ReasonPermission = "permission"
	// ReasonUnreadable: the file could not be read for another reason.
	ReasonUnreadable = "unreadable"
	// ReasonTruncated, ReasonCorrupt, ReasonOversized: the file is not a
	// readable performance-data file (hsperf.FormatError).
	ReasonTruncated = "truncated"
	ReasonCorrupt   = "corrupt"
	ReasonOversized = "oversized"
	// ReasonNotReady: the JVM is still creating the file.
	ReasonNotReady = "not_ready"
	// ReasonStale: the file belongs to an earlier JVM with the same pid
	// (its VM creation time is before this process started).
	ReasonStale = "stale_file"
	// ReasonDotnetUnsupported: .NET collection needs a .NET runtime to
	// test against, which this build was not tested with.
	ReasonDotnetUnsupported = "dotnet_unsupported"
)

// Detection is what Detect found in one process.
type Detection struct {
	// Runtime is RuntimeJVM, RuntimeDotnet, RuntimeNone or RuntimeUnknown.
	Runtime string
	// Reason explains RuntimeUnknown, or why a detected runtime is
	// unavailable (one of the Reason* constants); "" otherwise.
	Reason string
	// Detail is a human sentence for Reason.
	Detail string
	// PerfPath is the performance-data file of a JVM ("" without one).
	PerfPath string
	// SocketPath is the diagnostic socket of a .NET process.
	SocketPath string
}

// Proc names a process under a /proc root ("/proc" on a live system).
type Proc struct {
	Root string
	PID  int32
}

func (p Proc) path(parts ...string) string {
	return filepath.Join(append([]string{p.Root, strconv.Itoa(int(p.PID))}, parts...)...)
}

// NSPid returns the process's pid inside its own pid namespace (the last
// field of NSpid in /proc/PID/status), or its pid when that line is
// absent (kernels before 4.1, or no namespace).
func (p Proc) NSPid() int32 {
	f, err := os.Open(p.path("status"))
	if err != nil {
		return p.PID
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "NSpid:"); ok {
			fs := strings.Fields(v)
			if len(fs) > 0 {
				if n, err := strconv.ParseInt(fs[len(fs)-1], 10, 32); err == nil {
					return int32(n)
				}
			}
		}
	}
	return p.PID
}

// PerfDataPath finds the JVM's hsperfdata file: first inside the
// process's mount namespace (/proc/PID/root/tmp/hsperfdata_*/NSPID, which
// also reaches a JVM in a container), then in this namespace's
// /tmp/hsperfdata_*/PID. It returns the path, or an error: fs.ErrNotExist
// when there is none, fs.ErrPermission when the process's root cannot be
// entered and no file is visible from here.
func (p Proc) PerfDataPath() (string, error) {
	ns := strconv.Itoa(int(p.NSPid()))
	rootTmp := p.path("root", "tmp")
	var rootErr error
	if ents, err := os.ReadDir(rootTmp); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "hsperfdata_") {
				c := filepath.Join(rootTmp, e.Name(), ns)
				if st, err := os.Lstat(c); err == nil && st.Mode().IsRegular() {
					return c, nil
				}
			}
		}
		return "", fs.ErrNotExist
	} else {
		rootErr = err
	}
	// The root is not enterable (another user): the shared /tmp of this
	// namespace may still show the file (its directory is world-readable).
	if ms, _ := filepath.Glob(filepath.Join("/tmp", "hsperfdata_*", strconv.Itoa(int(p.PID)))); len(ms) > 0 {
		return ms[0], nil
	}
	if errors.Is(rootErr, fs.ErrPermission) {
		return "", fs.ErrPermission
	}
	return "", fs.ErrNotExist
}

// mapsHas reports whether the process maps a file whose path ends in one
// of suffixes; err is the error reading /proc/PID/maps.
func (p Proc) mapsHas(suffixes ...string) (string, error) {
	f, err := os.Open(p.path("maps"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.LimitReader(f, 64<<20), 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		line = bytes.TrimRight(line, "\n")
		for _, s := range suffixes {
			if bytes.HasSuffix(line, []byte(s)) {
				return s, nil
			}
		}
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
		}
		if err != nil {
			if err == io.EOF {
				return "", nil
			}
			return "", err
		}
	}
}

// cmdlineFlag returns the first of flags that appears as an argument in
// /proc/PID/cmdline or in the process's JAVA_TOOL_OPTIONS / JDK_JAVA_OPTIONS
// ("" when none does or they are unreadable).
func (p Proc) cmdlineFlag(flags ...string) string {
	var args [][]byte
	if b, err := os.ReadFile(p.path("cmdline")); err == nil {
		args = bytes.Split(b, []byte{0})
	}
	if env, err := os.ReadFile(p.path("environ")); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			for _, k := range []string{"JAVA_TOOL_OPTIONS=", "JDK_JAVA_OPTIONS="} {
				if v, ok := bytes.CutPrefix(kv, []byte(k)); ok {
					args = append(args, bytes.Fields(v)...)
				}
			}
		}
	}
	for _, f := range flags {
		for _, a := range args {
			if string(a) == f {
				return f
			}
		}
	}
	return ""
}

// DotnetSocket finds the .NET diagnostic IPC socket
// dotnet-diagnostic-NSPID-*-socket in the process's TMPDIR (from its
// environment when readable) or /tmp, inside its mount namespace.
func (p Proc) DotnetSocket() string {
	dirs := []string{"/tmp"}
	if env, err := os.ReadFile(p.path("environ")); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("TMPDIR=")); ok && len(v) > 0 && v[0] == '/' {
				dirs = append([]string{filepath.Clean(string(v))}, dirs...)
			}
		}
	}
	pat := "dotnet-diagnostic-" + strconv.Itoa(int(p.NSPid())) + "-*-socket"
	for _, d := range dirs {
		for _, base := range []string{p.path("root"), ""} {
			ms, _ := filepath.Glob(filepath.Join(base, d, pat))
			for _, m := range ms {
				if st, err := os.Lstat(m); err == nil && st.Mode()&fs.ModeSocket != 0 {
					return m
				}
			}
		}
	}
	return ""
}

// Detect finds the managed runtime of process p. exe is the process's
// executable path ("" when unreadable), used only when /proc/PID/maps is
// not readable.
func Detect(p Proc, exe string) Detection {
	path, perr := p.PerfDataPath()
	if perr == nil {
		return Detection{Runtime: RuntimeJVM, PerfPath: path}
	}
	if s := p.DotnetSocket(); s != "" {
		return Detection{Runtime: RuntimeDotnet, SocketPath: s, Reason: ReasonDotnetUnsupported, Detail: dotnetDetail}
	}
	lib, merr := p.mapsHas("/libjvm.so", "/libcoreclr.so")
	switch {
	case lib == "/libjvm.so":
		if errors.Is(perr, fs.ErrPermission) {
			return Detection{Runtime: RuntimeJVM, Reason: ReasonPermission, Detail: "the JVM's performance-data file is not reachable: the process belongs to another user"}
		}
		switch p.cmdlineFlag("-XX:-UsePerfData", "-XX:+PerfDisableSharedMem") {
		case "":
			// libjvm is mapped and nothing disables the file: the VM is
			// still initializing (the file appears during VM creation).
			return Detection{Runtime: RuntimeJVM, Reason: ReasonNotReady, Detail: "the JVM has not created its performance-data file yet (VM initialization)"}
		case "-XX:+PerfDisableSharedMem":
			return Detection{Runtime: RuntimeJVM, Reason: ReasonPerfDataDisabled, Detail: "this HotSpot JVM keeps its performance data in private memory (-XX:+PerfDisableSharedMem), so no other process can read it; restart it without that flag to collect"}
		}
		return Detection{Runtime: RuntimeJVM, Reason: ReasonPerfDataDisabled, Detail: "this HotSpot JVM runs with -XX:-UsePerfData, so it writes no performance data; restart it without that flag to collect"}
	case lib == "/libcoreclr.so":
		return Detection{Runtime: RuntimeDotnet, Reason: ReasonDotnetUnsupported, Detail: dotnetDetail}
	case merr != nil:
		base := filepath.Base(exe)
		if base == "java" || base == "javaw" {
			return Detection{Runtime: RuntimeJVM, Reason: ReasonPermission, Detail: "the process runs java but its memory maps and performance data belong to another user"}
		}
		if errors.Is(merr, fs.ErrPermission) {
			return Detection{Runtime: RuntimeUnknown, Reason: ReasonPermission, Detail: "/proc/PID/maps is not readable (another user's process); the runtime cannot be told"}
		}
		return Detection{Runtime: RuntimeUnknown, Reason: ReasonUnreadable, Detail: "/proc/PID/maps could not be read; the runtime cannot be told"}
	}
	return Detection{Runtime: RuntimeNone}
}

const dotnetDetail = "a .NET runtime was detected by its diagnostic socket, but inquest does not read .NET counters yet: no .NET runtime that runs on this platform was available to build and test the diagnostics-protocol reader against"

// ReadPerf reads and parses a JVM's performance data at path and checks
// it belongs to a VM created no earlier than startMS (the process's start
// in ms since the epoch; 0 skips the check). The error's reason is
// ReasonOf's.
func ReadPerf(path string, startMS int64) (*hsperf.File, *JVM, error) {
	f, err := hsperf.Read(path)
	if err != nil {
		return nil, nil, err
	}
	j := ReadJVM(f)
	// The process's start time has clock-tick (10 ms) resolution and the
	// VM is created after exec: a VM created a second or more before the
	// process started is an earlier JVM's leftover file.
	if startMS > 0 && j.CreateVMBeginMS > 0 && j.CreateVMBeginMS < startMS-1000 {
		return nil, nil, errStale
	}
	return f, j, nil
}

var errStale = errors.New("the performance-data file belongs to an earlier JVM with the same pid")

// ReasonOf classifies an error of PerfDataPath or ReadPerf as an
// unavailable reason.
func ReasonOf(err error) string {
	switch {
	case err == nil:
		return ""
	case err == errStale:
		return ReasonStale
	case errors.Is(err, fs.ErrPermission):
		return ReasonPermission
	case errors.Is(err, fs.ErrNotExist):
		return ReasonPerfDataDisabled
	}
	switch hsperf.ReasonOf(err) {
	case hsperf.ReasonTruncated:
		return ReasonTruncated
	case hsperf.ReasonCorrupt:
		return ReasonCorrupt
	case hsperf.ReasonOversized:
		return ReasonOversized
	case hsperf.ReasonNotReady:
		return ReasonNotReady
	}
	return ReasonUnreadable
}
