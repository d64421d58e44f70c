package recording

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// where the first unusable frame starts, End where the damaged range ends
// (the next readable frame, or the file size). AfterFrame is the sequence
// number of the last good sample frame before it (-1 when none: the
// damage is before the first frame); Skipped counts sample frames that
// passed their checksum but were skipped because their deltas depend on
// the damaged frame. Resumed says what is at End: "keyframe" (sample
// reading resumed there), "sample_frame" (reading resumed at a sample
// frame that does not depend on the damaged bytes, after an unknown frame
// type), "end_record" (no keyframe followed; the end record is the next
// readable frame) or "end_of_file" (nothing after it could be read: no
// keyframe followed, or the frames follow the end record).
type Damage struct {
	Offset     int64  `json:"offset"`
	End        int64  `json:"end"`
	AfterFrame int64  `json:"after_frame"`
	Skipped    int    `json:"skipped_frames"`
	Reason     string `json:"reason"`
	Resumed    string `json:"resumed_at"`
}

// Values of Damage.Resumed.
const (
	ResumedKeyframe  = "keyframe"
	ResumedSample    = "sample_frame"
	ResumedEndRecord = "end_record"
	ResumedEndOfFile = "end_of_file"
)

// Describe is one sentence naming the damaged byte range, its position
// among the sample frames, the skipped frames and where reading resumed
// (only when it did).
func (d Damage) Describe() string {
	pos := "before the first sample frame"
	if d.AfterFrame >= 0 {
		pos = fmt.Sprintf("after sample frame %d", d.AfterFrame)
	}
	msg := fmt.Sprintf("bytes %d to %d are damaged (%s), %s", d.Offset, d.End, d.Reason, pos)
	if d.Skipped > 0 {
		msg += fmt.Sprintf("; %d checksum-valid sample frames depending on it were skipped", d.Skipped)
	}
	switch d.Resumed {
	case ResumedKeyframe:
		msg += fmt.Sprintf("; reading resumed at the keyframe at byte %d", d.End)
	case ResumedSample:
		msg += fmt.Sprintf("; reading resumed at the sample frame at byte %d", d.End)
	case ResumedEndRecord:
		msg += fmt.Sprintf("; no keyframe followed, so no sample after it was read (the end record at byte %d is the next readable frame)", d.End)
	default:
		msg += "; nothing after it up to the end of the file could be read"
	}
	return msg
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
	// Gaps are the runs of sample frames the writer could not write
	// (gap frames), in file order.
	Gaps []Gap
	// Identities is the number of distinct identities defined.
	Identities int
	// First and Last bound the delivered frames (ms since the epoch).
	First, Last int64
}

// Complete reports whether the file ended with an end record and every
// byte was read: no torn tail, no damage, no frames lost to write errors.
func (in *Info) Complete() bool {
	return in.End != nil && in.Torn == nil && len(in.Damaged) == 0 && len(in.Gaps) == 0
}

// LostFrames is the number of sample frames the gap frames say were not
// written.
func (in *Info) LostFrames() uint64 {
	var n uint64
	for _, g := range in.Gaps {
		n += g.LostFrames
	}
	return n
}

// Problems returns one sentence per reason the file is not complete.
func (in *Info) Problems() []string {
	var out []string
	switch {
	case in.End == nil && in.Torn != nil:
		// The writer truncates the bytes of a failed write away, so a
		// frame cut short means it was stopped in the middle of a write.
		out = append(out, "the log ends without its end record, in the middle of a frame: the writer was stopped while writing (the host was killed, crashed or lost power); every complete frame is kept")
	case in.End == nil:
		// A file that ends at a complete frame cannot say why the end
		// record is missing.
		out = append(out, "the log ends without its end record: the recording was not closed, because the host stopped without closing it (killed, crashed, lost power) or could not write the end record (for example the disk was full); every complete frame is kept")
	}
	for _, g := range in.Gaps {
		pos := "before the first sample frame"
		if g.AfterFrame >= 0 {
			pos = fmt.Sprintf("after sample frame %d", g.AfterFrame)
		}
		out = append(out, fmt.Sprintf("%d sample frames due from %s to %s were not written (%s), %s; the recording resumed after the gap",
			g.LostFrames, g.From.UTC().Format(time.RFC3339), g.To.UTC().Format(time.RFC3339), g.Error, pos))
	}
	if in.Torn != nil {
		out = append(out, fmt.Sprintf("the file ends with an incomplete frame at byte %d (%d bytes, %s); it was dropped", in.Torn.Offset, in.Torn.Bytes, in.Torn.Reason))
	}
	for _, d := range in.Damaged {
		out = append(out, d.Describe())
	}
	return out
}

