//go:build linux

package perf

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
	"unsafe"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/perf/capture"
	"github.com/inquest-dev/inquest/internal/tool"
	"golang.org/x/sys/unix"
)

// ProviderKinds are the capture providers prepare_providers reports on, in
// order. Offered ones feed capture tools in this build.
var ProviderKinds = []string{"direct", "go-test", "pprof-http", "perf", "py-spy"}

// offeredProviders are the provider kinds some capture tool accepts.
func offeredProviders() map[string]bool {
	m := map[string]bool{}
	for _, ck := range captureKinds() {
		for _, p := range ck.providers {
			m[p] = true
		}
	}
	return m
}

// prepareArgs are prepare_providers' arguments.
type prepareArgs struct {
	Providers []string `json:"providers,omitempty"`
}

func (rt *Runtime) prepareTool() tool.Tool {
	return tool.Define(tool.Tool{
		Name: "prepare_providers", Toolset: tool.Perf, Title: "Prepare capture providers",
		Description: "Report each capture provider's availability, version and permissions on this host, checked as a capture checks them; never installs anything. No argument is required.",
		Input: object(js{
			"providers": js{"type": "array", "minItems": 1, "maxItems": 5, "uniqueItems": true, "items": js{"enum": ProviderKinds}, "description": "Default: every provider."},
		}).json(),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true, OpenWorld: true},
	}, func(ctx context.Context, in prepareArgs) (*contract.Result, error) {
		if len(in.Providers) == 0 {
			in.Providers = ProviderKinds
		}
		offered := offeredProviders()
		var rows []any
		unavailable := 0
		for _, p := range in.Providers {
			row := probeProvider(ctx, p)
			row["offered"] = offered[p]
			if !offered[p] {
				row["not_offered_reason"] = "no capture tool of this build accepts provider " + p
			}
			if row["available"] != true {
				unavailable++
			}
			rows = append(rows, row)
		}
		res := contract.NewResult("host", time.Now(), map[string]any{"providers": rows, "unavailable": unavailable})
		return res, nil
	})
}

// versionOf runs argv with a 10 s deadline and returns its first output
// line.
func versionOf(ctx context.Context, argv ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if len(line) > 256 {
		line = line[:256]
	}
	return line, true
}

func probeProvider(ctx context.Context, p string) map[string]any {
	row := map[string]any{"provider": p, "available": false, "version": nil, "executable": nil}
	lookup := func(name string) (string, bool) {
		exe, err := capture.LookPath(name, os.Environ())
		if err != nil {
			return "", false
		}
		row["executable"] = exe
		return exe, true
	}
	switch p {
	case "direct":
		row["available"] = true
		perm := map[string]any{"cgroup": capture.CgroupStatus()}
		// PR_GET_CHILD_SUBREAPER succeeding means the kernel supports
		// subreapers (Linux 3.4+); the probe changes nothing.
		var v int32
		perm["subreaper"] = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0) == nil
		row["permission"] = perm
		var u unix.Utsname
		if unix.Uname(&u) == nil {
			row["version"] = "linux " + unix.ByteSliceToString(u.Release[:])
		}
	case "go-test":
		exe, ok := lookup("go")
		if !ok {
			row["guidance"] = "install a Go toolchain (https://go.dev/dl/, or the distribution's golang package) and put its bin directory on PATH"
			break
		}
		if v, ok := versionOf(ctx, exe, "version"); ok {
			row["available"], row["version"] = true, v
		} else {
			row["guidance"] = "`go version` failed; check the Go installation"
		}
	case "pprof-http":
		row["available"] = true
		row["version"] = nil
		row["permission"] = map[string]any{"addresses": "loopback only (127.0.0.0/8, ::1)"}
	case "perf":
		paranoid := readTrim("/proc/sys/kernel/perf_event_paranoid")
		row["permission"] = map[string]any{"perf_event_paranoid": paranoid, "euid": os.Geteuid()}
		exe, ok := lookup("perf")
		if !ok {
			row["guidance"] = "install perf (Debian: linux-perf; Fedora: perf) matching the running kernel"
			break
		}
		v, ok := versionOf(ctx, exe, "--version")
		if !ok {
			row["guidance"] = "`perf --version` failed; install the perf build for the running kernel"
			break
		}
		row["version"] = v
		// The check a capture makes before launch: perf_event_open itself.
		pa := capture.ProbePerfEvents()
		row["permission"].(map[string]any)["perf_event_open"] = pa.Allowed
		if !pa.Allowed {
			row["permission"].(map[string]any)["errno"] = pa.Errno
			row["guidance"] = pa.Guidance
			break
		}
		row["available"] = true
	case "py-spy":
		exe, ok := lookup("py-spy")
		if !ok {
			row["guidance"] = "install py-spy (pip install py-spy, or a release binary from https://github.com/benfred/py-spy) and put it on PATH"
			break
		}
		if v, ok := versionOf(ctx, exe, "--version"); ok {
			row["available"], row["version"] = true, v
		}
	}
	return row
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
