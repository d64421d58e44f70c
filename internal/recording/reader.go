package recording

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"time"
)

// FormatError is a file that cannot be read as a recording at all (wrong
// magic, unreadable header, unsupported version). Offset is the byte
// offset of the problem.
type FormatError struct {
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("recording: at byte %d: %s", e.Offset, e.Msg)
}

// Damage is a byte range the reader could not use between readable
// frames: a frame failed its length or checksum test or did not decode,
// and the frames after it up to the next keyframe depend on it. Offset is
// where the first unusable frame starts, End where reading resumed (the
// next keyframe). AfterFrame is the sequence number of the last good
// sample frame before it (-1 when none); Skipped counts sample frames that
// passed their checksum but were skipped because their deltas depend on
// the damaged frame.
type Damage struct {
	Offset     int64  `json:"offset"`
	End        int64  `json:"end"`
	AfterFrame int64  `json:"after_frame"`
	Skipped    int    `json:"skipped_frames"`
	Reason     string `json:"reason"`
}

// Torn is the end of a file that holds no complete frame: a frame cut by
// a crash (declared length beyond the end of the file, or a checksum that
// fails on the last bytes). Offset is where it starts, Bytes how many
// bytes follow.
type Torn struct {
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
}

// Info is what Read learned about a file besides its frames.
type Info struct {
	Header Header
	// End is the end record, nil for an interrupted recording.
	End *End
	// Frames is the number of sample frames delivered.
	Frames uint64
	// Size is the file size in bytes.
	Size int64
	// Torn describes an incomplete last frame; Damaged lists unusable
	// ranges inside the file.
	Torn    *Torn
	Damaged []Damage
	// Identities is the number of distinct identities defined.
	Identities int
	// First and Last bound the delivered frames (ms since the epoch).
	First, Last int64
}

// Complete reports whether the file ended with an end record and every
// byte was read: no torn tail, no damage.
func (in *Info) Complete() bool { return in.End != nil && in.Torn == nil && len(in.Damaged) == 0 }

// Problems returns one sentence per reason the file is not complete.
func (in *Info) Problems() []string {
	var out []string
	if in.End == nil {
		out = append(out, "the recording was interrupted: it has no end record (the host was killed, crashed or lost power while recording); every complete frame is kept")
	}
	if in.Torn != nil {
		out = append(out, fmt.Sprintf("the file ends with an incomplete frame at byte %d (%d bytes, %s); it was dropped", in.Torn.Offset, in.Torn.Bytes, in.Torn.Reason))
	}
	for _, d := range in.Damaged {
		out = append(out, fmt.Sprintf("bytes %d to %d are damaged (%s) after frame %d; %d checksum-valid frames depending on it were skipped; reading resumed at the next keyframe", d.Offset, d.End, d.Reason, d.AfterFrame, d.Skipped))
	}
	return out
}

// MaxIdentities bounds the identities a file may define (a guard against
// crafted files; a day of heavy process churn stays far below it).
const MaxIdentities = 1 << 22

// MaxFrameProcs bounds the processes of one frame (a guard against
// crafted files: decoding allocates per process).
const MaxFrameProcs = 1 << 17

type readIdent struct {
	// ok says the identity's delta chain is intact (defined in this
	// frame or present in the previous one).
	ok    bool
	avail uint32
	prev  [32]uint64
}

// Read parses a whole recording file held in data and calls fn for every
// readable sample frame in order. fn's Frame and its slices are reused
// between calls; copy what you keep. An error from fn stops reading and is
// returned. A file that is not a recording, or whose header is unreadable
// or of another version, is a *FormatError. Damage after the header never
// fails Read: it is reported in Info (Torn, Damaged) and the reader keeps
// every complete frame it can decode.
func Read(data []byte, fn func(*Frame) error) (*Info, error) {
	return ReadWith(data, nil, fn)
}

