//go:build linux

package capture

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// The open_files rows that are not descriptors, as lsof lists them before
// the descriptors: cwd (the working directory, /proc/PID/cwd), rtd (the
// root directory, /proc/PID/root), txt (the executable, /proc/PID/exe)
// and one row per distinct memory-mapped file of /proc/PID/maps other
// than the executable: mem, or DEL when the mapped file was deleted.

// maxMapsBytes bounds how much of /proc/PID/maps open_files reads; a
// larger table is reported in a warning, never shown as complete.
const maxMapsBytes = 64 << 20

// devString is a device number as modules rows and maps spell it:
// "major:minor" in hex.
func devString(major, minor uint32) string { return fmt.Sprintf("%02x:%02x", major, minor) }

// objectDevice is lsof's DEVICE of a stat'ed object: the device a
// character or block device node names (st_rdev), else the device that
// holds the object (st_dev).
func objectDevice(st *unix.Stat_t) string {
	d := st.Dev
	if m := st.Mode & unix.S_IFMT; m == unix.S_IFCHR || m == unix.S_IFBLK {
		d = st.Rdev
	}
	return devString(unix.Major(d), unix.Minor(d))
}

// procFileRow is one non-descriptor row: the fd column's name (cwd, rtd,
// txt, mem, DEL) and its facts (nil when unknown).
type procFileRow struct {
	fd, path      string
	del           Deletion
	kind          any
	device, inode any
	size          any
}

// fields is the row's open_files fields, in the order of descriptor rows
// (flags and position are null: no open file description).
func (r procFileRow) fields() []Field {
	fs := make([]Field, 0, 10)
	fs = append(fs, Field{"fd", r.fd})
	fs = appendText(fs, "path", r.path)
	return append(fs, Field{"deleted", r.del.JSON()}, Field{"kind", r.kind}, Field{"device", r.device}, Field{"inode", r.inode},
		Field{"size_bytes", r.size}, Field{"flags", nil}, Field{"position", nil})
}

// statFacts sets kind, device, inode and (regular files and directories)
// size of r from st.
func (r *procFileRow) statFacts(link string, st *unix.Stat_t) {
	k := fdKind(link, st)
	r.kind, r.device, r.inode = k, objectDevice(st), strconv.FormatUint(st.Ino, 10)
	if k == "file" || k == "dir" {
		r.size = strconv.FormatInt(st.Size, 10)
	}
}

// linkRows reads the cwd, root and exe links of the pinned process (rows
// cwd, rtd, txt). A link that does not exist (a kernel thread has no exe)
// is no row; one that could not be read otherwise counts in failed. It
// returns the executable's stat (nil when unknown) so mem rows skip it.
func (p *pinned) linkRows(buf []byte) (rows []procFileRow, exe *unix.Stat_t, failed int) {
	for _, l := range []struct{ entry, fd string }{{"cwd", "cwd"}, {"root", "rtd"}, {"exe", "txt"}} {
		link, err := readlinkAt(p.tfd, l.entry, buf)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				failed++
			}
			continue
		}
		path, del := resolveLink(p.tfd, p.tfd, l.entry, link)
		r := procFileRow{fd: l.fd, path: path, del: del}
		var st unix.Stat_t
		if unix.Fstatat(p.tfd, l.entry, &st, 0) == nil {
			r.statFacts(string(link), &st)
			if l.entry == "exe" {
				exe = &st
			}
		}
		rows = append(rows, r)
	}
	return rows, exe, failed
}

// mapRows lists the distinct mapped files of /proc/PID/maps in the order
// they first appear, one row per device and inode, without the executable
// (exe) and without anonymous and pseudo mappings ([heap], [stack], inode
// 0). A mapping whose file was deleted is a DEL row without a size (as
// lsof prints it); a path that now names another file keeps the maps
// device and inode and has no size or kind. truncated is true when the
// table was larger than maxMapsBytes (the rows are then incomplete).
func (p *pinned) mapRows(exe *unix.Stat_t) (rows []procFileRow, truncated bool, err error) {
	b, truncated, err := readAllAt(p.tfd, "maps", maxMapsBytes)
	if err != nil {
		return nil, false, err
	}
	type key struct {
		major, minor uint32
		inode        uint64
	}
	seen := map[key]bool{}
	if exe != nil {
		seen[key{unix.Major(exe.Dev), unix.Minor(exe.Dev), exe.Ino}] = true
	}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		m, ok := parseMapsLine(line)
		if !ok || m.inode == 0 || len(m.path) == 0 || m.path[0] != '/' {
			continue
		}
		k := key{m.major, m.minor, m.inode}
		if seen[k] {
			continue
		}
		seen[k] = true
		var obj *unix.Stat_t
		var st unix.Stat_t
		if unix.Fstatat(p.tfd, fmt.Sprintf("map_files/%x-%x", m.start, m.end), &st, 0) == nil && m.sameObject(&st) {
			obj = &st
		}
		// Without map_files (another user's process) the maps line still
		// names the object: its device and inode decide against the
		// literal path.
		ident := obj
		if ident == nil {
			ident = &unix.Stat_t{Dev: unix.Mkdev(m.major, m.minor), Ino: m.inode, Nlink: 1}
		}
		path, del := sample.ResolveDeleted(m.path, ident, sample.StatInRoot(p.tfd))
		r := procFileRow{fd: "mem", path: path, del: del, device: devString(m.major, m.minor), inode: strconv.FormatUint(m.inode, 10)}
		switch {
		case del == sample.Deleted:
			r.fd, r.kind = "DEL", "file"
		case del == sample.NotDeleted:
			if obj == nil { // no map_files access: the path as the process sees it
				var lst unix.Stat_t
				if unix.Fstatat(p.tfd, "root"+path, &lst, 0) == nil && m.sameObject(&lst) {
					obj = &lst
				}
			}
			if obj != nil {
				dev, ino := r.device, r.inode
				r.statFacts(path, obj)
				if r.kind != "device" {
					r.device, r.inode = dev, ino
				}
			}
		}
		rows = append(rows, r)
	}
	return rows, truncated, nil
}

// readAllAt reads the file name in dirfd, at most max bytes; truncated
// reports a longer file.
func readAllAt(dirfd int, name string, max int) ([]byte, bool, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 64<<10)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= max {
				var one [1]byte
				n, _ := unix.Read(fd, one[:])
				return buf, n > 0, nil
			}
			nb := make([]byte, len(buf), min(2*cap(buf), max))
			copy(nb, buf)
			buf = nb
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, false, err
		}
		if n == 0 {
			return buf, false, nil
		}
		buf = buf[:len(buf)+n]
	}
}
