//go:build linux

package capture

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// listPIDs returns the numeric entries of /proc.
func listPIDs() ([]int32, error) {
	f, err := os.Open(procRoot)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]int32, 0, len(names))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		v, err := strconv.ParseInt(n, 10, 32)
		if err == nil {
			out = append(out, int32(v))
		}
	}
	return out, nil
}

// fdNames lists the entries of the pinned process's fd directory and
// returns an open descriptor of that directory (caller closes it).
func (p *pinned) fdNames(sub string) (int, []string, error) {
	dfd, err := unix.Openat(p.fd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	dup, err := unix.Dup(dfd)
	if err != nil {
		unix.Close(dfd)
		return -1, nil, err
	}
	f := os.NewFile(uintptr(dup), sub)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		unix.Close(dfd)
		return -1, nil, err
	}
	return dfd, names, nil
}

// FileUsers scans every readable /proc/PID/fd on the host and returns one
// row per (process, target path): process identity (Verified when the
// process's start time read before and after its fds agree), pid, name
// (comm), path (the fd link target as the kernel prints it, e.g.
// "/tmp/x", "socket:[123]", "/x (deleted)") and handle_count (fds of that
// process on that target). Rows keep scan order (PID directory order, fd
// order within a process, first occurrence of each path).
//
// Coverage: processes_listed, processes_examined, processes_denied (fd
// directory unreadable), processes_exited (ended before or during the
// scan), fds_examined, fds_failed (links that could not be read). Denied or
// exited processes make the capture partial: an empty partial result is not
// a negative finding. ctx cancellation stops the scan between processes.
func FileUsers(ctx context.Context) (*Capture, error) { return FileUsersFiltered(ctx, Filter{}) }

// FileUsersFiltered is FileUsers keeping only rows that match f
// (start_capture filter): a process whose executable and command names
// both differ from f.OwnerName is skipped before its fds are read
// (coverage processes_filtered_out), and a path that does not match
// f.Path/f.Extension is never kept (Capture.FilteredOut counts those
// distinct process/path rows).
func FileUsersFiltered(ctx context.Context, f Filter) (*Capture, error) {
	c := &Capture{Kind: KindFileUsers, Started: time.Now(), Coverage: map[string]any{}}
	pathFilter := Filter{Path: f.Path, Extension: f.Extension}
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	var examined, deniedN, exitedN, fdsSeen, fdsFailed, ownerSkipped int
	buf := make([]byte, 4096)
	type agg struct{ idx int }
	for i, pid := range pids {
		if i&15 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		p, err := openPinned(pid)
		if err != nil {
			exitedN++
			continue
		}
		st, err := p.stat()
		if err != nil {
			p.close()
			exitedN++
			continue
		}
		dfd, names, err := p.fdNames("fd")
		if err != nil {
			p.close()
			if denied(err) {
				deniedN++
			} else {
				exitedN++
			}
			continue
		}
		id := sample.Identity{PID: pid, StartTicks: st.startTicks}
		owner := p.processName(st.name, buf)
		if !f.MatchOwner(owner, st.name) {
			unix.Close(dfd)
			p.close()
			ownerSkipped++
			continue
		}
		// the process's fields, shared by its rows (one allocation each)
		var head []Field
		head = append(head, Field{"process_ref", nil}, Field{"pid", any(pid)})
		head = appendText(head, "name", owner)
		head = appendText(head, "comm", st.name)
		type key struct {
			link    string
			deleted Deletion
		}
		seen := map[key]int{} // -> index in c.Rows, -1 when filtered out
		first := len(c.Rows)
		var counts []int
		exitedMid := false
		deniedFds := 0
		for _, n := range names {
			fdsSeen++
			if fdsSeen&4095 == 0 {
				if err := ctxErr(ctx); err != nil {
					unix.Close(dfd)
					p.close()
					return nil, err
				}
			}
			link, err := readlinkAt(dfd, n, buf)
			if err != nil {
				fdsFailed++
				if denied(err) {
					deniedFds++
				}
				if gone(err) && !exitedMid {
					// ENOENT is also an fd closed between readdir and
					// readlink; check the process itself.
					if _, serr := p.stat(); serr != nil {
						exitedMid = true
					}
				}
				if exitedMid {
					break
				}
				continue
			}
			path, del := resolveLink(p.fd, dfd, n, link)
			k := key{string(link), del}
			if j, ok := seen[k]; ok {
				if j >= 0 {
					counts[j-first]++
				}
				continue
			}
			if !pathFilter.IsZero() && !pathFilter.Match(&Row{Path: path}) {
				seen[k] = -1
				c.FilteredOut++
				continue
			}
			seen[k] = len(c.Rows)
			counts = append(counts, 1)
			fields := make([]Field, len(head), len(head)+5)
			copy(fields, head)
			fields = appendText(fields, "path", path)
			fields = append(fields, Field{"deleted", del.JSON()})
			c.Rows = append(c.Rows, Row{Path: path, Owner: owner, Comm: st.name, Proc: id, Fields: fields})
		}
		for j := first; j < len(c.Rows); j++ {
			r := &c.Rows[j]
			r.Fields = append(r.Fields, Field{"handle_count", counts[j-first]})
		}
		unix.Close(dfd)
		if deniedFds > 0 && deniedFds == len(names) {
			deniedN++ // the fd list was readable but no link was
		} else {
			examined++
		}
		verified := false
		if !exitedMid {
			if st2, err := p.stat(); err == nil && st2.startTicks == st.startTicks && st2.state != 'Z' {
				verified = true
			} else {
				exitedMid = true
			}
		}
		if exitedMid {
			exitedN++
		}
		p.close()
		for j := first; j < len(c.Rows); j++ {
			c.Rows[j].Verified = verified
		}
	}
	c.Finished = time.Now()
	c.Coverage["processes_listed"] = len(pids)
	c.Coverage["processes_examined"] = examined
	c.Coverage["processes_denied"] = deniedN
	c.Coverage["processes_exited"] = exitedN
	c.Coverage["fds_examined"] = fdsSeen
	c.Coverage["fds_failed"] = fdsFailed
	if f.OwnerName != "" {
		c.Coverage["processes_filtered_out"] = ownerSkipped
	}
	if deniedN > 0 {
		c.warn(strconv.Itoa(deniedN) + " processes' fd tables could not be read (access denied); their files are not listed")
	}
	if exitedN > 0 {
		c.warn(strconv.Itoa(exitedN) + " processes ended (or were zombies) before or during the scan; their files are listed only up to that point")
	}
	if fdsFailed > 0 {
		c.warn(strconv.Itoa(fdsFailed) + " fds could not be resolved (closed during the scan or access denied)")
	}
	return c, nil
}