// ReadWith is Read with onHeader called once with the validated header
// before the first frame (an error from it stops reading).
func ReadWith(data []byte, onHeader func(*Header) error, fn func(*Frame) error) (*Info, error) {
	in := &Info{Size: int64(len(data)), First: -1, Last: -1}
	if len(data) < len(Magic) || !bytes.Equal(data[:len(Magic)], Magic[:]) {
		return in, &FormatError{Offset: 0, Msg: "not an inquest recording (magic bytes differ)"}
	}
	off := int64(len(Magic))
	typ, payload, next, reason := frameAt(data, off)
	if reason != "" {
		return in, &FormatError{Offset: off, Msg: "header frame unreadable: " + reason}
	}
	if typ != TypeHeader {
		return in, &FormatError{Offset: off, Msg: "the first frame is not a header"}
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&in.Header); err != nil {
		return in, &FormatError{Offset: off + frameHead, Msg: "header JSON: " + err.Error()}
	}
	h := &in.Header
	if h.Format != Format {
		return in, &FormatError{Offset: off + frameHead, Msg: "header format is not " + Format}
	}
	if h.Version != Version {
		return in, &FormatError{Offset: off + frameHead, Msg: fmt.Sprintf("format version %d is not supported (this build reads version %d)", h.Version, Version)}
	}
	pN, sN := slotCount(h.ProcessMetrics), slotCount(h.SystemMetrics)
	if pN > 32 || sN > 32 {
		return in, &FormatError{Offset: off + frameHead, Msg: "header declares more than 32 metric slots"}
	}
	for _, d := range append(append([]MetricDef(nil), h.ProcessMetrics...), h.SystemMetrics...) {
		if d.Slot < 0 {
			return in, &FormatError{Offset: off + frameHead, Msg: "header declares a negative metric slot"}
		}
	}
	pF, sF := floatMask(h.ProcessMetrics), floatMask(h.SystemMetrics)
	off = next
	if onHeader != nil {
		if err := onHeader(h); err != nil {
			return in, err
		}
	}

	d := &decoder{pN: pN, sN: sN, pF: pF, sF: sF, ids: map[uint32]*readIdent{}}
	synced := true // false after damage until the next keyframe
	var cur *Damage
	lastSeq := int64(-1)
	for off < int64(len(data)) {
		typ, payload, next, reason := frameAt(data, off)
		if reason != "" {
			// Find the next frame that checks out.
			at := resync(data, off+1)
			if at < 0 {
				in.Torn = &Torn{Offset: off, Bytes: int64(len(data)) - off, Reason: reason}
				if cur != nil {
					// Damage ran to the end: it is the torn tail.
					in.Torn = &Torn{Offset: cur.Offset, Bytes: int64(len(data)) - cur.Offset, Reason: cur.Reason + "; no readable frame follows"}
					cur = nil
				}
				break
			}
			if cur == nil {
				cur = &Damage{Offset: off, AfterFrame: lastSeq, Reason: reason}
			}
			synced = false
			off = at
			continue
		}
		if in.End != nil {
			// Frames after the end record: damage (never silently ignored).
			if cur == nil {
				cur = &Damage{Offset: off, AfterFrame: lastSeq, Reason: "frame after the end record"}
			}
			off = next
			continue
		}
		switch typ {
		case TypeEnd:
			var e End
			if json.Unmarshal(payload, &e) != nil {
				if cur == nil {
					cur = &Damage{Offset: off, AfterFrame: lastSeq, Reason: "end record JSON does not decode"}
				}
				off = next
				continue
			}
			if cur != nil {
				cur.End = off
				in.Damaged = append(in.Damaged, *cur)
				cur = nil
			}
			in.End = &e
		case TypeSample:
			key := len(payload) > 0 && isKeyframe(payload)
			if !synced && !key {
				cur.Skipped++
				off = next
				continue
			}
			f, err := d.decode(payload)
			if err != nil {
				if cur == nil {
					cur = &Damage{Offset: off, AfterFrame: lastSeq, Reason: "frame does not decode: " + err.Error()}
				}
				synced = false
				off = next
				continue
			}
			if lastSeq >= 0 && int64(f.Seq) <= lastSeq {
				if cur == nil {
					cur = &Damage{Offset: off, AfterFrame: lastSeq, Reason: "frame sequence number does not increase"}
				}
				synced = false
				off = next
				continue
			}
			if cur != nil {
				cur.End = off
				in.Damaged = append(in.Damaged, *cur)
				cur = nil
			}
			synced = true
			lastSeq = int64(f.Seq)
			if in.First < 0 {
				in.First = f.At
			}
			in.Last = f.At
			in.Frames++
			if fn != nil {
				if err := fn(f); err != nil {
					return in, err
				}
			}
		default:
			if cur == nil {
				cur = &Damage{Offset: off, AfterFrame: lastSeq, Reason: fmt.Sprintf("unknown frame type %d", typ)}
			}
		}
		off = next
	}
	if cur != nil {
		cur.End = int64(len(data))
		in.Damaged = append(in.Damaged, *cur)
	}
	in.Identities = d.defined
	return in, nil
}

