package har

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Completeness of a capture as declared by the caller. HAR has no field
// that proves a capture is complete, so it is an input, and partial is
// the default.
const (
	Complete = "complete"
	Partial  = "partial"
)

// Group comparison verdicts.
const (
	// VerdictEqual: both captures complete, every sample matched one to
	// one on status, MIME type, content size and retained body digest,
	// and every WebSocket connection of the group compared equal frame by
	// frame.
	VerdictEqual = "equal"
	// VerdictOmissions: every retained sample of the partial side (or of
	// a side with unretained bodies) is contained in its peer; omissions
	// can explain the difference, equality or modification stays unknown.
	VerdictOmissions = "omissions_can_explain"
	// VerdictIndependent: a retained sample is absent from a complete peer
	// group, or a WebSocket frame differs at a compared position: an
	// observed difference independent of omissions.
	VerdictIndependent = "independent_difference"
	// VerdictUndetermined: both sides are partial and not contained in
	// each other; omissions on either side may explain it.
	VerdictUndetermined = "undetermined"
	// VerdictUnavailable: no difference is proven but facts needed to
	// compare are unavailable on a side (a WebSocket connection whose
	// producer kept no frames, or frames whose payload is not retained).
	VerdictUnavailable = "unavailable"
)

// Verdicts lists every verdict, for input schemas.
var Verdicts = []string{VerdictEqual, VerdictOmissions, VerdictIndependent, VerdictUndetermined, VerdictUnavailable}

// verdictRank orders verdicts from weakest to strongest claim of
// difference or uncertainty; a group takes the highest of its parts.
func verdictRank(v string) int {
	switch v {
	case VerdictEqual:
		return 0
	case VerdictOmissions:
		return 1
	case VerdictUnavailable:
		return 2
	case VerdictUndetermined:
		return 3
	case VerdictIndependent:
		return 4
	}
	return -1
}

// Sample is the comparable projection of one response. Status is null and
// Size and BodySHA256 are empty when unknown; an unknown field is
// consistent with any peer value and never proves equality.
type Sample struct {
	Index      int    `json:"index"`
	Status     *int   `json:"status"`
	MimeType   string `json:"mime_type,omitempty"`
	Size       string `json:"size,omitempty"`
	BodySHA256 string `json:"body_sha256,omitempty"`
	// BodyDigestOf names the representation BodySHA256 identifies
	// (Entry.BodyDigestOf).
	BodyDigestOf string `json:"body_digest_of,omitempty"`
	// Body is set when a retained text is not the response's body
	// (BodyTruncated, BodySizeMismatch): BodySHA256 is then unknown.
	Body string `json:"body,omitempty"`
	// websocket marks a WebSocket connection entry without a response
	// body: its content is its frames, compared by CompareConnections.
	websocket bool
}

func sampleOf(e *Entry) Sample {
	s := Sample{Index: e.Index, Status: e.Status, MimeType: e.MimeType, Size: e.Size, BodySHA256: e.BodySHA256, BodyDigestOf: e.BodyDigestOf, websocket: e.WebSocket != nil && e.Body == BodyAbsent}
	if e.Body == BodyTruncated || e.Body == BodySizeMismatch {
		// The digest is of a text that is not the response's body: the
		// body is unknown, consistent with any peer, never a difference.
		s.BodySHA256, s.BodyDigestOf, s.Body = "", "", e.Body
	}
	if e.Body == BodySizeMismatch {
		// A text longer than content.size contradicts it: which of the
		// two is wrong is unknown, so the size is unknown too.
		s.Size = ""
	}
	return s
}

// sampleFields are the optional facts of a sample, "" when unknown:
// status, content size, body digest.
type sampleFields [3]string

func (s *Sample) fields() sampleFields {
	var f sampleFields
	if s.Status != nil {
		f[0] = strconv.Itoa(*s.Status)
	}
	f[1], f[2] = s.Size, s.BodySHA256
	if s.websocket {
		// The upgrade response has no body; the frames are compared
		// separately, so the missing body is not an unknown fact here.
		f[2] = "websocket"
	}
	return f
}

// GroupDelta is the comparison of one repeated-request group.
type GroupDelta struct {
	GroupKey
	Presence    string   `json:"presence"`
	Verdict     string   `json:"verdict"`
	LeftCount   int      `json:"left_count"`
	RightCount  int      `json:"right_count"`
	Correspond  string   `json:"correspondence"`
	Content     string   `json:"content"`
	Unknown     string   `json:"unknown"`
	LeftAbsent  []Sample `json:"left_samples_absent_from_right"`
	RightAbsent []Sample `json:"right_samples_absent_from_left"`
	// LeftAbsentCount and RightAbsentCount count the unmatched samples
	// (the lists above may be cut to a listing bound by the caller).
	LeftAbsentCount  int `json:"left_absent_count"`
	RightAbsentCount int `json:"right_absent_count"`
	// WebSocketCount counts the connection deltas of this group; the
	// WebSocket list may be cut to a listing bound by the caller.
	WebSocketCount int `json:"websocket_connections,omitempty"`
	// WebSocket compares the WebSocket connections whose left entry (or,
	// for right-only connections, right entry) is in this group.
	WebSocket []ConnectionDelta `json:"websocket,omitempty"`
}

