package har

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
)

// WebSocket facts come from Chrome's HAR extension: a WebSocket connection
// entry carries _webSocketMessages, one object per frame the DevTools
// network agent observed, {type: "send"|"receive"|"error", time: seconds
// (wall clock), opcode, data}. data is the payload as UTF-8 text for
// opcode 1 and base64 for every other opcode (Chromium's
// WebSocketMessageToProtocol); "error" records carry an error message and
// opcode -1 and are not frames.

// Frame directions.
const (
	Send    = "send"
	Receive = "receive"
)

// Frame payload states.
const (
	// PayloadRetained: data is present and decodes; size and sha256 known.
	PayloadRetained = "retained"
	// PayloadUnavailable: the record has no data (or no opcode to say how
	// data is encoded): the payload is unknown, not empty.
	PayloadUnavailable = "unavailable"
	// PayloadUndecodable: data is not valid base64 for a non-text opcode.
	PayloadUndecodable = "undecodable"
)

// Inventory states.
const (
	// InventoryComplete: frames are recorded, every record decoded, and
	// the capture is declared complete (HAR cannot prove that a producer
	// kept every frame, so completeness is the caller's declaration).
	InventoryComplete = "complete"
	// InventoryPartial: frames are recorded but the capture is not
	// declared complete or some records could not be decoded.
	InventoryPartial = "partial"
	// InventoryUnavailable: the producer kept no frames for this
	// connection (no _webSocketMessages array); the frame count is
	// unknown, never zero.
	InventoryUnavailable = "unavailable"
)

// MaxPreviewBytes bounds a text frame's preview (UTF-8 bytes, cut at a
// character boundary).
const MaxPreviewBytes = 120

type rawFrame struct {
	Type   string   `json:"type"`
	Time   *float64 `json:"time"`
	Opcode *int     `json:"opcode"`
	Data   *string  `json:"data"`
}

// Frame is one recorded WebSocket frame (Chrome records whole messages).
type Frame struct {
	// Direction is "send" (client to server) or "receive".
	Direction string `json:"direction"`
	// Position is the 1-based position among the connection's frames of
	// the same direction; ConnectionPosition among all its frames (error
	// records excluded), in recorded order.
	Position           int `json:"position"`
	ConnectionPosition int `json:"connection_position"`
	// Opcode is the WebSocket opcode (1 text, 2 binary, 8 close, 9 ping,
	// 10 pong); null when absent.
	Opcode *int `json:"opcode"`
	// TimeS is the record's time in seconds as the producer wrote it
	// (Chrome: wall-clock seconds since the Unix epoch).
	TimeS *float64 `json:"time_s,omitempty"`
	// Payload is PayloadRetained, PayloadUnavailable or PayloadUndecodable.
	Payload string `json:"payload"`
	// PayloadSize is the payload length in bytes (decimal string) and
	// PayloadSHA256 the hex SHA-256 of the payload bytes (UTF-8 text for
	// opcode 1, base64-decoded bytes otherwise); both absent when unknown.
	PayloadSize   string `json:"payload_size,omitempty"`
	PayloadSHA256 string `json:"payload_sha256,omitempty"`
	// TextPreview is the first at most MaxPreviewBytes bytes of a text
	// frame's payload; TextPreviewTruncated says whether it was cut.
	TextPreview          *string `json:"text_preview,omitempty"`
	TextPreviewTruncated bool    `json:"text_preview_truncated,omitempty"`
}

// Inventory is the frame inventory of one WebSocket connection entry.
type Inventory struct {
	// Frames is "recorded" when the entry carries a _webSocketMessages
	// array, else "unavailable" (the producer kept no frames).
	Frames string `json:"frames"`
	// Inventory is InventoryComplete, InventoryPartial or
	// InventoryUnavailable (see SetCompleteness; partial until then).
	Inventory string `json:"inventory"`
	// Reason says why frames are unavailable or the inventory partial.
	Reason string `json:"reason,omitempty"`
	// Counts maps direction to opcode (decimal, or "unknown") to frames;
	// FrameCount is their total. Both absent when frames are unavailable.
	Counts     map[string]map[string]int `json:"counts,omitempty"`
	FrameCount *int                      `json:"frame_count,omitempty"`
	// PayloadBytes maps direction to the sum of known payload sizes
	// (decimal string); PayloadUnknown counts frames whose size is unknown.
	PayloadBytes   map[string]string `json:"payload_bytes,omitempty"`
	PayloadUnknown int               `json:"payload_unknown,omitempty"`
	// FirstTimeS and LastTimeS are the least and greatest known frame times.
	FirstTimeS *float64 `json:"first_time_s,omitempty"`
	LastTimeS  *float64 `json:"last_time_s,omitempty"`
	// ErrorRecords counts Chrome "error" records (not frames).
	ErrorRecords int `json:"error_records,omitempty"`
	// UndecodableRecords counts records that are not frame objects or
	// have an unknown type; they make the inventory partial.
	UndecodableRecords int `json:"undecodable_records,omitempty"`

	list []Frame
}

