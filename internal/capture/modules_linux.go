//go:build linux

package capture

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// mapping is one parsed /proc/PID/maps line.
type mapping struct {
	start, end   uint64
	perms        string
	major, minor uint32 // the mapped object's device (maps "dev" column, hex)
	inode        uint64
	path         string
}

// parseMapsLine parses "start-end perms offset dev inode [path]". The path
// is everything after the inode field with leading spaces removed (it may
// contain spaces and end in " (deleted)").
func parseMapsLine(line []byte) (mapping, bool) {
	var m mapping
	rest := line
	next := func() []byte {
		rest = bytes.TrimLeft(rest, " \t")
		i := bytes.IndexAny(rest, " \t")
		var f []byte
		if i < 0 {
			f, rest = rest, nil
		} else {
			f, rest = rest[:i], rest[i:]
		}
		return f
	}
	rng := next()
	a, b, ok := bytes.Cut(rng, []byte("-"))
	if !ok {
		return m, false
	}
	var err error
	if m.start, err = strconv.ParseUint(string(a), 16, 64); err != nil {
		return m, false
	}
	if m.end, err = strconv.ParseUint(string(b), 16, 64); err != nil || m.end < m.start {
		return m, false
	}
	perms := next()
	if len(perms) != 4 {
		return m, false
	}
	m.perms = string(perms)
	if len(next()) == 0 { // offset
		return m, false
	}
	dev := next()
	maj, mnr, ok := bytes.Cut(dev, []byte(":"))
	if !ok {
		return m, false
	}
	v1, err1 := strconv.ParseUint(string(maj), 16, 32)
	v2, err2 := strconv.ParseUint(string(mnr), 16, 32)
	if err1 != nil || err2 != nil {
		return m, false
	}
	m.major, m.minor = uint32(v1), uint32(v2)
	ino := next()
	if m.inode, err = strconv.ParseUint(string(ino), 10, 64); err != nil {
		return m, false
	}
	m.path = string(bytes.TrimLeft(rest, " \t"))
	return m, true
}

// sameObject reports whether st is the object of mapping m (device and
// inode of the maps line).
func (m *mapping) sameObject(st *unix.Stat_t) bool {
	return st.Ino == m.inode && unix.Major(st.Dev) == m.major && unix.Minor(st.Dev) == m.minor
}

// buildID returns the GNU build id (hex) of the ELF file f, or "" when it
// has none or f is not ELF. Only note segments/sections are read.
func buildID(f io.ReaderAt) string {
	ef, err := elf.NewFile(f)
	if err != nil {
		return ""
	}
	defer ef.Close()
	scan := func(b []byte, order binary.ByteOrder) string {
		for len(b) >= 12 {
			nsz := order.Uint32(b[0:4])
			dsz := order.Uint32(b[4:8])
			typ := order.Uint32(b[8:12])
			b = b[12:]
			na := (uint64(nsz) + 3) &^ 3
			da := (uint64(dsz) + 3) &^ 3
			if na > uint64(len(b)) || da > uint64(len(b))-na {
				return ""
			}
			name := b[:nsz]
			desc := b[na : na+uint64(dsz)]
			b = b[na+da:]
			if typ == 3 && string(bytes.TrimRight(name, "\x00")) == "GNU" {
				return hex.EncodeToString(desc)
			}
		}
		return ""
	}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<16 {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			continue
		}
		if id := scan(b, ef.ByteOrder); id != "" {
			return id
		}
	}
	if s := ef.Section(".note.gnu.build-id"); s != nil && s.Size <= 1<<16 {
		if b, err := s.Data(); err == nil {
			return scan(b, ef.ByteOrder)
		}
	}
	return ""
}

