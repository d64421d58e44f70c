// Package recording writes and reads inquest recording files (format v1,
// documented in docs/recording-format.md): what the tracked processes and
// the system did, frame by frame, hours long, in a file that keeps every
// complete frame after a crash (SIGKILL, power loss) and says exactly where
// it ends early.
//
// A file is the 8-byte magic followed by frames. Every frame is
// self-checking: a 4-byte sync marker, a little-endian uint32 payload
// length, a one-byte frame type, the payload, and a CRC-32C (Castagnoli)
// over length, type and payload. The first frame is the header (JSON: the
// format version, the interval, the fixed tracked names and the metric
// catalog's ids, units and representations), then sample frames (binary),
// then an end record (JSON) written by a clean stop. A file without an end
// record is an interrupted recording. A gap frame (JSON) counts sample
// frames the writer could not write (a full disk) before the keyframe it
// resumed with.
//
// Sample frames encode per-identity values with deltas, as the in-memory
// history codec does (internal/history): integers as zigzag varints of the
// wrapping difference from the identity's previous available value,
// float64 bits as uvarints of the bit-reversed XOR with the previous bits.
// Every KeyframeEvery frames a keyframe restarts every delta chain and
// redefines every present identity, so a reader that meets a damaged frame
// resynchronises at the next keyframe and names the damaged byte range.
package recording

import (
	"encoding/binary"
	"hash/crc32"
	"sync"
	"time"
)

// Version is the format version this package writes (header field
// "version"); Read accepts exactly this version.
const Version = 1

// Format is the header's "format" field.
const Format = "inquest-recording"

// Magic opens every recording file (PNG-style: a high byte, the name, and
// line-ending bytes that reveal text-mode mangling).
var Magic = [8]byte{0x89, 'I', 'Q', 'R', '\r', '\n', 0x1a, '\n'}

// Sync starts every frame; a reader searches for it to resynchronise.
var Sync = [4]byte{0xA5, 'I', 'Q', 'F'}

// Frame types.
const (
	TypeHeader = 1
	TypeSample = 2
	TypeEnd    = 3
	// TypeGap marks sample frames the writer could not write (a full
	// disk); a keyframe follows it.
	TypeGap = 4
)

// Frame layout sizes: sync (4) + length (4) + type (1) before the payload,
// CRC (4) after it.
const (
	frameHead  = 9
	frameTrail = 4
	// MaxPayload bounds one frame's payload (64 MiB); a larger declared
	// length is damage, never an allocation.
	MaxPayload = 64 << 20
)

// KeyframeEvery is the keyframe period in sample frames.
const KeyframeEvery = 60

// flagKeyframe marks a keyframe in a sample frame's flags byte.
const flagKeyframe = 1

// castagnoli is the CRC-32C table, made on first use: making it costs
// every process start (including those that never touch a recording)
// about 0.1 ms.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// checksum is the frame CRC: CRC-32C over the length, type and payload bytes.
func checksum(lenType []byte, payload []byte) uint32 {
	t := castagnoli()
	c := crc32.Update(0, t, lenType)
	return crc32.Update(c, t, payload)
}

// appendFrame appends one complete frame to dst.
func appendFrame(dst []byte, typ byte, payload []byte) []byte {
	dst = append(dst, Sync[:]...)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, typ)
	c := checksum(dst[start:], payload)
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, c)
}

// MetricDef is one catalog entry carried in the header: the value slot in
// sample frames, the canonical id, unit and representation
// ("integer_string" or "number").
type MetricDef struct {
	Slot int    `json:"slot"`
	ID   string `json:"id"`
	Unit string `json:"unit"`
	Repr string `json:"representation"`
}

// Header is the JSON payload of the first frame.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// CreatedAt is when the recording started (RFC 3339).
	CreatedAt time.Time `json:"created_at"`
	// IntervalMs is the recording interval (1000, 2000, 5000 or 10000).
	IntervalMs int64 `json:"interval_ms"`
	// SessionID is the host's recording_session_id.
	SessionID string `json:"recording_session_id,omitempty"`
	// Tracked are the fixed tracked names (lower case).
	Tracked []string `json:"tracked_names"`
	// Hostname and BootID describe the machine (process start ticks are
	// meaningful within one boot).
	Hostname string `json:"hostname,omitempty"`
	BootID   string `json:"boot_id,omitempty"`
	// ClockTicks is the kernel's clock-tick rate of start_ticks (100 on Linux).
	ClockTicks int `json:"clock_ticks,omitempty"`
	// KeyframeEvery is the keyframe period the writer used.
	KeyframeEvery int `json:"keyframe_every"`
	// ProcessMetrics and SystemMetrics are the catalogs of the value slots.
	ProcessMetrics []MetricDef `json:"process_metrics"`
	SystemMetrics  []MetricDef `json:"system_metrics"`
}

// End is the JSON payload of the end record.
type End struct {
	// EndedAt is when the writer stopped.
	EndedAt time.Time `json:"ended_at"`
	// Frames is the number of sample frames written.
	Frames uint64 `json:"frames"`
	// Reason is "stopped", "duration_limit" or "host_stopped".
	Reason string `json:"reason"`
	// LostFrames is the number of sample frames the writer could not
	// write (each run of them is a gap frame); 0 is left out.
	LostFrames uint64 `json:"lost_frames,omitempty"`
}

// Gap is the JSON payload of a gap frame: LostFrames consecutive sample
// frames, due from From to To, were not written because writing failed
// with Error (for example no space left on the device). AfterFrame is the
// sequence number of the last sample frame before the gap (-1 when none).
// The writer writes it before the first frame that reaches the file after
// the failure; that frame is a keyframe.
type Gap struct {
	LostFrames uint64    `json:"lost_frames"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	AfterFrame int64     `json:"after_frame"`
	Error      string    `json:"error"`
}

// Identity is one recorded process lifetime. Index is its file-local
// number; PID + StartTicks identify it within BootID.
type Identity struct {
	Index      uint32
	PID        int32
	StartTicks uint64
	// StartTime is the wall-clock start, ms precision.
	StartTime time.Time
	PPID      int32
	// Parent is the file index of the parent identity when the writer
	// verified it (the parent was in the same snapshot with an earlier
	// start); ParentOK false otherwise.
	Parent   uint32
	ParentOK bool
	UID      uint32
	UIDKnown bool
	Name     string
	Exe      string
}

// Values is one target's sample: bit i of Avail says slot i was measured;
// Vals[i] is meaningful only then (float slots hold float64 bits).
type Values struct {
	Avail uint32
	Vals  []uint64
}

// ProcSample is one identity's values in a frame.
type ProcSample struct {
	Index uint32
	Values
}

// Frame is one decoded sample frame.
type Frame struct {
	// Seq numbers sample frames from 0.
	Seq uint64
	// At is the snapshot time in ms since the Unix epoch.
	At       int64
	Keyframe bool
	// Defined are identities (re)defined in this frame.
	Defined []Identity
	System  Values
	Procs   []ProcSample
}
