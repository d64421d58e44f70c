package recording

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// Catalog returns the header catalogs of this build's metric catalog
// (internal/sample): slot, id, unit and representation of every process and
// system metric.
func Catalog() (process, system []MetricDef) {
	for _, m := range sample.ProcessMetrics {
		process = append(process, MetricDef{Slot: m.Index, ID: m.ID, Unit: m.Unit, Repr: m.Repr})
	}
	for _, m := range sample.SystemMetrics {
		system = append(system, MetricDef{Slot: m.Index, ID: m.ID, Unit: m.Unit, Repr: m.Repr})
	}
	return process, system
}

// floatMask returns the slots of defs whose representation is "number".
func floatMask(defs []MetricDef) uint32 {
	var m uint32
	for _, d := range defs {
		if d.Repr == sample.ReprNumber && d.Slot >= 0 && d.Slot < 32 {
			m |= 1 << uint(d.Slot)
		}
	}
	return m
}

func slotCount(defs []MetricDef) int {
	n := 0
	for _, d := range defs {
		if d.Slot+1 > n {
			n = d.Slot + 1
		}
	}
	return n
}

// identState is the delta chain of an identity present in the previous
// frame. Identities absent from a frame lose it (their state is dropped,
// their index kept), so the writer's memory follows the live set.
type identState struct {
	id    sample.Identity
	index uint32
	seen  uint64 // seq of the last frame holding it
	avail uint32
	prev  [32]uint64
}

// Writer appends frames to a recording. Each frame reaches the file with
// one write(2) when it is written (on disk in the page cache, not synced);
// Close writes the end record and syncs. A Writer is not safe for
// concurrent use.
type Writer struct {
	w      io.Writer
	f      *os.File
	hdr    Header
	pFloat uint32
	sFloat uint32
	pN, sN int

	seq     uint64
	ids     map[sample.Identity]uint32 // file index of every identity written
	state   map[sample.Identity]*identState
	live    []*identState
	next    uint32
	sysPrev [32]uint64
	buf     []byte
	frame   []byte
	bytes   int64
	err     error
	lastAt  int64

	// torn is how many bytes of the failed write reached the file after
	// bytes (they are truncated away before writing resumes).
	torn int64
	// forceKey makes the next sample frame a keyframe (after a failed
	// write the delta chains no longer match the file).
	forceKey bool
	// gap is the pending run of lost frames, written as a gap frame
	// before the next frame that reaches the file.
	gap       Gap
	lostTotal uint64
	lastTry   int64
}

// Create creates path with create-new semantics (O_EXCL: an existing file
// is never overwritten; the error wraps fs.ErrExist) and writes the magic
// and the header frame. hdr.Format, Version, KeyframeEvery and empty
// catalogs are filled in.
func Create(path string, hdr Header) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(f, hdr)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	w.f = f
	return w, nil
}

// NewWriter writes the magic and header to dst and returns a Writer over
// it (Close does not close dst unless it came from Create).
func NewWriter(dst io.Writer, hdr Header) (*Writer, error) {
	hdr.Format, hdr.Version, hdr.KeyframeEvery = Format, Version, KeyframeEvery
	if hdr.ProcessMetrics == nil && hdr.SystemMetrics == nil {
		hdr.ProcessMetrics, hdr.SystemMetrics = Catalog()
	}
	if hdr.Tracked == nil {
		hdr.Tracked = []string{}
	}
	w := &Writer{w: dst, hdr: hdr, ids: map[sample.Identity]uint32{}, state: map[sample.Identity]*identState{},
		pFloat: floatMask(hdr.ProcessMetrics), sFloat: floatMask(hdr.SystemMetrics),
		pN: slotCount(hdr.ProcessMetrics), sN: slotCount(hdr.SystemMetrics)}
	if w.pN > 32 || w.sN > 32 {
		return nil, errors.New("recording: more than 32 metric slots")
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), Magic[:]...)
	b = appendFrame(b, TypeHeader, js)
	if err := w.write(b); err != nil {
		return nil, err
	}
	return w, nil
}

// write writes b with one Write call. After a failed write the bytes
// that reached the file are counted in torn, not in bytes: bytes always
// ends at a frame boundary.
func (w *Writer) write(b []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(b)
	if err != nil {
		w.torn = int64(n)
		w.err = fmt.Errorf("recording: write: %w", err)
		return w.err
	}
	w.bytes += int64(n)
	return nil
}

