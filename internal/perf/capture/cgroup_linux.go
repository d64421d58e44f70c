//go:build linux

package capture

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Cgroup hierarchy layouts reported by DetectCgroup.
const (
	// CgroupUnified: /sys/fs/cgroup is a cgroup2 file system (v2 only).
	CgroupUnified = "v2"
	// CgroupHybrid: /sys/fs/cgroup holds v1 controller hierarchies and a
	// controller-less cgroup2 hierarchy at /sys/fs/cgroup/unified.
	CgroupHybrid = "hybrid"
	// CgroupLegacy: only v1 hierarchies.
	CgroupLegacy = "v1"
	// CgroupNone: no cgroup file system at /sys/fs/cgroup.
	CgroupNone = "none"
)

// CgroupInfo is what DetectCgroup found.
type CgroupInfo struct {
	// Layout is CgroupUnified, CgroupHybrid, CgroupLegacy or CgroupNone,
	// from statfs(2) of /sys/fs/cgroup (CGROUP2_SUPER_MAGIC) and of
	// /sys/fs/cgroup/unified.
	Layout string `json:"layout"`
	// Path is this process's v2 cgroup (the "0::" line of
	// /proc/self/cgroup), "" without a unified hierarchy.
	Path string `json:"path,omitempty"`
	// Writable says the cgroup directory and its cgroup.subtree_control
	// are writable by this process (access(2) W_OK): a delegation.
	Writable bool `json:"writable"`
	// SubtreeControllers are the controllers enabled for children
	// (cgroup.subtree_control of Path).
	SubtreeControllers []string `json:"subtree_controllers"`
	// Kill says the cgroup has cgroup.kill (Linux 5.14+).
	Kill bool `json:"cgroup_kill"`
	// Usable says a per-request leaf with memory.max could be created
	// here: unified layout, writable delegation, memory enabled in
	// subtree_control.
	Usable bool `json:"usable"`
	// Reason explains Usable in words.
	Reason string `json:"reason"`
}

const cgroup2Magic = 0x63677270

func isCgroup2(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && fs.Type == cgroup2Magic
}

// DetectCgroup inspects the cgroup hierarchy this process runs in; it
// creates nothing. Facts: statfs(2) of /sys/fs/cgroup and
// /sys/fs/cgroup/unified, /proc/self/cgroup, access(2) on the cgroup
// directory, its cgroup.subtree_control and cgroup.kill.
func DetectCgroup() CgroupInfo {
	var c CgroupInfo
	root := "/sys/fs/cgroup"
	switch {
	case isCgroup2(root):
		c.Layout = CgroupUnified
	case isCgroup2(root + "/unified"):
		c.Layout = CgroupHybrid
		c.Reason = "cgroup v1 controllers (hybrid hierarchy): the cgroup v2 hierarchy at /sys/fs/cgroup/unified has no memory controller; process group and RLIMIT_AS apply"
		return c
	default:
		if _, err := os.Stat(root + "/memory"); err == nil {
			c.Layout = CgroupLegacy
			c.Reason = "cgroup v1 only (no cgroup v2 hierarchy): process group and RLIMIT_AS apply"
		} else {
			c.Layout = CgroupNone
			c.Reason = "no cgroup file system at /sys/fs/cgroup: process group and RLIMIT_AS apply"
		}
		return c
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			c.Path = p
		}
	}
	if c.Path == "" {
		c.Reason = "cgroup v2 detected but /proc/self/cgroup has no v2 entry: process group and RLIMIT_AS apply"
		return c
	}
	dir := filepath.Join(root, c.Path)
	c.Writable = unix.Access(dir, unix.W_OK) == nil && unix.Access(filepath.Join(dir, "cgroup.subtree_control"), unix.W_OK) == nil
	if sc, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil {
		c.SubtreeControllers = strings.Fields(string(sc))
	}
	_, err := os.Stat(filepath.Join(dir, "cgroup.kill"))
	c.Kill = err == nil
	memory := false
	for _, s := range c.SubtreeControllers {
		memory = memory || s == "memory"
	}
	switch {
	case !c.Writable:
		c.Reason = "cgroup v2 detected but " + c.Path + " is not delegated to this user (not writable): process group and RLIMIT_AS apply"
	case !memory:
		c.Reason = "cgroup v2 delegation at " + c.Path + " does not enable the memory controller for children: process group and RLIMIT_AS apply"
	default:
		c.Usable = true
		c.Reason = "writable cgroup v2 delegation at " + c.Path + " with the memory controller"
	}
	return c
}