// frameAt checks the frame at off: sync marker, length within the file
// and MaxPayload, checksum. reason is "" for a good frame.
func frameAt(data []byte, off int64) (typ byte, payload []byte, next int64, reason string) {
	rest := data[off:]
	if len(rest) < frameHead+frameTrail {
		if len(rest) >= len(Sync) && !bytes.Equal(rest[:len(Sync)], Sync[:]) {
			return 0, nil, 0, "no frame sync marker"
		}
		return 0, nil, 0, "frame header cut short"
	}
	if !bytes.Equal(rest[:len(Sync)], Sync[:]) {
		return 0, nil, 0, "no frame sync marker"
	}
	n := binary.LittleEndian.Uint32(rest[4:8])
	if n > MaxPayload {
		return 0, nil, 0, "frame length beyond the limit"
	}
	end := int64(frameHead) + int64(n) + frameTrail
	if end > int64(len(rest)) {
		return 0, nil, 0, "frame extends past the end of the file"
	}
	payload = rest[frameHead : frameHead+int64(n)]
	want := binary.LittleEndian.Uint32(rest[frameHead+int64(n):])
	if checksum(rest[4:frameHead], payload) != want {
		return 0, nil, 0, "frame checksum mismatch"
	}
	return rest[8], payload, off + end, ""
}

// resync returns the offset of the next good frame at or after from, or -1.
func resync(data []byte, from int64) int64 {
	for from < int64(len(data)) {
		i := bytes.Index(data[from:], Sync[:])
		if i < 0 {
			return -1
		}
		at := from + int64(i)
		if _, _, _, reason := frameAt(data, at); reason == "" {
			return at
		}
		from = at + 1
	}
	return -1
}

// isKeyframe reads the flags byte after the two leading uvarints.
func isKeyframe(p []byte) bool {
	_, n := binary.Uvarint(p)
	if n <= 0 {
		return false
	}
	_, m := binary.Uvarint(p[n:])
	if m <= 0 || n+m >= len(p) {
		return false
	}
	return p[n+m]&flagKeyframe != 0
}

type decoder struct {
	pN, sN  int
	pF, sF  uint32
	ids     map[uint32]*readIdent
	sysPrev [32]uint64
	defined int
	f       Frame
	live    []*readIdent
}

var errShort = errors.New("payload ends inside a field")

type cursor struct {
	b   []byte
	err error
}

