//go:build !linux

package host

import (
	"runtime"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/host"
)

// systemInfo reads host and CPU facts through gopsutil.
func systemInfo() map[string]any {
	info := map[string]any{"os": runtime.GOOS, "architecture": runtime.GOARCH}
	if hi, err := host.Info(); err == nil {
		info["hostname"] = hi.Hostname
		info["kernel_version"] = hi.KernelVersion
		info["distribution"] = hi.Platform + " " + hi.PlatformVersion
		info["boot_time_unix"] = hi.BootTime
	}
	if ci, err := cpu.Info(); err == nil && len(ci) > 0 {
		info["cpu"] = map[string]any{"model_name": ci[0].ModelName, "vendor": ci[0].VendorID, "mhz": ci[0].Mhz, "cache_size": ci[0].CacheSize}
	}
	return info
}