// openInRoot opens path as the target process sees it (through the pinned
// /proc/PID/root). When that is not permitted it falls back to this
// process's view only if both share a mount namespace, so metadata never
// describes a different file of the same name in another container.
func (p *pinned) openInRoot(path string) (*os.File, error) {
	if strings.HasPrefix(path, "/") {
		fd, err := unix.Openat(p.tfd, "root"+path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
	}
	if !p.sameMountNS() {
		return nil, os.ErrPermission
	}
	return os.Open(path)
}

// mountNS compares the pinned process's mount namespace with ours:
// "same", "other", or nil when either cannot be read.
func (p *pinned) mountNS() any {
	var a, b [64]byte
	mine, err1 := readlinkAt(unix.AT_FDCWD, FS{root: p.root}.path("self/ns/mnt"), a[:])
	theirs, err2 := readlinkAt(p.tfd, "ns/mnt", b[:])
	switch {
	case err1 != nil || err2 != nil:
		return nil
	case string(mine) == string(theirs):
		return "same"
	}
	return "other"
}

// sameMountNS reports whether the pinned process shares this process's
// mount namespace (so a path means the same file for both).
func (p *pinned) sameMountNS() bool {
	var a, b [64]byte
	mine, err1 := readlinkAt(unix.AT_FDCWD, FS{root: p.root}.path("self/ns/mnt"), a[:])
	theirs, err2 := readlinkAt(p.tfd, "ns/mnt", b[:])
	return err1 == nil && err2 == nil && string(mine) == string(theirs)
}

// Modules lists the file-backed mappings of the verified process id, one
// row per mapped object (device, inode and printed path) in first-mapped
// order, plus the [vdso] pseudo-mapping when present. Rows: path (without
// the kernel's " (deleted)" suffix when deleted; path_bytes when lossy),
// name, directory, deleted (sample.ResolveDeleted on the maps path with the
// mapped object's device/inode), replaced (the file now at path is not
// the mapped object: the restart-needed check after an upgrade; null when
// the path cannot be examined), device ("major:minor", hex as in maps),
// inode, size_bytes (decimal string), modified_at (RFC 3339 mtime),
// build_id (GNU build id, hex), metadata_unavailable (null, or why size,
// mtime and build id are null), mapping_count, mapped_bytes (decimal
// string) and permissions (distinct maps permission strings).
//
// Facts come from the object the process maps, never from whatever now
// sits at its path: it is opened through /proc/PID/map_files/START-END;
// when that is not permitted (it needs CAP_SYS_ADMIN), the path is opened
// through /proc/PID/root and used only if its device and inode are the
// mapping's. Otherwise the facts are null with metadata_unavailable
// "access_denied" (map_files refused and the path holds another object or
// none) or "unreadable". Errors: PROCESS_EXITED, IDENTITY_UNVERIFIABLE,
// ACCESS_DENIED.
func Modules(ctx context.Context, id sample.Identity) (*Capture, error) {
	return FS{}.Modules(ctx, id)
}

// Modules is the package's Modules in the tree fs.
func (fs FS) Modules(ctx context.Context, id sample.Identity) (*Capture, error) {
	p, _, err := fs.pinIdentity(id)
	if err != nil {
		return nil, err
	}
	defer p.close()
	c := &Capture{Kind: KindModules, Started: time.Now(), Coverage: map[string]any{}}
	b, err := p.read("maps", nil)
	if err != nil {
		if denied(err) {
			return nil, accessDenied("the process's memory map")
		}
		if err == errTooBig {
			return nil, contract.Errorf(contract.CodeResultTooLarge, "the process's memory map is larger than the read bound")
		}
		return finishTargeted(c, p, id, true)
	}
	type key struct {
		major, minor uint32
		inode        uint64
		path         string
	}
	type mod struct {
		first  mapping
		count  int
		bytes  uint64
		perms  []string
		pseudo bool
	}
	var order []*mod
	byKey := map[key]*mod{}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		m, ok := parseMapsLine(line)
		if !ok {
			continue
		}
		pseudo := m.path == "[vdso]"
		if !pseudo && (m.inode == 0 || !strings.HasPrefix(m.path, "/")) {
			continue
		}
		k := key{m.major, m.minor, m.inode, m.path}
		md := byKey[k]
		if md == nil {
			md = &mod{first: m, pseudo: pseudo}
			byKey[k] = md
			order = append(order, md)
		}
		md.count++
		md.bytes += m.end - m.start
		if !contains(md.perms, m.perms) {
			md.perms = append(md.perms, m.perms)
		}
	}
	metaFailed, deletedN, replacedN, withheldN := 0, 0, 0, 0
	mnt := p.mountNS()
	foreignMnt := mnt != "same"
	for i, md := range order {
		if i&31 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		sort.Strings(md.perms)
		if md.pseudo {
			c.Rows = append(c.Rows, Row{Proc: id, Verified: true, Fields: []Field{
				{"path", nil}, {"name", md.first.path}, {"directory", nil}, {"deleted", false}, {"replaced", false},
				{"device", nil}, {"inode", nil}, {"size_bytes", nil}, {"modified_at", nil}, {"build_id", nil}, {"metadata_unavailable", "pseudo_mapping"},
				{"mapping_count", md.count}, {"mapped_bytes", strconv.FormatUint(md.bytes, 10)}, {"permissions", md.perms},
				{"inspect_path", nil}, {"action_withheld", "pseudo_mapping"},
			}})
			continue
		}
		m := &md.first
		f, why := p.openMapped(m)
		var obj *unix.Stat_t
		var size, mtime, bid, unavailable any
		objBID := ""
		if f != nil {
			var st unix.Stat_t
			if unix.Fstat(int(f.Fd()), &st) == nil {
				obj = &st
				size = strconv.FormatInt(st.Size, 10)
				mtime = contract.TS(time.Unix(st.Mtim.Unix()))
			}
			if id := buildID(f); id != "" {
				bid, objBID = id, id
			}
			f.Close()
		} else {
			unavailable = why
			metaFailed++
		}
		literal := p.statPath
		fromFile := obj != nil
		if obj == nil {
			// the maps line's device and inode stand for the object
			obj = &unix.Stat_t{Dev: unix.Mkdev(m.major, m.minor), Ino: m.inode, Nlink: 1}
		}
		path, del := sample.ResolveDeleted(m.path, obj, literal)
		if del == sample.Deleted {
			deletedN++
		}
		// replaced: the file now at the path is another object. Compared
		// with the opened object's own stat when there is one (btrfs
		// reports a subvolume's st_dev in stat but the filesystem's in
		// maps), else with the maps line's device and inode.
		var replaced any
		if st, err := literal(path); err == nil {
			r := !m.sameObject(st)
			if fromFile {
				r = st.Dev != obj.Dev || st.Ino != obj.Ino
			}
			replaced = r
			if r {
				replacedN++
			}
		} else if gone(err) {
			replaced = false // nothing at the path: deleted, not replaced
		}
		inspect, withheld := p.inspectPath(path, del == sample.Deleted, obj, fromFile, objBID, foreignMnt)
		if inspect == nil {
			withheldN++
		}
		fields := make([]Field, 0, 21)
		fields = appendText(fields, "path", path)
		fields = appendText(fields, "name", filepath.Base(path))
		fields = appendText(fields, "directory", filepath.Dir(path))
		fields = append(fields, Field{"deleted", del.JSON()}, Field{"replaced", replaced},
			Field{"device", fmt.Sprintf("%02x:%02x", m.major, m.minor)}, Field{"inode", strconv.FormatUint(m.inode, 10)},
			Field{"size_bytes", size}, Field{"modified_at", mtime}, Field{"build_id", bid}, Field{"metadata_unavailable", unavailable},
			Field{"mapping_count", md.count}, Field{"mapped_bytes", strconv.FormatUint(md.bytes, 10)}, Field{"permissions", md.perms})
		fields = append(fields, Field{"inspect_path", inspect}, Field{"action_withheld", withheld})
		c.Rows = append(c.Rows, Row{Path: path, Proc: id, Verified: true, Fields: fields})
	}
	c.Finished = time.Now()
	c.Coverage["modules"] = len(c.Rows)
	c.Coverage["metadata_unavailable"] = metaFailed
	c.Coverage["deleted"] = deletedN
	c.Coverage["replaced"] = replacedN
	c.Coverage["mount_namespace"] = mnt
	c.Coverage["actions_withheld"] = withheldN
	return finishTargeted(c, p, id, false)
}