// recover makes a writer that failed to write usable again: the bytes of
// the failed write are truncated away (the file ends at its last complete
// frame) and the next sample frame is a keyframe. Only a writer over a
// file (Create) can recover; the write error stays otherwise.
func (w *Writer) recover() error {
	if w.err == nil {
		return nil
	}
	if w.f == nil {
		return w.err
	}
	if w.torn > 0 {
		if err := w.f.Truncate(w.bytes); err != nil {
			return w.err
		}
	}
	if _, err := w.f.Seek(w.bytes, io.SeekStart); err != nil {
		return w.err
	}
	w.torn, w.err, w.forceKey = 0, nil, true
	return nil
}

// lose counts one frame at ms that was not written because of err.
func (w *Writer) lose(at int64, err error) {
	if w.gap.LostFrames == 0 {
		w.gap.From = time.UnixMilli(at).UTC()
	}
	w.gap.LostFrames++
	w.gap.To = time.UnixMilli(at).UTC()
	w.gap.Error = err.Error()
	w.lostTotal++
}

// appendGap appends the pending gap frame (if any frames were lost) to dst.
func (w *Writer) appendGap(dst []byte) []byte {
	if w.gap.LostFrames == 0 {
		return dst
	}
	g := w.gap
	g.AfterFrame = int64(w.seq) - 1
	js, _ := json.Marshal(g)
	return appendFrame(dst, TypeGap, js)
}

// Header returns the header as written.
func (w *Writer) Header() Header { return w.hdr }

// Frames returns the number of sample frames written.
func (w *Writer) Frames() uint64 { return w.seq }

// Bytes returns the bytes written so far.
func (w *Writer) Bytes() int64 { return w.bytes }

// LastAt returns the time of the last frame written (zero before any).
func (w *Writer) LastAt() time.Time {
	if w.seq == 0 {
		return time.Time{}
	}
	return time.UnixMilli(w.lastAt)
}

// Err returns the write error of the last write, nil once a later write
// succeeded.
func (w *Writer) Err() error { return w.err }

// LostFrames returns the number of sample frames that could not be
// written (WriteSnapshot failed for them), over the whole recording.
func (w *Writer) LostFrames() uint64 { return w.lostTotal }