// matcher pairs the samples of a and b in time linear in their number:
// first identical fact tuples (twins), then, for each remaining sample of
// a in order, the first remaining sample of b of the same MIME type whose
// known facts agree with a's known facts (an unknown fact on either side
// agrees with anything), preferring peers that know more of a's facts.
// It returns the unmatched samples of each side and whether any pair
// rested on an unknown fact.
func match(ctx context.Context, a, b []Sample) (ua, ub []Sample, unknown bool, err error) {
	usedA, usedB := make([]bool, len(a)), make([]bool, len(b))
	fa, fb := make([]sampleFields, len(a)), make([]sampleFields, len(b))
	for i := range a {
		fa[i] = a[i].fields()
	}
	for j := range b {
		fb[j] = b[j].fields()
	}
	type key struct {
		mime string
		mask uint8 // fields projected out (1<<k: field k is a wildcard)
		f    sampleFields
	}
	type queue struct {
		idx  []int
		head int
	}
	// index[mask] maps b's projection under mask to its sample indices in
	// order; built on first use.
	var index [8]map[key]*queue
	project := func(mime string, f sampleFields, mask uint8) key {
		k := key{mime: mime, mask: mask}
		for i := range f {
			if mask&(1<<i) == 0 {
				k.f[i] = f[i]
			}
		}
		return k
	}
	build := func(mask uint8) map[key]*queue {
		if index[mask] == nil {
			m := map[key]*queue{}
			for j := range b {
				k := project(b[j].MimeType, fb[j], mask)
				q := m[k]
				if q == nil {
					q = &queue{}
					m[k] = q
				}
				q.idx = append(q.idx, j)
			}
			index[mask] = m
		}
		return index[mask]
	}
	pop := func(q *queue) int {
		if q == nil {
			return -1
		}
		for q.head < len(q.idx) && usedB[q.idx[q.head]] {
			q.head++
		}
		if q.head == len(q.idx) {
			return -1
		}
		j := q.idx[q.head]
		q.head++
		return j
	}
	known := func(f sampleFields) bool { return f[0] != "" && f[1] != "" && f[2] != "" }
	// Pass 1: twins (identical facts, unknowns in the same places).
	twins := build(0)
	for i := range a {
		if i%cancelEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, false, contract.AsError(err)
			}
		}
		if j := pop(twins[project(a[i].MimeType, fa[i], 0)]); j >= 0 {
			usedA[i], usedB[j] = true, true
			if !known(fa[i]) {
				unknown = true
			}
		}
	}
	// Pass 2: consistent peers. For a's unknown fields U, look up b's
	// projection without U, with each known field of a either equal in b
	// or unknown in b (a's value first).
	for i := range a {
		if i%cancelEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, false, contract.AsError(err)
			}
		}
		if usedA[i] {
			continue
		}
		var u uint8
		var kn []int
		for k := range fa[i] {
			if fa[i][k] == "" {
				u |= 1 << k
			} else {
				kn = append(kn, k)
			}
		}
		m := build(u)
		found := -1
		for choice := 0; choice < 1<<len(kn) && found < 0; choice++ {
			f := fa[i]
			for bit, k := range kn {
				if choice&(1<<bit) != 0 {
					f[k] = ""
				}
			}
			found = pop(m[project(a[i].MimeType, f, u)])
		}
		if found >= 0 {
			usedA[i], usedB[found] = true, true
			unknown = true
		}
	}
	for i := range a {
		if !usedA[i] {
			ua = append(ua, a[i])
		}
	}
	for j := range b {
		if !usedB[j] {
			ub = append(ub, b[j])
		}
	}
	return ua, ub, unknown, nil
}