func (c *cursor) uvarint() uint64 {
	if c.err != nil {
		return 0
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.err = errShort
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *cursor) varint() int64 {
	if c.err != nil {
		return 0
	}
	v, n := binary.Varint(c.b)
	if n <= 0 {
		c.err = errShort
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *cursor) byte1() byte {
	if c.err != nil || len(c.b) == 0 {
		c.err = errShort
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

func (c *cursor) str() string {
	n := c.uvarint()
	if c.err != nil {
		return ""
	}
	if n > uint64(len(c.b)) || n > 4096 {
		c.err = errShort
		return ""
	}
	s := string(c.b[:n])
	c.b = c.b[n:]
	return s
}

func (c *cursor) values(avail uint32, prev *[32]uint64, n int, fmask uint32, out []uint64) {
	for i := 0; i < n; i++ {
		if avail&(1<<uint(i)) == 0 {
			continue
		}
		if fmask&(1<<uint(i)) != 0 {
			prev[i] ^= bits.Reverse64(c.uvarint())
		} else {
			prev[i] += uint64(c.varint())
		}
		out[i] = prev[i]
	}
}

// decode decodes one sample payload against the decoder's state. On
// error the state is left inconsistent; the caller waits for a keyframe.
func (d *decoder) decode(p []byte) (*Frame, error) {
	c := &cursor{b: p}
	f := &d.f
	f.Seq = c.uvarint()
	at := c.uvarint()
	if at > 1<<53 {
		return nil, errors.New("timestamp out of range")
	}
	f.At = int64(at)
	flags := c.byte1()
	f.Keyframe = flags&flagKeyframe != 0
	if f.Keyframe {
		d.sysPrev = [32]uint64{}
	}
	f.Defined = f.Defined[:0]
	ndef := c.uvarint()
	if ndef > uint64(len(p)) {
		return nil, errors.New("definition count larger than the frame")
	}
	for k := uint64(0); k < ndef && c.err == nil; k++ {
		var id Identity
		idx := c.uvarint()
		if idx >= MaxIdentities {
			return nil, errors.New("identity index beyond the limit")
		}
		id.Index = uint32(idx)
		id.PID = int32(c.varint())
		id.StartTicks = c.uvarint()
		id.StartTime = time.UnixMilli(c.varint())
		id.PPID = int32(c.varint())
		if par := c.uvarint(); par > 0 && par <= MaxIdentities {
			id.Parent, id.ParentOK = uint32(par-1), true
		}
		if uid := c.uvarint(); uid > 0 && uid <= 1<<32 {
			id.UID, id.UIDKnown = uint32(uid-1), true
		}
		id.Name = c.str()
		id.Exe = c.str()
		if c.err != nil {
			break
		}
		st := d.ids[id.Index]
		if st == nil {
			if len(d.ids) >= MaxIdentities {
				return nil, errors.New("too many identities")
			}
			st = &readIdent{}
			d.ids[id.Index] = st
			d.defined++
		}
		st.ok, st.avail, st.prev = true, 0, [32]uint64{}
		f.Defined = append(f.Defined, id)
	}
	if c.err != nil {
		return nil, c.err
	}
	sa := uint32(c.uvarint())
	if d.sN < 32 && sa>>uint(d.sN) != 0 {
		return nil, errors.New("system availability names an undeclared slot")
	}
	nproc := uint64(0)
	sysVals := make([]uint64, d.sN)
	c.values(sa, &d.sysPrev, d.sN, d.sF, sysVals)
	nproc = c.uvarint()
	if c.err != nil {
		return nil, c.err
	}
	if nproc > uint64(len(c.b)) || nproc > MaxFrameProcs {
		return nil, errors.New("process count larger than the frame")
	}
	f.System = Values{Avail: sa, Vals: sysVals}
	// One backing array for every process's values of this frame.
	vals := make([]uint64, int(nproc)*d.pN)
	f.Procs = f.Procs[:0]
	idx := int64(-1)
	seen := make([]*readIdent, 0, nproc)
	for k := uint64(0); k < nproc; k++ {
		idx += c.varint() + 1
		if c.err != nil {
			return nil, c.err
		}
		if idx < 0 || idx >= MaxIdentities {
			return nil, errors.New("identity index out of range")
		}
		st := d.ids[uint32(idx)]
		if st == nil || !st.ok {
			return nil, fmt.Errorf("identity %d is used without a definition in reach", idx)
		}
		a := uint32(c.uvarint()) ^ st.avail
		if d.pN < 32 && a>>uint(d.pN) != 0 {
			return nil, errors.New("process availability names an undeclared slot")
		}
		st.avail = a
		out := vals[int(k)*d.pN : int(k+1)*d.pN : int(k+1)*d.pN]
		c.values(a, &st.prev, d.pN, d.pF, out)
		if c.err != nil {
			return nil, c.err
		}
		f.Procs = append(f.Procs, ProcSample{Index: uint32(idx), Values: Values{Avail: a, Vals: out}})
		seen = append(seen, st)
	}
	if len(c.b) != 0 {
		return nil, errors.New("bytes left after the last field")
	}
	// Identities absent from this frame lose their delta chain: the writer
	// redefines them when they reappear.
	for _, st := range d.live {
		st.ok = false
	}
	for _, st := range seen {
		st.ok = true
	}
	d.live = seen
	return f, nil
}
