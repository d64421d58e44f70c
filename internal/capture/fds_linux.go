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

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// fdNames lists the entries of the pinned process's fd directory and
// returns an open descriptor of that directory (caller closes it).
// The task list ("task") is the leader's; every other directory is read
// through taskDir.
func (p *pinned) fdNames(sub string) (int, []string, error) {
	dir := p.tfd
	if sub == "task" {
		dir = p.fd
	}
	dfd, err := unix.Openat(dir, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
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
	name, _, _, _ := p.processNameExe(comm, buf)
	return name
}

// processNameExe is processName that also returns the executable link as
// read (exeLink, nil when unreadable) and its path and deletion as
// resolveLink decides them.
func (p *pinned) processNameExe(comm string, buf []byte) (name string, exeLink []byte, exe string, del Deletion) {
	if l, err := readlinkAt(p.tfd, "exe", buf); err == nil {
		exeLink = l
		exe, del = resolveLink(p.tfd, p.tfd, "exe", l)
	}
	argv0 := ""
	if exe == "" && len(comm) >= sample.MaxComm {
		if b, err := readAt(p.tfd, "cmdline"); err == nil {
			if i := bytes.IndexByte(b, 0); i >= 0 {
				b = b[:i]
			}
			argv0 = string(b)
		}
	}
	return sample.FullName(exe, argv0, comm), exeLink, exe, del
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

// OpenFiles lists the open fds of the verified process id, after the rows
// lsof lists before them: cwd (working directory), rtd (root directory),
// txt (executable) and one mem row per distinct memory-mapped file other
// than the executable (DEL when that file was deleted). Rows: fd (decimal
// string, capture-local, or cwd/rtd/txt/mem/DEL), path (link target or
// maps path), kind (file/dir/socket/pipe/anon/device), device (lsof's
// DEVICE as "major:minor" in hex: st_rdev of a device node, else st_dev),
// inode (decimal string), size_bytes (decimal string, regular files and
// directories only), flags (octal string from fdinfo) and position
// (decimal string from fdinfo); fields that could not be read, and flags
// and position of non-descriptor rows, are null. Coverage: handle_count
// (fds listed), mapped_files (mem and DEL rows), query_failed (fds whose
// link could not be read while the process still ran; reads that failed
// because it ended are not counted) and process_exited (true when the
// lifetime ended during the walk: the check runs after a read fails and
// compares PID, start time, state and PF_EXITING from /proc/PID/stat, and
// a zombie leader's other tasks, so an exit is never blamed on closed or
// denied fds). Errors: PROCESS_EXITED, IDENTITY_UNVERIFIABLE,
// ACCESS_DENIED, COLLECTION_FAILED (the fd directory of a process that
// still runs could not be read).
func OpenFiles(ctx context.Context, id sample.Identity) (*Capture, error) {
	return OpenFilesFiltered(ctx, id, Filter{})
}

// OpenFilesFiltered is OpenFiles keeping only fds whose path matches
// f.Path and f.Extension (start_capture filter; open_files rows have no
// owner). A non-matching fd is neither stat'ed nor kept; Capture.FilteredOut
// counts them.
func OpenFilesFiltered(ctx context.Context, id sample.Identity, f Filter) (*Capture, error) {
	return FS{}.OpenFilesFiltered(ctx, id, f)
}

// OpenFilesFiltered is the package's OpenFilesFiltered in the tree fs.
func (fs FS) OpenFilesFiltered(ctx context.Context, id sample.Identity, f Filter) (*Capture, error) {
	f = Filter{Path: f.Path, Extension: f.Extension}
	p, _, err := fs.pinIdentity(id)
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
		if p.stillSame(id) {
			// The lifetime still runs: the failure is not an exit.
			return nil, contract.Errorf(contract.CodeCollectionFailed, "the process's fd table could not be read")
		}
		return finishTargeted(c, p, id, true)
	}
	defer unix.Close(dfd)
	infoFd, infoErr := unix.Openat(p.tfd, "fdinfo", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if infoErr == nil {
		defer unix.Close(infoFd)
	}
	sortNumeric(names)
	budget := rowBudgetOf(ctx)
	buf := make([]byte, 4096)
	failed := 0
	trailing := 0 // failures since the last fd that was read
	exitedDuring := false
	foreignMnt := p.mountNS() != "same"
	// cwd, rtd, txt and the mapped files come first, as lsof lists them.
	extra, exe, linkFailed := p.linkRows(buf)
	mapped, mapsTruncated, mapsErr := p.mapRows(exe)
	extra = append(extra, mapped...)
	for j, r := range extra {
		if !f.IsZero() && !f.Match(&Row{Path: r.path}) {
			c.FilteredOut++
			continue
		}
		if !budget.take(len(r.path) + len(r.fd)) {
			return nil, budget.overErr(KindOpenFiles, j+1, len(extra)+len(names))
		}
		c.Rows = append(c.Rows, Row{Path: r.path, Proc: id, Verified: true, Fields: r.fields()})
	}
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
			// Whether the process ended is decided after the read failed,
			// by its lifetime (start time, state, PF_EXITING, a group
			// exit's zombie leader), never by the PID's directory still
			// being there: an exiting or zombie process keeps /proc/PID
			// while its fds are gone. A failure that is the exit's is
			// not a failed query.
			if !p.stillSame(id) {
				exitedDuring = true
				break
			}
			failed++
			trailing++
			continue
		}
		trailing = 0
		path, del := resolveLink(p.tfd, dfd, n, link)
		if !f.IsZero() && !f.Match(&Row{Path: path}) {
			c.FilteredOut++
			continue
		}
		if !budget.take(len(path) + len(n)) {
			// Never kept whole: stop reading instead of building rows
			// that are refused afterwards (RESULT_TOO_LARGE).
			return nil, budget.overErr(KindOpenFiles, len(extra)+i+1, len(extra)+len(names))
		}
		var st unix.Stat_t
		stp := &st
		if unix.Fstatat(dfd, n, &st, 0) != nil {
			stp = nil
		}
		kind := fdKind(string(link), stp)
		var size, flags, pos, dev, ino any
		if stp != nil {
			if kind == "file" || kind == "dir" {
				size = strconv.FormatInt(st.Size, 10)
			}
			dev, ino = objectDevice(stp), strconv.FormatUint(st.Ino, 10)
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
		// inspect_path: a path that opens this very file from here
		var inspect, withheld any = nil, "not_a_file"
		if kind == "file" {
			if stp == nil {
				withheld = "object_unknown"
			} else {
				inspect, withheld = p.inspectPath(path, del == sample.Deleted, stp, true, "", foreignMnt)
			}
		}
		fields := make([]Field, 0, 12)
		fields = append(fields, Field{"fd", n})
		fields = appendText(fields, "path", path)
		fields = append(fields, Field{"deleted", del.JSON()}, Field{"kind", kind}, Field{"device", dev}, Field{"inode", ino},
			Field{"size_bytes", size}, Field{"flags", flags}, Field{"position", pos},
			Field{"inspect_path", inspect}, Field{"action_withheld", withheld})
		c.Rows = append(c.Rows, Row{Path: path, Proc: id, Verified: true, Fields: fields})
	}
	c.Finished = time.Now()
	c.Coverage["handle_count"] = len(names)
	if failed > 0 && !exitedDuring && !p.stillSame(id) {
		// The process ended after the last check: the failures since the
		// last fd read were the exit's (every read fails after it).
		exitedDuring = true
		failed -= trailing
	}
	c.Coverage["query_failed"] = failed
	if failed > 0 && !exitedDuring {
		c.warn(strconv.Itoa(failed) + " fds could not be read (closed during the capture or access denied)")
	}
	c.Coverage["mapped_files"] = len(mapped)
	if !exitedDuring && (linkFailed > 0 || mapsErr != nil) && p.stillSame(id) {
		c.warn("the working directory, root, executable or memory-mapped files could not all be read (cwd, rtd, txt, mem rows may be missing)")
	}
	if mapsTruncated {
		c.warn("the memory map is larger than " + strconv.Itoa(maxMapsBytes>>20) + " MiB; mem rows beyond it are not listed")
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