// LastAttemptAt returns the snapshot time of the last WriteSnapshot call,
// written or lost (zero before any): the cadence clock of a writer that
// keeps retrying while writes fail.
func (w *Writer) LastAttemptAt() time.Time {
	if w.lastTry == 0 {
		return time.Time{}
	}
	return time.UnixMilli(w.lastTry)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendValues encodes the available slots of vals against prev (updating
// prev), as the history codec does.
func appendValues(b []byte, avail uint32, vals []uint64, prev *[32]uint64, n int, fmask uint32) []byte {
	for i := 0; i < n; i++ {
		if avail&(1<<uint(i)) == 0 {
			continue
		}
		v := vals[i]
		if fmask&(1<<uint(i)) != 0 {
			b = binary.AppendUvarint(b, bits.Reverse64(v^prev[i]))
		} else {
			b = binary.AppendVarint(b, int64(v-prev[i]))
		}
		prev[i] = v
	}
	return b
}

// WriteSnapshot writes one sample frame: the system values of snap and the
// values of procs (processes of snap, in PID order, selected by the
// caller). Identities seen for the first time, reappearing after an
// absence, or present in a keyframe are (re)defined in the frame.
//
// A failed write (a full disk) loses the frame, not the recording: the
// error is returned and the frame counted as lost; the next call truncates
// the partly written bytes, and when its write succeeds the file gets a gap
// frame (the lost frames' count and time span, the error) followed by a
// keyframe, so a reader sees the gap and resumes decoding at once.
func (w *Writer) WriteSnapshot(snap *sample.Snapshot, procs []*sample.Process) error {
	at := snap.Time.UnixMilli()
	w.lastTry = at
	if err := w.recover(); err != nil {
		w.lose(at, err)
		return err
	}
	key := w.seq%KeyframeEvery == 0 || w.forceKey
	nextBefore := w.next
	b := w.buf[:0]
	b = binary.AppendUvarint(b, w.seq)
	b = binary.AppendUvarint(b, uint64(at))
	flags := byte(0)
	if key {
		flags |= flagKeyframe
		w.sysPrev = [32]uint64{}
	}
	b = append(b, flags)

	// Identity definitions.
	present := make([]*identState, len(procs))
	var defs []int
	for i, p := range procs {
		id := p.ID()
		st := w.state[id]
		if st == nil {
			idx, ok := w.ids[id]
			if !ok {
				idx = w.next
				w.next++
				w.ids[id] = idx
			}
			st = &identState{id: id, index: idx}
			w.state[id] = st
			defs = append(defs, i)
		} else if key {
			defs = append(defs, i)
			st.avail, st.prev = 0, [32]uint64{}
		}
		st.seen = w.seq + 1
		present[i] = st
	}
	b = binary.AppendUvarint(b, uint64(len(defs)))
	for _, i := range defs {
		p := procs[i]
		b = binary.AppendUvarint(b, uint64(present[i].index))
		b = binary.AppendVarint(b, int64(p.PID))
		b = binary.AppendUvarint(b, p.StartTicks)
		b = binary.AppendVarint(b, p.StartTime.UnixMilli())
		b = binary.AppendVarint(b, int64(p.PPID))
		parent := uint64(0)
		if par := snap.Find(p.PPID); par != nil && par.StartTicks < p.StartTicks {
			if pidx, ok := w.ids[par.ID()]; ok {
				parent = uint64(pidx) + 1
			}
		}
		b = binary.AppendUvarint(b, parent)
		uid := uint64(0)
		if p.UIDKnown {
			uid = uint64(p.UID) + 1
		}
		b = binary.AppendUvarint(b, uid)
		b = appendString(b, p.Name)
		b = appendString(b, p.Exe)
	}

	// System.
	sa := snap.System.Avail & (1<<uint(w.sN) - 1)
	b = binary.AppendUvarint(b, uint64(sa))
	b = appendValues(b, sa, snap.System.Vals[:], &w.sysPrev, w.sN, w.sFloat)

	// Processes: index gaps (ascending index order is not required; the
	// index is written as a zigzag delta from the previous one), the
	// availability XOR the identity's previous availability, then values.
	b = binary.AppendUvarint(b, uint64(len(procs)))
	prevIdx := int64(-1)
	for i, p := range procs {
		st := present[i]
		b = binary.AppendVarint(b, int64(st.index)-prevIdx-1)
		prevIdx = int64(st.index)
		a := p.Avail & (1<<uint(w.pN) - 1)
		b = binary.AppendUvarint(b, uint64(a^st.avail))
		st.avail = a
		b = appendValues(b, a, p.Vals[:], &st.prev, w.pN, w.pFloat)
	}
	// Identities absent from this frame lose their delta chain; the index
	// is kept, so a reappearing lifetime keeps its file identity.
	for _, st := range w.live {
		if st.seen != w.seq+1 {
			delete(w.state, st.id)
		}
	}
	w.live = append(w.live[:0], present...)
	w.buf = b
	w.frame = appendFrame(w.appendGap(w.frame[:0]), TypeSample, b)
	if err := w.write(w.frame); err != nil {
		// The frame is lost: identities first numbered in it are
		// numbered again when next written, and the next frame that
		// reaches the file is a keyframe.
		for id, idx := range w.ids {
			if idx >= nextBefore {
				delete(w.ids, id)
			}
		}
		w.next = nextBefore
		w.state, w.live = map[sample.Identity]*identState{}, w.live[:0]
		w.forceKey = true
		w.lose(at, err)
		return err
	}
	w.gap = Gap{}
	w.forceKey = false
	w.seq++
	w.lastAt = at
	return nil
}

// Sync flushes the file to stable storage (no-op without a file).
func (w *Writer) Sync() error {
	if w.f == nil {
		return nil
	}
	return w.f.Sync()
}

// Close writes the pending gap frame (frames lost to write errors) and the
// end record with reason, syncs and closes the file. When that write fails
// too (the disk is still full), the partly written bytes are truncated
// away, the error is returned and the file closed, keeping every complete
// frame (it reads as a recording without an end record).
func (w *Writer) Close(reason string) (End, error) {
	end := End{EndedAt: time.Now().UTC(), Frames: w.seq, Reason: reason, LostFrames: w.lostTotal}
	js, _ := json.Marshal(end)
	err := w.recover()
	if err == nil {
		err = w.write(appendFrame(w.appendGap(nil), TypeEnd, js))
		if err != nil && w.f != nil && w.torn > 0 {
			w.f.Truncate(w.bytes)
		}
	}
	if w.f != nil {
		if err == nil {
			err = w.f.Sync()
		}
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
		w.f = nil
	}
	return end, err
}

// Abort closes the file without an end record (the file reads as
// interrupted).
func (w *Writer) Abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}
