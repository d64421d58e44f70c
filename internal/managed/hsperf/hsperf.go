// Package hsperf parses the HotSpot performance-data file (hsperfdata):
// the shared-memory file a HotSpot JVM started with -XX:+UsePerfData (the
// default) maps at /tmp/hsperfdata_<user>/<pid> and updates in place, the
// file jstat and jcmd PerfCounter.print read. Reading it is passive: no
// attach, no agent, nothing the JVM notices.
//
// The file is a prologue followed by entries:
//
//	prologue (32 bytes, version 2.0)
//	  u4 magic 0xcafec0c0 (always big-endian)
//	  u1 byte order (0 big-endian, 1 little-endian: the order of every other field)
//	  u1 major, u1 minor version
//	  u1 accessible (1 once the JVM finished creating the file)
//	  i4 used (bytes of the file in use), i4 overflow (bytes that did not fit)
//	  i8 modification time stamp (os ticks)
//	  i4 entry offset, i4 number of entries
//	entry
//	  i4 entry length, i4 name offset (from the entry), i4 vector length
//	  u1 data type ('J' long, 'B' byte), u1 flags (1 supported)
//	  u1 unit, u1 variability, i4 data offset (from the entry)
//
// Parse checks every offset and length against the file and the used size
// and returns a *FormatError saying where a check failed; it never panics
// and never returns a value read from outside the file.
package hsperf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Magic is the first four bytes of every hsperfdata file, big-endian.
const Magic = 0xcafec0c0

// PrologueSize is the size of the version 2 prologue.
const PrologueSize = 32

// MaxFileSize bounds what Read accepts: HotSpot sizes the file with
// -XX:PerfDataMemorySize (32 KiB by default, rounded to pages); a file
// larger than this is not a performance-data file inquest reads.
const MaxFileSize = 16 << 20

// MaxEntries bounds the number of entries a prologue may declare (a real
// JVM has a few hundred).
const MaxEntries = 1 << 16

// Unit is an entry's unit (HotSpot PerfData::Units).
type Unit uint8

// Units of HotSpot counters.
const (
	UnitNone   Unit = 1
	UnitBytes  Unit = 2
	UnitTicks  Unit = 3
	UnitEvents Unit = 4
	UnitString Unit = 5
	UnitHertz  Unit = 6
)

// String names the unit as jcmd PerfCounter.print's documentation does.
func (u Unit) String() string {
	switch u {
	case UnitNone:
		return "none"
	case UnitBytes:
		return "bytes"
	case UnitTicks:
		return "ticks"
	case UnitEvents:
		return "events"
	case UnitString:
		return "string"
	case UnitHertz:
		return "hertz"
	}
	return fmt.Sprintf("unit(%d)", uint8(u))
}

// Variability says how an entry's value changes (HotSpot PerfData::Variability).
type Variability uint8

// Variabilities of HotSpot counters.
const (
	Constant  Variability = 1
	Monotonic Variability = 2
	Variable  Variability = 3
)

// String names the variability.
func (v Variability) String() string {
	switch v {
	case Constant:
		return "constant"
	case Monotonic:
		return "monotonic"
	case Variable:
		return "variable"
	}
	return fmt.Sprintf("variability(%d)", uint8(v))
}

// Prologue is the file header.
type Prologue struct {
	// ByteOrder is the order of every field after the magic.
	ByteOrder binary.ByteOrder
	// Major and Minor are the format version (2.0 since JDK 1.4.2).
	Major, Minor uint8
	// Accessible is true once the JVM finished initializing the file.
	Accessible bool
	// Used is the number of bytes in use; Overflow the bytes of entries
	// that did not fit (-XX:PerfDataMemorySize too small).
	Used, Overflow int32
	// ModTimeStamp is the JVM's high-resolution tick count at the last
	// entry addition.
	ModTimeStamp int64
	// EntryOffset is where the first entry starts; NumEntries how many
	// entries the file holds.
	EntryOffset, NumEntries int32
}

// Entry is one counter. Exactly one of Long and String carries its value:
// a scalar 'J' entry (vector length 0) is a Long; a 'B' vector with unit
// string is a String (bytes up to the first NUL). Other vectors keep Raw.
type Entry struct {
	Name        string
	Type        byte // 'J' long, 'B' byte, ...
	VectorLen   int32
	Flags       uint8
	Unit        Unit
	Variability Variability
	// Offset is the entry's position in the file; DataOffset is relative
	// to it.
	Offset, DataOffset int32
	// IsLong says Long holds the value.
	IsLong bool
	Long   int64
	// IsString says String holds the value.
	IsString bool
	String   string
	// Raw holds the bytes of any other vector (bounded by the file).
	Raw []byte
}