// List returns the recorded frames in order (nil when unavailable).
func (inv *Inventory) List() []Frame { return inv.list }

// SetCompleteness sets Inventory from the capture's declared completeness.
func (inv *Inventory) SetCompleteness(capture string) {
	switch {
	case inv.Frames != "recorded":
		inv.Inventory = InventoryUnavailable
	case inv.UndecodableRecords > 0:
		inv.Inventory = InventoryPartial
		inv.Reason = fmt.Sprintf("%d frame record(s) could not be decoded", inv.UndecodableRecords)
	case capture == Complete:
		inv.Inventory, inv.Reason = InventoryComplete, ""
	default:
		inv.Inventory = InventoryPartial
		inv.Reason = "the capture is not declared complete: frames before the producer started recording may be missing"
	}
}

func isWSURL(u string) bool {
	return strings.HasPrefix(u, "ws://") || strings.HasPrefix(u, "wss://")
}

// newInventory decodes a _webSocketMessages value (nil when absent).
func newInventory(raw json.RawMessage) *Inventory {
	inv := &Inventory{Frames: "unavailable", Inventory: InventoryUnavailable}
	var recs []json.RawMessage
	switch s := strings.TrimSpace(string(raw)); {
	case s == "" || s == "null":
		inv.Reason = "the producer kept no frames for this connection (no _webSocketMessages)"
		return inv
	case json.Unmarshal(raw, &recs) != nil:
		inv.Reason = "_webSocketMessages is not an array of frame records"
		return inv
	}
	inv.Frames, inv.Inventory = "recorded", InventoryPartial
	inv.Counts = map[string]map[string]int{}
	inv.PayloadBytes = map[string]string{}
	sums := map[string]int64{}
	pos := map[string]int{}
	total := 0
	for _, r := range recs {
		var rf rawFrame
		if err := json.Unmarshal(r, &rf); err != nil || (rf.Type != Send && rf.Type != Receive && rf.Type != "error") {
			inv.UndecodableRecords++
			continue
		}
		if rf.Type == "error" {
			inv.ErrorRecords++
			continue
		}
		total++
		pos[rf.Type]++
		f := Frame{Direction: rf.Type, Position: pos[rf.Type], ConnectionPosition: total, Opcode: rf.Opcode, Payload: PayloadUnavailable}
		if rf.Time != nil && finite(*rf.Time) {
			t := *rf.Time
			f.TimeS = &t
			if inv.FirstTimeS == nil || t < *inv.FirstTimeS {
				inv.FirstTimeS = ptr(t)
			}
			if inv.LastTimeS == nil || t > *inv.LastTimeS {
				inv.LastTimeS = ptr(t)
			}
		}
		op := "unknown"
		if rf.Opcode != nil {
			op = strconv.Itoa(*rf.Opcode)
		}
		if inv.Counts[rf.Type] == nil {
			inv.Counts[rf.Type] = map[string]int{}
		}
		inv.Counts[rf.Type][op]++
		if rf.Data != nil && rf.Opcode != nil {
			var payload []byte
			ok := true
			if *rf.Opcode == 1 {
				payload = []byte(*rf.Data)
			} else {
				b, err := base64.StdEncoding.DecodeString(*rf.Data)
				payload, ok = b, err == nil
			}
			if ok {
				sum := sha256.Sum256(payload)
				f.Payload, f.PayloadSHA256 = PayloadRetained, hex.EncodeToString(sum[:])
				f.PayloadSize = strconv.Itoa(len(payload))
				sums[rf.Type] += int64(len(payload))
				if *rf.Opcode == 1 {
					p, cut := preview(*rf.Data)
					f.TextPreview, f.TextPreviewTruncated = &p, cut
				}
			} else {
				f.Payload = PayloadUndecodable
			}
		}
		if f.PayloadSize == "" {
			inv.PayloadUnknown++
		}
		inv.list = append(inv.list, f)
	}
	for d, n := range sums {
		inv.PayloadBytes[d] = strconv.FormatInt(n, 10)
	}
	inv.FrameCount = &total
	return inv
}

