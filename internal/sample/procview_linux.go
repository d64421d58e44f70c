//go:build linux

package sample

import (
	"os"
)

// ReadProcView reads the view of the proc mount at root ("" means
// /proc) from /proc/self/mountinfo, /proc/self/status and
// /proc/loadavg. Facts that cannot be read stay at their zero or -1
// values (no evidence is made up).
func ReadProcView(root string) ProcView {
	if root == "" {
		root = "/proc"
	}
	v := ProcView{HideGID: -1, KernelTasks: -1}
	if b, err := os.ReadFile(root + "/self/mountinfo"); err == nil {
		if opts, ok, covered := parseProcMount(b, root); ok {
			v.MountPoint, v.Options, v.CoveredPIDs = root, opts, covered
			if h, ok := optionValue(opts, "hidepid"); ok {
				v.HidePID = h
			}
			if g, ok := optionValue(opts, "gid"); ok {
				if n, err := parseGID(g); err == nil {
					v.HideGID = n
				}
			}
			if s, ok := optionValue(opts, "subset"); ok && s == "pid" {
				v.SubsetPID = true
			}
		}
	}
	if !hidePIDOff(v.HidePID) && os.Geteuid() != 0 && !inGroup(v.HideGID) {
		v.HidePIDApplies = true
	}
	if b, err := os.ReadFile(root + "/self/status"); err == nil {
		if pids, ok := ParseNSpid(b); ok && len(pids) > 1 {
			v.NestedPIDNamespace = true
		}
	}
	if b, err := os.ReadFile(root + "/loadavg"); err == nil {
		if n, ok := parseLoadavgTasks(b); ok {
			v.KernelTasks = n
		}
	}
	return v
}

func inGroup(gid int64) bool {
	if gid < 0 {
		return false
	}
	if int64(os.Getegid()) == gid {
		return true
	}
	gs, _ := os.Getgroups()
	for _, g := range gs {
		if int64(g) == gid {
			return true
		}
	}
	return false
}