// MaxIdentities bounds the identities a file may define (a guard against
// crafted files; a day of heavy process churn stays far below it).
const MaxIdentities = 1 << 22

// maxIndexJump bounds how far a new identity's index may lie beyond the
// highest defined so far.
const maxIndexJump = 1 << 16

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
// readable sample frame in order. fn's Frame and its slices (values
// included) are reused between calls; copy what you keep. An error from fn stops reading and is
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
	return ReadAt(bytes.NewReader(data), int64(len(data)), onHeader, fn)
}

// ReadAt is ReadWith over size bytes of r, read through a bounded window
// (the file is never held whole: frames are decoded as the window passes).
// An I/O error from r is returned as is.
func ReadAt(r io.ReaderAt, size int64, onHeader func(*Header) error, fn func(*Frame) error) (*Info, error) {
	data := &window{r: r, size: size}
	in := &Info{Size: size, First: -1, Last: -1}
	if m, err := data.slice(0, int64(len(Magic))); err != nil {
		return in, err
	} else if len(m) < len(Magic) || !bytes.Equal(m, Magic[:]) {
		return in, &FormatError{Offset: 0, Msg: "not an inquest recording (magic bytes differ)"}
	}
	off := int64(len(Magic))
	typ, payload, next, reason, err := frameAt(data, off)
	if err != nil {
		return in, err
	}
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

	d := &decoder{pN: pN, sN: sN, pF: pF, sF: sF}
	synced := true // false after damage until the next keyframe
	var cur *Damage
	lastSeq := int64(-1)
	for off < size {
		typ, payload, next, reason, err := frameAt(data, off)
		if err != nil {
			return in, err
		}
		if reason != "" {
			// Find the next frame that checks out.
			at, err := resync(data, off+1)
			if err != nil {
				return in, err
			}
			if at < 0 {
				in.Torn = &Torn{Offset: off, Bytes: size - off, Reason: reason}
				if cur != nil {
					// Damage ran to the end: it is the torn tail.
					in.Torn = &Torn{Offset: cur.Offset, Bytes: size - cur.Offset, Reason: cur.Reason + "; no readable frame follows"}
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
				cur.End, cur.Resumed = off, ResumedEndRecord
				in.Damaged = append(in.Damaged, *cur)
				cur = nil
			}
			in.End = &e
		case TypeGap:
			var g Gap
			if json.Unmarshal(payload, &g) != nil {
				if cur == nil {
					cur = &Damage{Offset: off, AfterFrame: lastSeq, Reason: "gap frame JSON does not decode"}
				}
				off = next
				continue
			}
			in.Gaps = append(in.Gaps, g)
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
				cur.End, cur.Resumed = off, ResumedKeyframe
				if !key {
					cur.Resumed = ResumedSample
				}
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
		cur.End, cur.Resumed = size, ResumedEndOfFile
		in.Damaged = append(in.Damaged, *cur)
	}
	in.Identities = d.defined
	return in, nil
}

// window serves byte ranges of a ReaderAt from one buffer of at least
// windowSize bytes; a slice stays valid until the next call.
type window struct {
	r     io.ReaderAt
	size  int64
	buf   []byte
	start int64
}

const windowSize = 1 << 20

// slice returns the bytes [off, off+n) clipped to the end of the input.
func (w *window) slice(off, n int64) ([]byte, error) {
	if off >= w.size {
		return nil, nil
	}
	if off+n > w.size {
		n = w.size - off
	}
	if off >= w.start && off+n <= w.start+int64(len(w.buf)) {
		return w.buf[off-w.start : off-w.start+n], nil
	}
	want := max(n, windowSize)
	if off+want > w.size {
		want = w.size - off
	}
	if int64(cap(w.buf)) < want {
		w.buf = make([]byte, want)
	}
	w.buf = w.buf[:want]
	if _, err := w.r.ReadAt(w.buf, off); err != nil && !(errors.Is(err, io.EOF)) {
		w.buf = w.buf[:0]
		return nil, fmt.Errorf("recording: read at byte %d: %w", off, err)
	}
	w.start = off
	return w.buf[:n], nil
}

// frameAt checks the frame at off: sync marker, length within the file
// and MaxPayload, checksum. reason is "" for a good frame; err is an I/O
// error.
func frameAt(w *window, off int64) (typ byte, payload []byte, next int64, reason string, err error) {
	head, err := w.slice(off, frameHead)
	if err != nil {
		return 0, nil, 0, "", err
	}
	if len(head) >= len(Sync) && !bytes.Equal(head[:len(Sync)], Sync[:]) {
		return 0, nil, 0, "no frame sync marker", nil
	}
	if len(head) < frameHead {
		return 0, nil, 0, "frame header cut short", nil
	}
	n := binary.LittleEndian.Uint32(head[4:8])
	if n > MaxPayload {
		return 0, nil, 0, "frame length beyond the limit", nil
	}
	end := int64(frameHead) + int64(n) + frameTrail
	if off+end > w.size {
		return 0, nil, 0, "frame extends past the end of the file", nil
	}
	rest, err := w.slice(off, end)
	if err != nil {
		return 0, nil, 0, "", err
	}
	payload = rest[frameHead : frameHead+int64(n)]
	want := binary.LittleEndian.Uint32(rest[frameHead+int64(n):])
	if checksum(rest[4:frameHead], payload) != want {
		return 0, nil, 0, "frame checksum mismatch", nil
	}
	return rest[8], payload, off + end, "", nil
}

// resync returns the offset of the next good frame at or after from, or -1.
func resync(w *window, from int64) (int64, error) {
	for from < w.size {
		chunk, err := w.slice(from, windowSize)
		if err != nil {
			return -1, err
		}
		i := bytes.Index(chunk, Sync[:])
		if i < 0 {
			// A marker may straddle the chunk end.
			from += max(int64(len(chunk))-int64(len(Sync))+1, 1)
			continue
		}
		at := from + int64(i)
		_, _, _, reason, err := frameAt(w, at)
		if err != nil {
			return -1, err
		}
		if reason == "" {
			return at, nil
		}
		from = at + 1
	}
	return -1, nil
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
	ids     []*readIdent // by file index
	sysVals []uint64
	vals    []uint64
	spare   []*readIdent
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
		// Writers number identities consecutively; a jump beyond what a
		// damaged range could have defined is damage, not an allocation.
		if int(id.Index) > len(d.ids)+maxIndexJump {
			return nil, errors.New("identity index jumps beyond the identities defined so far")
		}
		for int(id.Index) >= len(d.ids) {
			d.ids = append(d.ids, nil)
		}
		st := d.ids[id.Index]
		if st == nil {
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
	if cap(d.sysVals) < d.sN {
		d.sysVals = make([]uint64, d.sN)
	}
	sysVals := d.sysVals[:d.sN]
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
	if cap(d.vals) < int(nproc)*d.pN {
		d.vals = make([]uint64, int(nproc)*d.pN)
	}
	vals := d.vals[:int(nproc)*d.pN]
	f.Procs = f.Procs[:0]
	idx := int64(-1)
	// seen and live swap buffers frame to frame.
	seen := d.spare[:0]
	for k := uint64(0); k < nproc; k++ {
		idx += c.varint() + 1
		if c.err != nil {
			return nil, c.err
		}
		if idx < 0 || idx >= MaxIdentities {
			return nil, errors.New("identity index out of range")
		}
		var st *readIdent
		if idx < int64(len(d.ids)) {
			st = d.ids[idx]
		}
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
	d.live, d.spare = seen, d.live
	return f, nil
}