// preview returns at most MaxPreviewBytes bytes of s, cut at a character
// boundary, as a fresh string, and whether it was cut.
func preview(s string) (string, bool) {
	if len(s) <= MaxPreviewBytes {
		return strings.Clone(s), false
	}
	n := MaxPreviewBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n]), true
}

// Proof kinds of a frame comparison.
const (
	ProofDigest      = "content_digest"
	ProofSizeOnly    = "size_only"
	ProofUnavailable = "unavailable"
)

// FrameFacts are one side's facts at a compared frame position.
type FrameFacts struct {
	Entry                int      `json:"entry"`
	ConnectionPosition   int      `json:"connection_position"`
	Opcode               *int     `json:"opcode"`
	TimeS                *float64 `json:"time_s,omitempty"`
	Payload              string   `json:"payload"`
	PayloadSize          string   `json:"payload_size,omitempty"`
	PayloadSHA256        string   `json:"payload_sha256,omitempty"`
	TextPreview          *string  `json:"text_preview,omitempty"`
	TextPreviewTruncated bool     `json:"text_preview_truncated,omitempty"`
}

func factsOf(entry int, f *Frame) *FrameFacts {
	return &FrameFacts{Entry: entry, ConnectionPosition: f.ConnectionPosition, Opcode: f.Opcode, TimeS: f.TimeS, Payload: f.Payload, PayloadSize: f.PayloadSize, PayloadSHA256: f.PayloadSHA256, TextPreview: f.TextPreview, TextPreviewTruncated: f.TextPreviewTruncated}
}

// FrameDifference is the first frame position at which two corresponding
// connections differ.
type FrameDifference struct {
	Direction string `json:"direction"`
	// Position is the 1-based position within Direction.
	Position int `json:"position"`
	// Kind is "opcode", "payload_size", "payload_sha256" (both complete,
	// same position), or "absent_in_order" (a frame of the partial side
	// that no frame of the complete side can be, in order).
	Kind string `json:"kind"`
	// Proof is the kind of fact the difference rests on.
	Proof string      `json:"proof"`
	Left  *FrameFacts `json:"left,omitempty"`
	Right *FrameFacts `json:"right,omitempty"`
}

// ExtraFrames says one side has more frames of a direction than its peer.
type ExtraFrames struct {
	Side      string `json:"side"`
	Direction string `json:"direction"`
	Count     int    `json:"count"`
	// AfterPosition is the peer's last position in Direction;
	// AfterConnectionPosition is the extra side's connection position just
	// before its first extra frame.
	AfterPosition           int    `json:"after_position"`
	AfterConnectionPosition int    `json:"after_connection_position"`
	Summary                 string `json:"summary"`
}

// ConnectionDelta compares two corresponding WebSocket connections.
type ConnectionDelta struct {
	// Method and URL are the connection's group's (GroupDelta states
	// them once; they are not repeated in JSON).
	Method string `json:"-"`
	URL    string `json:"-"`
	// Position is the 1-based order among the capture's connections with
	// this method and URL; connections correspond by it (order, not
	// identity).
	Position   int    `json:"position"`
	Presence   string `json:"presence"`
	LeftEntry  *int   `json:"left_entry"`
	RightEntry *int   `json:"right_entry"`
	Correspond string `json:"correspondence"`
	Verdict    string `json:"verdict"`
	// Proof is the weakest proof any compared position rested on.
	Proof          string         `json:"proof"`
	LeftInventory  string         `json:"left_inventory"`
	RightInventory string         `json:"right_inventory"`
	LeftFrames     map[string]int `json:"left_frames"`
	RightFrames    map[string]int `json:"right_frames"`
	// ComparedPositions counts positions compared per direction;
	// DifferingPositions those that differ.
	ComparedPositions  map[string]int   `json:"compared_positions,omitempty"`
	DifferingPositions map[string]int   `json:"differing_positions,omitempty"`
	FirstDifference    *FrameDifference `json:"first_difference,omitempty"`
	Extra              []ExtraFrames    `json:"extra_frames,omitempty"`
	Content            string           `json:"content"`
	Unknown            string           `json:"unknown"`

	leftPos, rightPos int
}