// File is a parsed hsperfdata file.
type File struct {
	Prologue Prologue
	Entries  []Entry
	byName   map[string]int
}

// Reason classifies why a file cannot be used; callers report it as the
// typed unavailable reason.
type Reason string

// Reasons of FormatError.
const (
	// ReasonTruncated: the file ends before a structure it declares.
	ReasonTruncated Reason = "truncated"
	// ReasonOversized: the file is larger than MaxFileSize or declares
	// more than MaxEntries entries.
	ReasonOversized Reason = "oversized"
	// ReasonCorrupt: a field holds a value no HotSpot writes (magic,
	// byte order, version, offsets outside the file, a name without NUL).
	ReasonCorrupt Reason = "corrupt"
	// ReasonNotReady: the JVM has not finished creating the file
	// (accessible is 0).
	ReasonNotReady Reason = "not_ready"
)

// FormatError is a file that is not a readable performance-data file:
// Reason classifies it, Offset is where the check failed, Msg says what.
type FormatError struct {
	Reason Reason
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("hsperfdata: %s at offset %d: %s", e.Reason, e.Offset, e.Msg)
}

func fail(r Reason, off int64, format string, args ...any) error {
	return &FormatError{Reason: r, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the FormatError reason of err, or "" for another error.
func ReasonOf(err error) Reason {
	var fe *FormatError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return ""
}

// Read reads and parses the file at path, reading at most MaxFileSize+1
// bytes (a larger file is ReasonOversized). Errors opening or reading the
// file are returned as they are (os.ErrPermission, os.ErrNotExist).
func Read(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses the bytes of a performance-data file. It keeps no
// reference to b except through Entry.Raw (copied).
func Parse(b []byte) (*File, error) {
	if len(b) > MaxFileSize {
		return nil, fail(ReasonOversized, MaxFileSize, "file larger than %d bytes", MaxFileSize)
	}
	if len(b) < PrologueSize {
		return nil, fail(ReasonTruncated, int64(len(b)), "file of %d bytes is shorter than the %d-byte prologue", len(b), PrologueSize)
	}
	if m := binary.BigEndian.Uint32(b); m != Magic {
		return nil, fail(ReasonCorrupt, 0, "magic %#08x, want %#08x", m, uint32(Magic))
	}
	var p Prologue
	switch b[4] {
	case 0:
		p.ByteOrder = binary.BigEndian
	case 1:
		p.ByteOrder = binary.LittleEndian
	default:
		return nil, fail(ReasonCorrupt, 4, "byte order %d is neither 0 (big) nor 1 (little)", b[4])
	}
	o := p.ByteOrder
	p.Major, p.Minor = b[5], b[6]
	if p.Major != 2 {
		return nil, fail(ReasonCorrupt, 5, "format version %d.%d, only 2.x is known", p.Major, p.Minor)
	}
	p.Accessible = b[7] != 0
	p.Used = int32(o.Uint32(b[8:]))
	p.Overflow = int32(o.Uint32(b[12:]))
	p.ModTimeStamp = int64(o.Uint64(b[16:]))
	p.EntryOffset = int32(o.Uint32(b[24:]))
	p.NumEntries = int32(o.Uint32(b[28:]))
	if !p.Accessible {
		return nil, fail(ReasonNotReady, 7, "the JVM has not finished creating the file (accessible flag 0)")
	}
	if p.Used < PrologueSize {
		return nil, fail(ReasonCorrupt, 8, "used size %d is smaller than the prologue", p.Used)
	}
	if int64(p.Used) > int64(len(b)) {
		return nil, fail(ReasonTruncated, int64(len(b)), "used size %d is beyond the file's %d bytes", p.Used, len(b))
	}
	if p.NumEntries < 0 || p.NumEntries > MaxEntries {
		if p.NumEntries > MaxEntries {
			return nil, fail(ReasonOversized, 28, "%d entries declared, at most %d are read", p.NumEntries, MaxEntries)
		}
		return nil, fail(ReasonCorrupt, 28, "negative entry count %d", p.NumEntries)
	}
	if p.EntryOffset < PrologueSize || p.EntryOffset > p.Used {
		return nil, fail(ReasonCorrupt, 24, "entry offset %d outside [%d, used %d]", p.EntryOffset, PrologueSize, p.Used)
	}
	used := b[:p.Used]
	f := &File{Prologue: p, Entries: make([]Entry, 0, min(int(p.NumEntries), len(used)/20)), byName: make(map[string]int, min(int(p.NumEntries), 1024))}
	off := int64(p.EntryOffset)
	for i := int32(0); i < p.NumEntries; i++ {
		e, next, err := parseEntry(used, off, o)
		if err != nil {
			return nil, err
		}
		if _, dup := f.byName[e.Name]; !dup {
			f.byName[e.Name] = len(f.Entries)
		}
		f.Entries = append(f.Entries, e)
		off = next
	}
	return f, nil
}

const entryHeader = 20

func parseEntry(b []byte, off int64, o binary.ByteOrder) (Entry, int64, error) {
	n := int64(len(b))
	if off+entryHeader > n {
		return Entry{}, 0, fail(ReasonTruncated, off, "entry header needs %d bytes, %d remain of the used size", entryHeader, n-off)
	}
	h := b[off:]
	length := int64(int32(o.Uint32(h)))
	nameOff := int64(int32(o.Uint32(h[4:])))
	vlen := int32(o.Uint32(h[8:]))
	e := Entry{Type: h[12], Flags: h[13], Unit: Unit(h[14]), Variability: Variability(h[15]), VectorLen: vlen, Offset: int32(off)}
	dataOff := int64(int32(o.Uint32(h[16:])))
	e.DataOffset = int32(dataOff)
	if length < entryHeader || off+length > n {
		return Entry{}, 0, fail(ReasonCorrupt, off, "entry length %d outside [%d, %d]", length, entryHeader, n-off)
	}
	end := off + length
	if nameOff < entryHeader || nameOff >= length {
		return Entry{}, 0, fail(ReasonCorrupt, off+4, "name offset %d outside the %d-byte entry", nameOff, length)
	}
	name := b[off+nameOff : end]
	nul := -1
	for i, c := range name {
		if c == 0 {
			nul = i
			break
		}
	}
	if nul <= 0 {
		return Entry{}, 0, fail(ReasonCorrupt, off+nameOff, "entry name is empty or has no NUL inside the entry")
	}
	e.Name = string(name[:nul])
	if vlen < 0 {
		return Entry{}, 0, fail(ReasonCorrupt, off+8, "negative vector length %d", vlen)
	}
	size, ok := typeSize(e.Type)
	if !ok {
		return Entry{}, 0, fail(ReasonCorrupt, off+12, "unknown data type %q", e.Type)
	}
	count := int64(1)
	if vlen > 0 {
		count = int64(vlen)
	}
	dlen := count * size
	if dataOff < entryHeader || dataOff > length || dlen > length-dataOff {
		return Entry{}, 0, fail(ReasonCorrupt, off+16, "data of %d bytes at offset %d is outside the %d-byte entry", dlen, dataOff, length)
	}
	d := b[off+dataOff : off+dataOff+dlen]
	switch {
	case vlen == 0 && e.Type == 'J':
		e.IsLong, e.Long = true, int64(o.Uint64(d))
	case vlen == 0 && e.Type == 'I':
		e.IsLong, e.Long = true, int64(int32(o.Uint32(d)))
	case vlen > 0 && e.Type == 'B' && e.Unit == UnitString:
		s := d
		for i, c := range s {
			if c == 0 {
				s = s[:i]
				break
			}
		}
		e.IsString, e.String = true, strings.ToValidUTF8(string(s), "\uFFFD")
	default:
		e.Raw = append([]byte(nil), d...)
	}
	return e, end, nil
}

func typeSize(t byte) (int64, bool) {
	switch t {
	case 'B', 'Z':
		return 1, true
	case 'C', 'S':
		return 2, true
	case 'I', 'F':
		return 4, true
	case 'J', 'D':
		return 8, true
	}
	return 0, false
}

// Lookup returns the first entry named name.
func (f *File) Lookup(name string) (*Entry, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Entries[i], true
}

// Long returns the value of the scalar long entry name.
func (f *File) Long(name string) (int64, bool) {
	e, ok := f.Lookup(name)
	if !ok || !e.IsLong {
		return 0, false
	}
	return e.Long, true
}

// Str returns the value of the string entry name.
func (f *File) Str(name string) (string, bool) {
	e, ok := f.Lookup(name)
	if !ok || !e.IsString {
		return "", false
	}
	return e.String, true
}