// Compare compares the groups of two captures whose completeness the
// caller declared (Complete or Partial), and their WebSocket connections
// (see CompareConnections). It takes time linear in the entries and
// frames and checks ctx in every loop; a done ctx gives its contract
// error.
func Compare(ctx context.Context, left, right *Capture, lc, rc string) ([]GroupDelta, error) {
	type side struct{ l, r []Sample }
	groups := map[GroupKey]*side{}
	var keys []GroupKey
	add := func(c *Capture, isLeft bool) error {
		for n := range c.Entries {
			if n%cancelEvery == 0 {
				if err := ctx.Err(); err != nil {
					return contract.AsError(err)
				}
			}
			e := &c.Entries[n]
			k := keyOf(e)
			g := groups[k]
			if g == nil {
				g = &side{}
				groups[k] = g
				keys = append(keys, k)
			}
			if isLeft {
				g.l = append(g.l, sampleOf(e))
			} else {
				g.r = append(g.r, sampleOf(e))
			}
		}
		return nil
	}
	if err := add(left, true); err != nil {
		return nil, err
	}
	if err := add(right, false); err != nil {
		return nil, err
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	conns, err := CompareConnections(ctx, left, right, lc, rc)
	if err != nil {
		return nil, err
	}
	// Each connection delta belongs to the group of its left entry (its
	// right entry when the left has none).
	byGroup := map[GroupKey][]ConnectionDelta{}
	for _, cd := range conns {
		var k GroupKey
		if cd.LeftEntry != nil {
			k = keyOf(&left.Entries[cd.leftPos])
		} else {
			k = keyOf(&right.Entries[cd.rightPos])
		}
		byGroup[k] = append(byGroup[k], cd)
	}
	out := make([]GroupDelta, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		ls, rs := g.l, g.r
		d := GroupDelta{GroupKey: k, LeftCount: len(ls), RightCount: len(rs), Correspond: "same HTTP method and URL: a repeated-request group", Unknown: "which individual responses correspond", LeftAbsent: []Sample{}, RightAbsent: []Sample{}}
		switch {
		case len(ls) > 0 && len(rs) > 0:
			d.Presence = "both"
		case len(ls) > 0:
			d.Presence = "left_only"
		default:
			d.Presence = "right_only"
		}
		ua, ub, unk, err := match(ctx, ls, rs)
		if err != nil {
			return nil, err
		}
		d.LeftAbsent, d.RightAbsent = nonNil(ua), nonNil(ub)
		d.LeftAbsentCount, d.RightAbsentCount = len(ua), len(ub)
		// A retained sample is an independent difference only when its
		// peer capture is complete.
		indep := (len(ua) > 0 && rc == Complete) || (len(ub) > 0 && lc == Complete)
		switch {
		case indep:
			d.Verdict = VerdictIndependent
			var parts []string
			if len(ua) > 0 && rc == Complete {
				parts = append(parts, fmt.Sprintf("%d retained left sample(s) absent from the complete right group (status, MIME type, content size or body sha256 differ)", len(ua)))
			}
			if len(ub) > 0 && lc == Complete {
				parts = append(parts, fmt.Sprintf("%d retained right sample(s) absent from the complete left group (status, MIME type, content size or body sha256 differ)", len(ub)))
			}
			d.Content = strings.Join(parts, "; ")
			d.Unknown += "; other unobserved differences"
		case len(ua) == 0 && len(ub) == 0 && lc == Complete && rc == Complete && !unk:
			d.Verdict = VerdictEqual
			d.Content = "both captures complete; the response multisets match one to one on status, MIME type, content size and body sha256"
		case len(ua) == 0 && len(ub) == 0 && lc == Complete && rc == Complete:
			d.Verdict = VerdictOmissions
			d.Content = "both captures complete and the multisets agree on every fact both sides know, but some statuses, sizes or bodies are unknown: omissions can explain every sample; equality or modification unknown"
		case len(ua) == 0 && rc == Complete, len(ub) == 0 && lc == Complete:
			// Exactly one side is complete here (both complete with
			// nothing absent is a case above); the other is partial as
			// declared or because it has undecodable entries.
			part, whole := "left", "right"
			if lc == Complete {
				part, whole = "right", "left"
			}
			d.Verdict = VerdictOmissions
			d.Content = fmt.Sprintf("the %s capture is partial and its response multiset is contained in the complete %s group: omissions can explain every retained sample; equality or modification unknown", part, whole)
		default:
			d.Verdict = VerdictUndetermined
			d.Content = "neither side is contained in a complete peer: samples missing from either side may be omissions"
		}
		if cds := byGroup[k]; len(cds) > 0 {
			d.WebSocket, d.WebSocketCount = cds, len(cds)
			worst := ""
			for _, cd := range cds {
				if worst == "" || verdictRank(cd.Verdict) > verdictRank(worst) {
					worst = cd.Verdict
				}
			}
			if verdictRank(worst) > verdictRank(d.Verdict) {
				d.Verdict = worst
				d.Content += fmt.Sprintf("; WebSocket frames: %s (see websocket)", worst)
			} else if worst != VerdictEqual {
				d.Content += fmt.Sprintf("; WebSocket frames: %s (see websocket)", worst)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func nonNil(s []Sample) []Sample {
	if s == nil {
		return []Sample{}
	}
	return s
}
