//go:build linux

package host

import (
	"os"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// systemInfo reads uname(2), /etc/os-release and /proc/cpuinfo.
func systemInfo() map[string]any {
	info := map[string]any{}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		info["os"] = unix.ByteSliceToString(u.Sysname[:])
		info["kernel_release"] = unix.ByteSliceToString(u.Release[:])
		info["kernel_version"] = unix.ByteSliceToString(u.Version[:])
		info["architecture"] = unix.ByteSliceToString(u.Machine[:])
		info["hostname"] = unix.ByteSliceToString(u.Nodename[:])
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				info["distribution"] = strings.Trim(v, `"`)
			}
		}
	}
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if ci, err := fs.CPUInfo(); err == nil && len(ci) > 0 {
			sockets := map[string]bool{}
			cores := map[string]bool{}
			for _, c := range ci {
				sockets[c.PhysicalID] = true
				cores[c.PhysicalID+"/"+c.CoreID] = true
			}
			info["cpu"] = map[string]any{
				"model_name":     ci[0].ModelName,
				"vendor":         ci[0].VendorID,
				"sockets":        len(sockets),
				"physical_cores": len(cores),
				"logical_cpus":   len(ci),
				"cache_size":     ci[0].CacheSize,
				"mhz":            ci[0].CPUMHz,
			}
		}
		if st, err := fs.Stat(); err == nil {
			info["boot_time_unix"] = st.BootTime
		}
	}
	return info
}