// Deletion is sample.Deletion: whether a link target names an unlinked object.
type Deletion = sample.Deletion

// resolveLink decides whether the fd link target link (read from entry
// name of the fd directory dfd of the process pinned at pfd) names a
// deleted file, from the object's st_nlink and device/inode, not from the
// string (sample.ResolveDeleted). The object is stat'ed only when link ends
// in " (deleted)". It returns the path without the kernel's suffix when
// deleted.
func resolveLink(pfd, dfd int, name string, link []byte) (string, Deletion) {
	if !bytes.HasSuffix(link, []byte(sample.DeletedSuffix)) {
		return string(link), sample.NotDeleted
	}
	var st unix.Stat_t
	obj := &st
	if unix.Fstatat(dfd, name, &st, 0) != nil {
		obj = nil
	}
	return sample.ResolveDeleted(string(link), obj, sample.StatInRoot(pfd))
}

// processName applies the name rule (sample.FullName) to the pinned
// process: the base name of its executable (deletion suffix decided by
// resolveLink), else argv[0] when it extends comm, else comm.
func (p *pinned) processName(comm string, buf []byte) string {
	exe := ""
	if l, err := readlinkAt(p.fd, "exe", buf); err == nil {
		exe, _ = resolveLink(p.fd, p.fd, "exe", l)
	}
	argv0 := ""
	if exe == "" && len(comm) >= sample.MaxComm {
		if b, err := readAt(p.fd, "cmdline"); err == nil {
			if i := bytes.IndexByte(b, 0); i >= 0 {
				b = b[:i]
			}
			argv0 = string(b)
		}
	}
	return sample.FullName(exe, argv0, comm)
}

// appendText appends the JSON fields of a name or path value (exact bytes
// s): key with the display string, plus key_bytes (base64 of the exact
// bytes) only when the display string is lossy (sample.TextFields).
func appendText(fs []Field, key, s string) []Field {
	sample.TextFields(key, s, func(k string, v any) { fs = append(fs, Field{k, v}) })
	return fs
}

// testHookFD, when set by a test, runs before open_files reads fd i (to
// end the target mid-collection deterministically).
var testHookFD func(i int)