// openMapped opens the object of mapping m: through map_files, or, when
// that is refused, the file at its path if it is the same object (device
// and inode). On failure it returns the metadata_unavailable reason.
func (p *pinned) openMapped(m *mapping) (*os.File, string) {
	name := "map_files/" + strconv.FormatUint(m.start, 16) + "-" + strconv.FormatUint(m.end, 16)
	fd, err := unix.Openat(p.tfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		return os.NewFile(uintptr(fd), m.path), ""
	}
	why := "unreadable"
	if denied(err) {
		why = "access_denied"
	}
	f, err := p.openInRoot(strings.TrimSuffix(m.path, sample.DeletedSuffix))
	if err != nil {
		return nil, why
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || !m.sameObject(&st) {
		f.Close()
		return nil, why
	}
	return f, ""
}

// statPath lstats path as the pinned process sees it (through its root;
// falling back to this process's view only in the same mount namespace).
func (p *pinned) statPath(path string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(p.tfd, "root"+path, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil {
		return &st, nil
	}
	if !denied(err) || !p.sameMountNS() {
		return nil, err
	}
	if err := unix.Lstat(path, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// inspectPath is the path a row's inspect_binary action may name: one that
// opens, from this process, the object the process maps (same device and
// inode as the object opened through map_files or the process's root, and
// the same GNU build id when it has one). The mapped path itself when
// it does (never when the process is in another mount namespace and the
// path is not the same object here), else /proc/PID/root/PATH when that
// does (it names the object as the process sees it, for as long as the
// process runs). Otherwise nil and why (action_withheld):
// "deleted", "object_unknown" (the mapped object could not be opened),
// "mount_namespace_unknown" (ours or the process's could not be read),
// "other_mount_namespace" (the path here is another file and the
// process's root cannot be read), "path_is_another_object" (same mount
// namespace, the file at the path is not the mapped one: replaced).
func (p *pinned) inspectPath(path string, deleted bool, obj *unix.Stat_t, fromFile bool, bid string, foreignMnt bool) (any, any) {
	if deleted {
		return nil, "deleted"
	}
	if !fromFile {
		return nil, "object_unknown"
	}
	same := func(name string) bool {
		// stat first: never open what is not the object (a FIFO or a
		// device at the path here)
		var pre unix.Stat_t
		if unix.Stat(name, &pre) != nil || pre.Dev != obj.Dev || pre.Ino != obj.Ino || pre.Mode&unix.S_IFMT != unix.S_IFREG {
			return false
		}
		if bid == "" {
			return true // device and inode name the object; no build id to compare
		}
		fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			return false
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil || st.Dev != obj.Dev || st.Ino != obj.Ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return false
		}
		return bid == "" || buildID(f) == bid
	}
	if p.root == "" && same(path) {
		return path, nil
	}
	if p.root == "" {
		// /proc/PID/root/PATH resolves PATH in the process's mount
		// namespace and root
		alt := procRoot + "/" + strconv.Itoa(int(p.pid)) + "/root" + path
		if foreignMnt && same(alt) {
			return alt, nil
		}
	}
	if foreignMnt {
		if p.mountNS() == nil {
			return nil, "mount_namespace_unknown"
		}
		return nil, "other_mount_namespace"
	}
	return nil, "path_is_another_object"
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
