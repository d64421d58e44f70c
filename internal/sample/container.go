package sample

import (
	"bytes"
	"strings"
)

// Container runtimes ParseCgroup recognizes (Container.Runtime).
const (
	RuntimeDocker     = "docker"
	RuntimePodman     = "podman"
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
	RuntimeKubernetes = "kubernetes"
	RuntimeNspawn     = "systemd-nspawn"
	RuntimeLXC        = "lxc"
	// RuntimeNone is a process in a host cgroup: the root, init.scope,
	// a system.slice service or a user.slice session (no container).
	RuntimeNone = "none"
	// RuntimeUnknown is a cgroup path no rule fits, or a cgroup file that
	// could not be read (Reason says why): never a guess.
	RuntimeUnknown = "unknown"
)

// Container is the container a process runs in, as its cgroup path says
// (ParseCgroup; the rules are in docs/captures.md, "Containers").
type Container struct {
	// Runtime is one of the Runtime* constants.
	Runtime string
	// ID is the container id the runtime prints (64 hex digits for
	// docker, podman, containerd, cri-o and kubernetes containers; the
	// machine or container name for systemd-nspawn and lxc); "" when
	// Runtime is none or unknown.
	ID string
	// Pod is the kubernetes pod UID (dashes restored), "" otherwise.
	Pod string
	// Engine is the CRI runtime of a kubernetes container ("containerd",
	// "cri-o", "docker"; "" when the path does not say).
	Engine string
	// Cgroup is the raw cgroup path the rule read (the unified "0::"
	// line's, else the first v1 hierarchy's that matched), "" when the
	// file was not read.
	Cgroup string
	// Rule names the rule that matched (docs table), "" when none did.
	Rule string
	// Reason says why the cgroup file could not be read (Reason*
	// constants), "" when it was.
	Reason string
}

// InContainer reports whether a rule placed the process in a container.
func (c Container) InContainer() bool {
	return c.Runtime != RuntimeNone && c.Runtime != RuntimeUnknown && c.Runtime != ""
}

// ShortID is the first 12 characters of a hex container id (what docker
// ps and podman ps print), else the whole ID.
func (c Container) ShortID() string {
	if len(c.ID) == 64 && isHex(c.ID) {
		return c.ID[:12]
	}
	return c.ID
}

// Label is "runtime:shortid" for a container, the runtime alone
// otherwise (none, unknown).
func (c Container) Label() string {
	if !c.InContainer() {
		if c.Runtime == "" {
			return RuntimeUnknown
		}
		return c.Runtime
	}
	return c.Runtime + ":" + c.ShortID()
}

// ParseCgroup decides the container of a process from the text of its
// /proc/PID/cgroup ("hierarchy-ID:controllers:path" lines, cgroups(7)).
// Each line's path is tried against the rules, the unified hierarchy's
// line ("0::") first, then name=systemd, then the others in file order;
// the first path a rule fits decides. A path no rule fits makes Runtime
// RuntimeUnknown, with Cgroup kept.
func ParseCgroup(b []byte) Container {
	type line struct {
		ctrl, path string
	}
	var lines []line
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		l := b
		if i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		c1 := bytes.IndexByte(l, ':')
		if c1 < 0 {
			continue
		}
		c2 := bytes.IndexByte(l[c1+1:], ':')
		if c2 < 0 {
			continue
		}
		lines = append(lines, line{ctrl: string(l[c1+1 : c1+1+c2]), path: string(l[c1+1+c2+1:])})
	}
	if len(lines) == 0 {
		return Container{Runtime: RuntimeUnknown, Reason: ReasonUnreadable}
	}
	order := make([]line, 0, len(lines))
	for _, want := range []func(l line) bool{
		func(l line) bool { return l.ctrl == "" },
		func(l line) bool { return l.ctrl == "name=systemd" },
		func(l line) bool { return l.ctrl != "" && l.ctrl != "name=systemd" },
	} {
		for _, l := range lines {
			if want(l) {
				order = append(order, l)
			}
		}
	}
	// A container rule on any hierarchy wins over a host rule on another
	// (a hybrid host may leave the unified line at "/" while the v1
	// hierarchies hold the container's path).
	var host *Container
	for _, l := range order {
		c := MatchCgroupPath(l.path)
		if c.InContainer() {
			return c
		}
		if c.Runtime == RuntimeNone && host == nil {
			host = &c
		}
	}
	// Host rules must fit every hierarchy's path: one hierarchy at a path
	// no rule knows makes the whole answer unknown.
	if host != nil {
		for _, l := range order {
			if MatchCgroupPath(l.path).Runtime == RuntimeUnknown {
				return Container{Runtime: RuntimeUnknown, Cgroup: l.path}
			}
		}
		return *host
	}
	return Container{Runtime: RuntimeUnknown, Cgroup: order[0].path}
}

