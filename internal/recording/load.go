package recording

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"time"

	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
)

// ReaderReserve is the fixed part of a load's memory reservation (the
// reader's own buffers and tables).
const ReaderReserve = 1 << 20

// Reservation returns the bytes a load of a file of size bytes reserves
// before reconstructing anything: ReaderReserve, the read window, and
// twice the file size for the reconstructed per-identity rings, identity
// records and the collector's headroom while they grow (the rings use the
// history codec, which costs about as many bytes per sample as the file).
// It is conservative: it can reject a file that would fit under an exact
// heap measurement.
func Reservation(size int64) int64 { return ReaderReserve + windowSize + size*2 }

// BudgetError is a load that would exceed its memory budget; nothing was
// reconstructed.
type BudgetError struct {
	Need, Budget int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("loading needs a reservation of %d bytes and the budget has %d", e.Need, e.Budget)
}

// Proc is one recorded identity with its reconstructed history.
type Proc struct {
	Identity
	// Series holds the identity's frames in the current catalog's slot
	// order (sample.ProcessMetrics).
	Series *history.Series
	// First and Last are its first and last frame times (ms).
	First, Last int64
	// Samples is the number of frames holding it.
	Samples int
	// InFinal says it is present in the final readable frame.
	InFinal bool
	// Final holds its values in the final frame (current slot order)
	// when InFinal.
	Final sample.Process
}

// Log is a recording loaded for queries: per-identity and system rings
// built with the history codec, the final frame, and what the reader
// found (Info).
type Log struct {
	Info     *Info
	Interval time.Duration
	// System holds the system values of every frame (current slot order).
	System *history.Series
	// FinalSystem is the system sample of the final frame.
	FinalSystem sample.System
	// FinalAt is the final frame's time (ms since the epoch); it is -1
	// when the file holds no sample frame (use FinalTime).
	FinalAt int64
	// Procs are sorted by PID, then start ticks.
	Procs   []*Proc
	byIndex []*Proc // by file index
	// Unmapped lists header metric ids this build's catalog does not know
	// (their values are not loaded); Absent lists catalog ids the file
	// does not carry (unavailable in every frame).
	Unmapped, Absent []string
	// Reserved is the reservation charged for the load.
	Reserved int64
}

// FinalTime returns the final frame's time and true, or the zero time and
// false when the recording holds no sample frame (it was stopped or
// killed before its first sample): such a file has no sample time.
func (l *Log) FinalTime() (time.Time, bool) {
	if l.Info == nil || l.Info.Frames == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(l.FinalAt), true
}

// ProcByIndex returns the identity with file index i.
func (l *Log) ProcByIndex(i uint32) *Proc {
	if int(i) < len(l.byIndex) {
		return l.byIndex[i]
	}
	return nil
}

// slotMap maps file slots to current catalog slots (-1: not in catalog).
func slotMap(defs []MetricDef, catalog []sample.Metric) (m [32]int, unmapped, absent []string) {
	for i := range m {
		m[i] = -1
	}
	seen := map[string]bool{}
	for _, d := range defs {
		found := false
		for _, c := range catalog {
			if c.ID == d.ID && (d.Repr == c.Repr) {
				m[d.Slot] = c.Index
				found = true
			}
		}
		seen[d.ID] = true
		if !found {
			unmapped = append(unmapped, d.ID)
		}
	}
	for _, c := range catalog {
		if !seen[c.ID] {
			absent = append(absent, c.ID)
		}
	}
	return m, unmapped, absent
}

func remap(v Values, m *[32]int, out []uint64) uint32 {
	var avail uint32
	for i, x := range v.Vals {
		if v.Avail&(1<<uint(i)) == 0 || m[i] < 0 {
			continue
		}
		out[m[i]] = x
		avail |= 1 << uint(m[i])
	}
	return avail
}

func catalogFloat(ms []sample.Metric) uint32 {
	var f uint32
	for _, m := range ms {
		if m.Repr == sample.ReprNumber {
			f |= 1 << uint(m.Index)
		}
	}
	return f
}

// NotRegularError is a path that names something other than a regular
// file (a FIFO, socket, device or directory). Load refuses it after an
// fstat of a non-blocking open, before reading a byte: reading a FIFO
// would wait for a writer forever.
type NotRegularError struct {
	Path string
	// Mode is the file's type and permission bits (fstat st_mode).
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s); a recording is read only from a regular file", e.Path, typeName(e.Mode))
}