type connRef struct {
	pos int // index into Capture.Entries
	e   *Entry
}

type connKey struct{ method, url string }

func connections(c *Capture) (map[connKey][]connRef, []connKey) {
	m := map[connKey][]connRef{}
	var keys []connKey
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.WebSocket == nil {
			continue
		}
		k := connKey{e.Method, e.URL}
		if m[k] == nil {
			keys = append(keys, k)
		}
		m[k] = append(m[k], connRef{i, e})
	}
	return m, keys
}

func directionCounts(inv *Inventory) map[string]int {
	if inv.Frames != "recorded" {
		return nil
	}
	m := map[string]int{Send: 0, Receive: 0}
	for _, f := range inv.list {
		m[f.Direction]++
	}
	return m
}

func byDirection(inv *Inventory, d string) []*Frame {
	var out []*Frame
	for i := range inv.list {
		if inv.list[i].Direction == d {
			out = append(out, &inv.list[i])
		}
	}
	return out
}

// CompareConnections compares the WebSocket connections of two captures
// whose completeness the caller declared. Connections correspond by
// method, URL and position among same-method, same-URL connections. When
// both inventories are complete, frames are compared by ordered position
// within direction: opcode, then payload size and sha256 where both sides
// retain them; extra frames on one side are a difference. When either
// side is partial, only a frame of the partial side that cannot be placed,
// in order, among the complete side's frames is reported (omissions cannot
// explain it); both partial is undetermined. Unavailable frames or
// payloads never compare equal.
func CompareConnections(ctx context.Context, left, right *Capture, lc, rc string) ([]ConnectionDelta, error) {
	lm, lkeys := connections(left)
	rm, rkeys := connections(right)
	keys := lkeys
	for _, k := range rkeys {
		if lm[k] == nil {
			keys = append(keys, k)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].url != keys[j].url {
			return keys[i].url < keys[j].url
		}
		return keys[i].method < keys[j].method
	})
	var out []ConnectionDelta
	for _, k := range keys {
		ls, rs := lm[k], rm[k]
		for p := 0; p < max(len(ls), len(rs)); p++ {
			if err := ctx.Err(); err != nil {
				return nil, contract.AsError(err)
			}
			d := ConnectionDelta{Method: k.method, URL: k.url, Position: p + 1, Correspond: fmt.Sprintf("same method and URL, connection %d of that method and URL in each capture: correspondence by order, not identity", p+1), Unknown: "whether the connections are the same session; equality of unavailable payload facts"}
			var li, ri *Inventory
			if p < len(ls) {
				d.LeftEntry, d.leftPos = &ls[p].e.Index, ls[p].pos
				li = cloneState(ls[p].e.WebSocket, lc)
				d.LeftInventory, d.LeftFrames = li.Inventory, directionCounts(li)
			}
			if p < len(rs) {
				d.RightEntry, d.rightPos = &rs[p].e.Index, rs[p].pos
				ri = cloneState(rs[p].e.WebSocket, rc)
				d.RightInventory, d.RightFrames = ri.Inventory, directionCounts(ri)
			}
			switch {
			case li == nil || ri == nil:
				missing, peerComplete := "right", rc == Complete
				d.Presence = "left_only"
				if li == nil {
					missing, peerComplete, d.Presence = "left", lc == Complete, "right_only"
				}
				d.Proof = ProofUnavailable
				if peerComplete {
					d.Verdict = VerdictIndependent
					d.Content = fmt.Sprintf("the complete %s capture has no connection %d for this method and URL", missing, p+1)
				} else {
					d.Verdict = VerdictOmissions
					d.Content = fmt.Sprintf("the partial %s capture has no connection %d for this method and URL: it may be an omission", missing, p+1)
				}
			default:
				d.Presence = "both"
				compareFrames(&d, ls[p].e.Index, rs[p].e.Index, li, ri)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// cloneState returns a shallow copy of inv with Inventory set for the
// declared capture completeness (the capture's inventory is not changed).
func cloneState(inv *Inventory, capture string) *Inventory {
	c := *inv
	c.SetCompleteness(capture)
	return &c
}

// consistent reports whether two frames' known facts agree (an unknown
// fact agrees with anything) and whether they are proven equal by digest.
func consistent(a, b *Frame) (agree, proven bool) {
	if a.Opcode != nil && b.Opcode != nil && *a.Opcode != *b.Opcode {
		return false, false
	}
	if a.PayloadSize != "" && b.PayloadSize != "" && a.PayloadSize != b.PayloadSize {
		return false, false
	}
	if a.PayloadSHA256 != "" && b.PayloadSHA256 != "" && a.PayloadSHA256 != b.PayloadSHA256 {
		return false, false
	}
	return true, a.Opcode != nil && b.Opcode != nil && a.PayloadSHA256 != "" && b.PayloadSHA256 != ""
}

func compareFrames(d *ConnectionDelta, lEntry, rEntry int, li, ri *Inventory) {
	if li.Inventory == InventoryUnavailable || ri.Inventory == InventoryUnavailable {
		d.Verdict, d.Proof = VerdictUnavailable, ProofUnavailable
		var who []string
		if li.Inventory == InventoryUnavailable {
			who = append(who, "left")
		}
		if ri.Inventory == InventoryUnavailable {
			who = append(who, "right")
		}
		d.Content = fmt.Sprintf("the %s producer kept no frames for this connection: frame counts and payloads there are unknown, so the connections are not shown equal", strings.Join(who, " and "))
		return
	}
	if li.Inventory == InventoryComplete && ri.Inventory == InventoryComplete {
		compareComplete(d, lEntry, rEntry, li, ri)
		return
	}
	if li.Inventory != InventoryComplete && ri.Inventory != InventoryComplete {
		d.Verdict, d.Proof = VerdictUndetermined, ProofUnavailable
		d.Content = "both frame inventories are partial: frames missing from either side may be omissions, so no position can be compared"
		return
	}
	// One side partial: its frames must appear, in order, among the
	// complete side's frames of the same direction.
	partialLeft := li.Inventory != InventoryComplete
	pInv, cInv, pSide, cSide := li, ri, "left", "right"
	pEntry, cEntry := lEntry, rEntry
	if !partialLeft {
		pInv, cInv, pSide, cSide = ri, li, "right", "left"
		pEntry, cEntry = rEntry, lEntry
	}
	d.Proof = ProofDigest
	for _, dir := range []string{Send, Receive} {
		pf, cf := byDirection(pInv, dir), byDirection(cInv, dir)
		j := 0
		for _, f := range pf {
			for j < len(cf) {
				ok, proven := consistent(f, cf[j])
				j++
				if ok {
					if !proven {
						d.Proof = ProofUnavailable
					}
					f = nil
					break
				}
			}
			if f != nil {
				if d.FirstDifference == nil || f.ConnectionPosition < sideFacts(d.FirstDifference, pSide).ConnectionPosition {
					fd := &FrameDifference{Direction: dir, Position: f.Position, Kind: "absent_in_order", Proof: ProofDigest}
					if f.PayloadSHA256 == "" {
						fd.Proof = ProofUnavailable
					}
					if pSide == "left" {
						fd.Left = factsOf(pEntry, f)
					} else {
						fd.Right = factsOf(pEntry, f)
					}
					d.FirstDifference = fd
				}
				break
			}
		}
	}
	_ = cEntry
	if d.FirstDifference != nil {
		d.Verdict = VerdictIndependent
		d.Content = fmt.Sprintf("%s %s frame at position %d has no counterpart, in order, among the complete %s inventory's %s frames: omissions cannot explain it", pSide, d.FirstDifference.Direction, d.FirstDifference.Position, cSide, d.FirstDifference.Direction)
		return
	}
	d.Verdict = VerdictOmissions
	d.Content = fmt.Sprintf("the partial %s inventory's frames appear in order among the complete %s inventory's frames in each direction: omissions can explain the difference; equality unknown", pSide, cSide)
}

func sideFacts(fd *FrameDifference, side string) *FrameFacts {
	if side == "left" {
		return fd.Left
	}
	return fd.Right
}

func compareComplete(d *ConnectionDelta, lEntry, rEntry int, li, ri *Inventory) {
	d.ComparedPositions, d.DifferingPositions = map[string]int{}, map[string]int{}
	unavailable, sizeOnly := 0, 0
	for _, dir := range []string{Send, Receive} {
		lf, rf := byDirection(li, dir), byDirection(ri, dir)
		n := min(len(lf), len(rf))
		for i := 0; i < n; i++ {
			a, b := lf[i], rf[i]
			d.ComparedPositions[dir]++
			kind, proof := "", ""
			switch {
			case a.Opcode != nil && b.Opcode != nil && *a.Opcode != *b.Opcode:
				kind, proof = "opcode", ProofDigest
				if a.PayloadSHA256 == "" || b.PayloadSHA256 == "" {
					proof = ProofSizeOnly
					if a.PayloadSize == "" || b.PayloadSize == "" {
						proof = ProofUnavailable
					}
				}
			case a.PayloadSHA256 != "" && b.PayloadSHA256 != "":
				if a.PayloadSize != b.PayloadSize {
					kind, proof = "payload_size", ProofDigest
				} else if a.PayloadSHA256 != b.PayloadSHA256 {
					kind, proof = "payload_sha256", ProofDigest
				}
				if a.Opcode == nil || b.Opcode == nil {
					unavailable++
				}
			case a.PayloadSize != "" && b.PayloadSize != "":
				sizeOnly++
				if a.PayloadSize != b.PayloadSize {
					kind, proof = "payload_size", ProofSizeOnly
				}
			default:
				unavailable++
			}
			if kind == "" {
				continue
			}
			d.DifferingPositions[dir]++
			if d.FirstDifference == nil || a.ConnectionPosition < d.FirstDifference.Left.ConnectionPosition {
				d.FirstDifference = &FrameDifference{Direction: dir, Position: i + 1, Kind: kind, Proof: proof, Left: factsOf(lEntry, a), Right: factsOf(rEntry, b)}
			}
		}
		if len(lf) != len(rf) {
			side, long, short := "right", rf, lf
			if len(lf) > len(rf) {
				side, long, short = "left", lf, rf
			}
			first := long[len(short)]
			x := ExtraFrames{Side: side, Direction: dir, Count: len(long) - len(short), AfterPosition: len(short), AfterConnectionPosition: first.ConnectionPosition - 1}
			x.Summary = fmt.Sprintf("%s has %d more %s after position %d (%s: after %s position %d)", side, x.Count, plural(x.Count, "frame"), x.AfterConnectionPosition, dir, dir, x.AfterPosition)
			d.Extra = append(d.Extra, x)
		}
	}
	switch {
	case unavailable > 0:
		d.Proof = ProofUnavailable
	case sizeOnly > 0:
		d.Proof = ProofSizeOnly
	default:
		d.Proof = ProofDigest
	}
	var parts []string
	if fd := d.FirstDifference; fd != nil {
		parts = append(parts, fmt.Sprintf("first difference: %s frame %d (left connection position %d) differs in %s (%s)", fd.Direction, fd.Position, fd.Left.ConnectionPosition, fd.Kind, fd.Proof))
	}
	for _, x := range d.Extra {
		parts = append(parts, x.Summary)
	}
	switch {
	case len(parts) > 0:
		d.Verdict = VerdictIndependent
		d.Content = "both frame inventories complete, compared by ordered position within direction: " + strings.Join(parts, "; ")
	case unavailable > 0:
		d.Verdict = VerdictUnavailable
		d.Content = fmt.Sprintf("both frame inventories complete with equal counts, but %d position(s) lack a payload digest on a side: their equality is unknown", unavailable)
	case sizeOnly > 0:
		d.Verdict = VerdictUnavailable
		d.Content = fmt.Sprintf("both frame inventories complete with equal counts; %d position(s) compare by size only, so their payload equality is unknown", sizeOnly)
	default:
		d.Verdict = VerdictEqual
		d.Content = "both frame inventories complete; every position in each direction has the same opcode, payload size and payload sha256"
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
