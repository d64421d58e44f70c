//go:build linux

package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
	// Hierarchy is the cgroup v2 mount (/sys/fs/cgroup, or
	// /sys/fs/cgroup/unified on a hybrid layout); "" without one.
	Hierarchy string `json:"hierarchy,omitempty"`
	// Path is this process's v2 cgroup (the "0::" line of
	// /proc/self/cgroup), "" without a v2 hierarchy.
	Path string `json:"path,omitempty"`
	// Writable says the cgroup directory is writable by this process
	// (access(2) W_OK): a delegation under which leaves can be created.
	Writable bool `json:"writable"`
	// SubtreeControllers are the controllers enabled for children
	// (cgroup.subtree_control of Path).
	SubtreeControllers []string `json:"subtree_controllers"`
	// Usable says a per-run leaf can be created (a v2 hierarchy and a
	// writable delegation); its processes are then killed through
	// cgroup.kill when the kernel has it (Linux 5.14+).
	Usable bool `json:"usable"`
	// Memory says the leaf gets the memory controller (memory enabled in
	// subtree_control), so a memory budget is memory.max instead of
	// RLIMIT_AS.
	Memory bool `json:"memory"`
	// Reason explains Usable and Memory in words.
	Reason string `json:"reason"`
}

const cgroup2Magic = 0x63677270

func isCgroup2(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && fs.Type == cgroup2Magic
}

// DetectCgroup inspects the cgroup hierarchy this process runs in; it
// creates nothing. Facts: statfs(2) of /sys/fs/cgroup and
// /sys/fs/cgroup/unified, the "0::" line of /proc/self/cgroup, access(2)
// on the cgroup directory, its cgroup.subtree_control.
func DetectCgroup() CgroupInfo {
	var c CgroupInfo
	root := "/sys/fs/cgroup"
	switch {
	case isCgroup2(root):
		c.Layout, c.Hierarchy = CgroupUnified, root
	case isCgroup2(root + "/unified"):
		c.Layout, c.Hierarchy = CgroupHybrid, root+"/unified"
	default:
		if _, err := os.Stat(root + "/memory"); err == nil {
			c.Layout = CgroupLegacy
			c.Reason = "cgroup v1 only (no cgroup v2 hierarchy): no leaf; process group and RLIMIT_AS apply"
		} else {
			c.Layout = CgroupNone
			c.Reason = "no cgroup file system at /sys/fs/cgroup: no leaf; process group and RLIMIT_AS apply"
		}
		return c
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			c.Path = p
		}
	}
	if c.Path == "" || strings.Contains(c.Path, "(deleted)") {
		c.Reason = "a cgroup v2 hierarchy exists but /proc/self/cgroup has no usable v2 entry: no leaf; process group and RLIMIT_AS apply"
		return c
	}
	dir := filepath.Join(c.Hierarchy, c.Path)
	c.Writable = unix.Access(dir, unix.W_OK) == nil
	if sc, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil {
		c.SubtreeControllers = strings.Fields(string(sc))
	}
	for _, s := range c.SubtreeControllers {
		c.Memory = c.Memory || s == "memory"
	}
	layout := "cgroup v2"
	if c.Layout == CgroupHybrid {
		layout = "hybrid cgroup layout (v1 controllers; a cgroup v2 hierarchy at " + c.Hierarchy + ")"
	}
	switch {
	case !c.Writable:
		c.Memory = false
		c.Reason = layout + ": " + c.Path + " is not delegated to this user (not writable): no leaf; process group and RLIMIT_AS apply"
	case !c.Memory:
		c.Usable = true
		c.Reason = layout + ": writable delegation at " + c.Path + " without the memory controller for children: a leaf owns the tree (cgroup.kill); memory budgets use RLIMIT_AS"
	default:
		c.Usable = true
		c.Reason = layout + ": writable delegation at " + c.Path + " with the memory controller: a leaf owns the tree (cgroup.kill) and memory.max bounds it"
	}
	return c
}

// leaf is one run's cgroup: created under the delegation, entered by the
// workload at clone (CLONE_INTO_CGROUP), removed after the run.
type leaf struct {
	dir    string
	fd     int
	memory bool
}

// newLeaf creates dir/inquest-TOKEN under c's delegation and, when c has
// the memory controller and limit > 0, sets memory.max to limit and
// memory.swap.max to 0. It fails (and removes what it made) when the
// kernel offers no cgroup.kill in the new leaf.
func newLeaf(c CgroupInfo, token string, limit int64) (*leaf, error) {
	dir := filepath.Join(c.Hierarchy, c.Path, "inquest-"+token)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	l := &leaf{dir: dir, fd: -1}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		l.remove()
		return nil, errors.New("the kernel has no cgroup.kill (Linux 5.14+)")
	}
	if c.Memory && limit > 0 {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
			l.remove()
			return nil, err
		}
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
		l.memory = true
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		l.remove()
		return nil, err
	}
	l.fd = fd
	return l, nil
}

// procs lists the leaf's processes (cgroup.procs).
func (l *leaf) procs() []int {
	b, _ := os.ReadFile(filepath.Join(l.dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// kill SIGKILLs every process of the leaf at once (cgroup.kill).
func (l *leaf) kill() { _ = os.WriteFile(filepath.Join(l.dir, "cgroup.kill"), []byte("1"), 0) }

// oomKilled reports memory.events oom_kill > 0: the kernel killed a
// process of the leaf for exceeding memory.max.
func (l *leaf) oomKilled() bool {
	b, _ := os.ReadFile(filepath.Join(l.dir, "memory.events"))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(v) != "0" {
			return true
		}
	}
	return false
}

// remove closes the leaf and removes its directory once it is empty
// (killed processes leave it as they exit; bounded wait of about 1 s).
func (l *leaf) remove() {
	if l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
	for i := 0; i < 1000; i++ {
		if err := unix.Rmdir(l.dir); err == nil || errors.Is(err, unix.ENOENT) || !errors.Is(err, unix.EBUSY) {
			return
		}
		l.kill()
		time.Sleep(time.Millisecond)
	}
}