// MatchCgroupPath applies the rules to one cgroup path. Segments are read
// from the innermost out, so a container nested in another (docker in
// docker, a kubernetes node in a container) is the innermost one; a
// segment after the container's (a systemd inside it, runc's
// "/container" leaf) does not change the answer.
func MatchCgroupPath(path string) Container {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if path == "/" || path == "" {
		return Container{Runtime: RuntimeNone, Cgroup: path, Rule: "root"}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		var parent string
		if i > 0 {
			parent = segs[i-1]
		}
		c, ok := matchSegment(s, parent)
		if !ok {
			continue
		}
		c.Cgroup = path
		// a container under a kubernetes pod is that pod's container
		if uid, ok := podOf(segs[:i]); ok {
			c.Engine, c.Runtime, c.Pod = engineOf(c.Runtime), RuntimeKubernetes, uid
			c.Rule = "kubepods/" + c.Rule
		} else if c.Runtime == "" {
			// a bare id is a container only under a pod
			continue
		}
		return c
	}
	// host rules: the whole path
	switch {
	case len(segs) == 1 && segs[0] == "init.scope":
		return Container{Runtime: RuntimeNone, Cgroup: path, Rule: "init.scope"}
	case segs[0] == "system.slice" && len(segs) >= 2 && (strings.HasSuffix(segs[1], ".service") || strings.HasSuffix(segs[1], ".scope")) && !strings.HasPrefix(segs[1], "systemd-nspawn@"):
		return Container{Runtime: RuntimeNone, Cgroup: path, Rule: "system.slice/*.service"}
	case segs[0] == "user.slice":
		return Container{Runtime: RuntimeNone, Cgroup: path, Rule: "user.slice"}
	}
	return Container{Runtime: RuntimeUnknown, Cgroup: path}
}

// matchSegment applies the one-segment container rules to s (parent is
// the segment above it, "" at the top).
func matchSegment(s, parent string) (Container, bool) {
	scoped := func(prefix, runtime, rule string) (Container, bool) {
		if id, ok := strings.CutPrefix(s, prefix); ok {
			id = strings.TrimSuffix(id, ".scope")
			if isContainerID(id) {
				return Container{Runtime: runtime, ID: id, Rule: rule}, true
			}
		}
		return Container{}, false
	}
	for _, r := range []struct{ prefix, runtime, rule string }{
		{"docker-", RuntimeDocker, "docker-<id>.scope"},
		{"libpod-", RuntimePodman, "libpod-<id>"},
		{"cri-containerd-", RuntimeContainerd, "cri-containerd-<id>.scope"},
		{"crio-", RuntimeCRIO, "crio-<id>.scope"},
		{"nerdctl-", RuntimeContainerd, "nerdctl-<id>.scope"},
	} {
		if c, ok := scoped(r.prefix, r.runtime, r.rule); ok {
			return c, true
		}
	}
	if isContainerID(s) {
		switch {
		case parent == "docker":
			return Container{Runtime: RuntimeDocker, ID: s, Rule: "docker/<id>"}, true
		case strings.HasPrefix(parent, "pod") || strings.HasPrefix(parent, "kubepods"):
			// cgroupfs kubelet: kubepods[/qos]/pod<uid>/<id>; the engine
			// is not in the path
			return Container{Runtime: "", ID: s, Rule: "<id>"}, true
		}
	}
	if name, ok := strings.CutPrefix(s, "systemd-nspawn@"); ok && strings.HasSuffix(name, ".service") {
		name = unescapeUnit(strings.TrimSuffix(name, ".service"))
		if name != "" {
			return Container{Runtime: RuntimeNspawn, ID: name, Rule: "machine.slice/systemd-nspawn@<name>.service"}, true
		}
	}
	if name, ok := strings.CutPrefix(s, "lxc.payload."); ok && name != "" {
		return Container{Runtime: RuntimeLXC, ID: name, Rule: "lxc.payload.<name>"}, true
	}
	if parent == "lxc.payload" && s != "" {
		return Container{Runtime: RuntimeLXC, ID: s, Rule: "lxc.payload/<name>"}, true
	}
	if parent == "lxc" && s != "" {
		return Container{Runtime: RuntimeLXC, ID: s, Rule: "lxc/<name>"}, true
	}
	return Container{}, false
}

// podOf finds a kubernetes pod segment among segs (the segments above a
// container's): "pod<uid>" under a "kubepods" segment (cgroupfs driver)
// or "kubepods[-qos]-pod<uid_with_underscores>.slice" (systemd driver).
func podOf(segs []string) (string, bool) {
	under := false
	for _, s := range segs {
		if s == "kubepods" || s == "kubepods.slice" {
			under = true
		}
	}
	if !under {
		return "", false
	}
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if strings.HasPrefix(s, "kubepods") && strings.HasSuffix(s, ".slice") {
			if j := strings.LastIndex(s, "-pod"); j >= 0 {
				uid := strings.ReplaceAll(strings.TrimSuffix(s[j+4:], ".slice"), "_", "-")
				if isUID(uid) {
					return uid, true
				}
			}
		}
		if uid, ok := strings.CutPrefix(s, "pod"); ok && isUID(uid) {
			return uid, true
		}
	}
	return "", false
}

// engineOf names the CRI engine of a container rule under a pod.
func engineOf(runtime string) string {
	switch runtime {
	case RuntimeContainerd:
		return "containerd"
	case RuntimeCRIO:
		return "cri-o"
	case RuntimeDocker:
		return "docker"
	}
	return ""
}

// isContainerID reports a 64-hex-digit id (docker, podman, containerd,
// cri-o all name containers so).
func isContainerID(s string) bool { return len(s) == 64 && isHex(s) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// isUID reports a pod UID: 8-4-4-4-12 hex digits.
func isUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHex(s[i : i+1]) {
				return false
			}
		}
	}
	return true
}

// unescapeUnit undoes systemd's unit-name escaping of \xNN (systemd-escape).
func unescapeUnit(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' && isHex(strings.ToLower(s[i+2:i+4])) {
			var v byte
			for _, c := range strings.ToLower(s[i+2 : i+4]) {
				v <<= 4
				if c <= '9' {
					v |= byte(c - '0')
				} else {
					v |= byte(c-'a') + 10
				}
			}
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