// fdKind classifies an fd link target and, for filesystem objects, the
// stat of the object: file, dir, socket, pipe, anon or device.
func fdKind(link string, st *unix.Stat_t) string {
	switch {
	case strings.HasPrefix(link, "socket:"):
		return "socket"
	case strings.HasPrefix(link, "pipe:"):
		return "pipe"
	case strings.HasPrefix(link, "anon_inode:"):
		return "anon"
	}
	if st == nil {
		if strings.HasPrefix(link, "/dev/") {
			return "device"
		}
		return "file"
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	case unix.S_IFIFO:
		return "pipe"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "file"
}

// fdInfo is what open_files takes from /proc/PID/fdinfo/N.
type fdInfo struct {
	pos      uint64
	flags    string // octal, as the kernel prints it
	hasPos   bool
	hasFlags bool
}

// parseFdinfo parses the "pos:" and "flags:" lines of an fdinfo file.
func parseFdinfo(b []byte) fdInfo {
	var fi fdInfo
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch string(k) {
		case "pos":
			if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
				fi.pos, fi.hasPos = n, true
			}
		case "flags":
			if _, err := strconv.ParseUint(string(v), 8, 64); err == nil && len(v) > 0 {
				fi.flags, fi.hasFlags = string(v), true
			}
		}
	}
	return fi
}

// OpenFiles lists the open fds of the verified process id. Rows: fd
// (decimal string, capture-local), path (link target), kind
// (file/dir/socket/pipe/anon/device), size_bytes (decimal string, regular
// files only), flags (octal string from fdinfo) and position (decimal
// string from fdinfo); fields that could not be read are null. Coverage:
// handle_count (fds listed) and query_failed (fds whose link could not be
// read). Errors: PROCESS_EXITED, IDENTITY_UNVERIFIABLE, ACCESS_DENIED.
func OpenFiles(ctx context.Context, id sample.Identity) (*Capture, error) {
	return OpenFilesFiltered(ctx, id, Filter{})
}

// OpenFilesFiltered is OpenFiles keeping only fds whose path matches
// f.Path and f.Extension (start_capture filter; open_files rows have no
// owner). A non-matching fd is neither stat'ed nor kept; Capture.FilteredOut
// counts them.
func OpenFilesFiltered(ctx context.Context, id sample.Identity, f Filter) (*Capture, error) {
	f = Filter{Path: f.Path, Extension: f.Extension}
	p, _, err := pinIdentity(id)
	if err != nil {
		return nil, err
	}
	defer p.close()
	c := &Capture{Kind: KindOpenFiles, Started: time.Now(), Coverage: map[string]any{}}
	dfd, names, err := p.fdNames("fd")
	if err != nil {
		if denied(err) {
			return nil, accessDenied("the process's fd table")
		}
		return finishTargeted(c, p, id, true)
	}
	defer unix.Close(dfd)
	infoFd, infoErr := unix.Openat(p.fd, "fdinfo", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if infoErr == nil {
		defer unix.Close(infoFd)
	}
	sortNumeric(names)
	buf := make([]byte, 4096)
	failed := 0
	exitedDuring := false
	for i, n := range names {
		if i&255 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		if testHookFD != nil {
			testHookFD(i)
		}
		link, err := readlinkAt(dfd, n, buf)
		if err != nil {
			failed++
			if gone(err) {
				if _, serr := p.stat(); serr != nil {
					exitedDuring = true
					break
				}
			}
			continue
		}
		path, del := resolveLink(p.fd, dfd, n, link)
		if !f.IsZero() && !f.Match(&Row{Path: path}) {
			c.FilteredOut++
			continue
		}
		var st unix.Stat_t
		stp := &st
		if unix.Fstatat(dfd, n, &st, 0) != nil {
			stp = nil
		}
		kind := fdKind(string(link), stp)
		var size, flags, pos any
		if stp != nil && kind == "file" {
			size = strconv.FormatInt(st.Size, 10)
		}
		if infoErr == nil {
			ib, err := readAt(infoFd, n)
			if err == nil {
				fi := parseFdinfo(ib)
				if fi.hasFlags {
					flags = fi.flags
				}
				if fi.hasPos {
					pos = strconv.FormatUint(fi.pos, 10)
				}
			}
		}
		fields := make([]Field, 0, 8)
		fields = append(fields, Field{"fd", n})
		fields = appendText(fields, "path", path)
		fields = append(fields, Field{"deleted", del.JSON()}, Field{"kind", kind}, Field{"size_bytes", size}, Field{"flags", flags}, Field{"position", pos})
		c.Rows = append(c.Rows, Row{Path: path, Proc: id, Verified: true, Fields: fields})
	}
	c.Finished = time.Now()
	c.Coverage["handle_count"] = len(names)
	c.Coverage["query_failed"] = failed
	if failed > 0 && !exitedDuring {
		c.warn(strconv.Itoa(failed) + " fds could not be read (closed during the capture or access denied)")
	}
	return finishTargeted(c, p, id, exitedDuring)
}

func readAt(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var b [4096]byte
	n, err := unix.Read(fd, b[:])
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// sortNumeric sorts decimal names numerically (fd order).
func sortNumeric(names []string) {
	key := func(s string) int {
		v, err := strconv.Atoi(s)
		if err != nil {
			return 1 << 30
		}
		return v
	}
	slices.SortFunc(names, func(a, b string) int { return key(a) - key(b) })
}
