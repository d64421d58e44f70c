//go:build linux

package capture

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/proc"
	"golang.org/x/sys/unix"
)

// mapping is one parsed /proc/PID/maps line.
type mapping struct {
	start, end uint64
	perms      string
	inode      uint64
	path       string
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
	if len(next()) == 0 { // dev
		return m, false
	}
	ino := next()
	if m.inode, err = strconv.ParseUint(string(ino), 10, 64); err != nil {
		return m, false
	}
	m.path = string(bytes.TrimLeft(rest, " \t"))
	return m, true
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
		fd, err := unix.Openat(p.fd, "root"+path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
	}
	var a, b [64]byte
	mine, err1 := readlinkAt(unix.AT_FDCWD, procRoot+"/self/ns/mnt", a[:])
	theirs, err2 := readlinkAt(p.fd, "ns/mnt", b[:])
	if err1 != nil || err2 != nil || string(mine) != string(theirs) {
		return nil, os.ErrPermission
	}
	return os.Open(path)
}

// Modules lists the file-backed mappings of the verified process id, one
// row per mapped file in first-mapped order, plus the [vdso] pseudo-mapping
// when present. Rows: path, name, directory, size_bytes (decimal string,
// file size), modified_at (RFC 3339 mtime), build_id (GNU build id, hex),
// mapping_count, mapped_bytes (decimal string) and permissions (distinct
// maps permission strings). Metadata that cannot be read is null even when
// enumeration is complete. Source: /proc/PID/maps, stat(2) and the ELF
// PT_NOTE segments. Errors: PROCESS_EXITED, IDENTITY_UNVERIFIABLE,
// ACCESS_DENIED.
func Modules(ctx context.Context, id proc.Identity) (*Capture, error) {
	p, _, err := pinIdentity(id)
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
	type mod struct {
		path   string
		count  int
		bytes  uint64
		perms  []string
		pseudo bool
	}
	var order []*mod
	byPath := map[string]*mod{}
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
		md := byPath[m.path]
		if md == nil {
			md = &mod{path: m.path, pseudo: pseudo}
			byPath[m.path] = md
			order = append(order, md)
		}
		md.count++
		md.bytes += m.end - m.start
		if !contains(md.perms, m.perms) {
			md.perms = append(md.perms, m.perms)
		}
	}
	metaFailed := 0
	for i, md := range order {
		if i&31 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		sort.Strings(md.perms)
		if md.pseudo {
			c.Rows = append(c.Rows, Row{Proc: id, Verified: true, Fields: []Field{
				{"path", nil}, {"name", md.path}, {"directory", nil}, {"size_bytes", nil}, {"modified_at", nil}, {"build_id", nil},
				{"mapping_count", md.count}, {"mapped_bytes", strconv.FormatUint(md.bytes, 10)}, {"permissions", md.perms},
			}})
			continue
		}
		var size, mtime, bid any
		clean := strings.TrimSuffix(md.path, " (deleted)")
		if f, err := p.openInRoot(clean); err == nil {
			if fi, err := f.Stat(); err == nil {
				size = strconv.FormatInt(fi.Size(), 10)
				mtime = contract.TS(fi.ModTime())
			}
			if id := buildID(f); id != "" {
				bid = id
			}
			f.Close()
		} else {
			metaFailed++
		}
		c.Rows = append(c.Rows, Row{Path: md.path, Proc: id, Verified: true, Fields: []Field{
			{"path", md.path}, {"name", filepath.Base(clean)}, {"directory", filepath.Dir(clean)}, {"size_bytes", size},
			{"modified_at", mtime}, {"build_id", bid}, {"mapping_count", md.count},
			{"mapped_bytes", strconv.FormatUint(md.bytes, 10)}, {"permissions", md.perms},
		}})
	}
	c.Finished = time.Now()
	c.Coverage["modules"] = len(c.Rows)
	c.Coverage["metadata_unavailable"] = metaFailed
	return finishTargeted(c, p, id, false)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