// typeName names a file type for messages.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "type " + m.Type().String()
}

// Load reads the recording at path within budget bytes: the reservation
// (Reservation of the file size) is checked before the file is read, and
// exceeding it is a *BudgetError, never a shortened history. A path that
// is not a regular file is a *NotRegularError (refused without blocking,
// even for a FIFO with no writer). A file that is not a readable recording
// is a *FormatError; damage after the header is reported in Log.Info.
func Load(path string, budget int64) (*Log, error) {
	return LoadContext(context.Background(), path, budget)
}

// LoadContext is Load that stops reading when ctx is done: the context is
// checked before every read of the file (at most one 1 MiB window apart)
// and its error (context.Canceled or DeadlineExceeded) is returned.
func LoadContext(ctx context.Context, path string, budget int64) (*Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	need := Reservation(st.Size())
	if need > budget {
		return nil, &BudgetError{Need: need, Budget: budget}
	}
	l, err := load(ctxReaderAt{ctx, f}, st.Size())
	if l != nil {
		l.Reserved = need
	}
	return l, err
}

// ctxReaderAt fails every read once its context is done.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// LoadBytes builds a Log from a whole file's bytes (no budget check).
func LoadBytes(data []byte) (*Log, error) {
	return load(bytes.NewReader(data), int64(len(data)))
}

func load(r io.ReaderAt, size int64) (*Log, error) {
	l := &Log{}
	pFloat, sFloat := catalogFloat(sample.ProcessMetrics[:]), catalogFloat(sample.SystemMetrics[:])
	var pm, sm [32]int
	onHeader := func(h *Header) error {
		if h.IntervalMs <= 0 || h.IntervalMs > 3600_000 {
			return &FormatError{Offset: int64(len(Magic)), Msg: "header interval_ms is out of range"}
		}
		l.Interval = time.Duration(h.IntervalMs) * time.Millisecond
		pm, l.Unmapped, l.Absent = slotMap(h.ProcessMetrics, sample.ProcessMetrics[:])
		var su, sa []string
		sm, su, sa = slotMap(h.SystemMetrics, sample.SystemMetrics[:])
		l.Unmapped = append(l.Unmapped, su...)
		l.Absent = append(l.Absent, sa...)
		l.System = history.NewSeries(sample.NumSystemMetrics, sFloat, math.MaxInt32)
		return nil
	}
	info, err := ReadAt(r, size, onHeader, func(f *Frame) error {
		for _, id := range f.Defined {
			for int(id.Index) >= len(l.byIndex) {
				l.byIndex = append(l.byIndex, nil)
			}
			p := l.byIndex[id.Index]
			if p == nil {
				p = &Proc{Series: history.NewSeries(sample.NumProcessMetrics, pFloat, math.MaxInt32)}
				l.byIndex[id.Index] = p
				l.Procs = append(l.Procs, p)
			}
			p.Identity = id
		}
		t := time.UnixMilli(f.At)
		// Values are remapped into each target's final-sample buffer and
		// appended from there: after the last frame the buffers hold the
		// final frame (Append reads only available slots).
		fs := &l.FinalSystem
		fs.Avail = remap(f.System, &sm, fs.Vals[:])
		l.System.Append(t, fs.Avail, fs.Vals[:])
		for _, ps := range f.Procs {
			p := l.ProcByIndex(ps.Index)
			if p == nil {
				return &FormatError{Msg: "a frame names an undefined identity"}
			}
			p.Final.Avail = remap(ps.Values, &pm, p.Final.Vals[:])
			p.Series.Append(t, p.Final.Avail, p.Final.Vals[:])
			if p.Samples == 0 {
				p.First = f.At
			}
			p.Last = f.At
			p.Samples++
		}
		return nil
	})
	l.Info = info
	if err != nil {
		return nil, err
	}
	l.FinalAt = info.Last
	for _, p := range l.Procs {
		p.InFinal = info.Frames > 0 && p.Last == info.Last
		if p.InFinal {
			p.Final.PID, p.Final.StartTicks, p.Final.Name = p.PID, p.StartTicks, p.Name
		} else {
			p.Final = sample.Process{}
		}
	}
	sort.Slice(l.Procs, func(i, j int) bool {
		a, b := l.Procs[i], l.Procs[j]
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		if a.StartTicks != b.StartTicks {
			return a.StartTicks < b.StartTicks
		}
		return a.Index < b.Index
	})
	return l, nil
}
