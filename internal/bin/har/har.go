// Package har reads HTTP Archive (HAR 1.2) captures and compares them by
// seed 004's rules: requests are grouped by method, URL and resource type
// (a repeated-request group), never matched one to one across captures;
// a partial response multiset contained in a complete peer means omissions
// can explain every retained sample; a retained sample absent from a
// complete peer group is an independent difference.
//
// Facts come from the HAR 1.2 fields log.entries[].request.method, .url,
// .response.status, .response.content.{size,mimeType,text,encoding},
// .time, .timings and Chrome's _resourceType extension. Body digests are
// the SHA-256 of the body bytes as retained in content.text (base64-decoded
// when content.encoding is "base64"); an entry without content.text has no
// retained body, which is unknown, not empty.
package har

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/inquest-dev/inquest/internal/contract"
)

// MaxEntries bounds the entries one capture may hold (1,000,000).
const MaxEntries = 1_000_000

type rawLog struct {
	Log *struct {
		Version string `json:"version"`
		Creator struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"creator"`
		Entries []json.RawMessage `json:"entries"`
	} `json:"log"`
}

type rawEntry struct {
	StartedDateTime string   `json:"startedDateTime"`
	Time            *float64 `json:"time"`
	Request         *struct {
		Method string `json:"method"`
		URL    string `json:"url"`
	} `json:"request"`
	Response *struct {
		Status  int `json:"status"`
		Content struct {
			Size     *float64 `json:"size"`
			MimeType string   `json:"mimeType"`
			Text     *string  `json:"text"`
			Encoding string   `json:"encoding"`
		} `json:"content"`
		BodySize *float64 `json:"bodySize"`
	} `json:"response"`
	Timings      map[string]*float64 `json:"timings"`
	ResourceType string              `json:"_resourceType"`
}

// Entry is one request/response pair of a capture.
type Entry struct {
	// Index is the capture-local position in log.entries: a lookup key
	// within this capture only, never a cross-capture identity.
	Index        int    `json:"index"`
	Started      string `json:"started,omitempty"`
	Method       string `json:"method"`
	URL          string `json:"url"`
	ResourceType string `json:"resource_type"`
	Status       int    `json:"status"`
	MimeType     string `json:"mime_type,omitempty"`
	// Size is response.content.size in bytes ("" when absent or negative).
	Size string `json:"size,omitempty"`
	// Body is "retained" when content.text is present, else "absent".
	Body       string `json:"body"`
	BodySHA256 string `json:"body_sha256,omitempty"`
	// TimeMS is entry.time in milliseconds; Timings are the HAR timings
	// phases in milliseconds (-1 phases, meaning not applicable, omitted).
	TimeMS  *float64           `json:"time_ms,omitempty"`
	Timings map[string]float64 `json:"timings_ms,omitempty"`
}

// Unresolved is an entry (by index) that could not be decoded.
type Unresolved struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// Capture is a decoded HAR file.
type Capture struct {
	Version    string       `json:"version"`
	Creator    string       `json:"creator"`
	Entries    []Entry      `json:"-"`
	Unresolved []Unresolved `json:"unresolved"`
}

// Parse decodes a HAR 1.2 document. A document that is not JSON or has no
// log.entries is DECODE_FAILED; an individual entry that cannot be decoded
// (or lacks request or response) is listed in Unresolved and the rest are
// kept.
func Parse(data []byte) (*Capture, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var lg rawLog
	if err := json.Unmarshal(data, &lg); err != nil {
		return nil, contract.Errorf(contract.CodeDecodeFailed, "the file is not a JSON HAR document").WithDetail("accepted_formats", []string{"har 1.2"})
	}
	if lg.Log == nil || lg.Log.Entries == nil {
		return nil, contract.Errorf(contract.CodeDecodeFailed, "the JSON document has no log.entries array: not a HAR capture").WithDetail("accepted_formats", []string{"har 1.2"})
	}
	if len(lg.Log.Entries) > MaxEntries {
		return nil, contract.Errorf(contract.CodeLimitExceeded, "the capture has %d entries; at most %d are read", len(lg.Log.Entries), MaxEntries)
	}
	c := &Capture{Version: lg.Log.Version, Creator: lg.Log.Creator.Name, Unresolved: []Unresolved{}}
	for i, raw := range lg.Log.Entries {
		var re rawEntry
		if err := json.Unmarshal(raw, &re); err != nil {
			c.Unresolved = append(c.Unresolved, Unresolved{Index: i, Reason: "the entry does not match the HAR entry shape"})
			continue
		}
		if re.Request == nil || re.Response == nil {
			c.Unresolved = append(c.Unresolved, Unresolved{Index: i, Reason: "the entry lacks request or response"})
			continue
		}
		e := Entry{Index: i, Started: re.StartedDateTime, Method: re.Request.Method, URL: re.Request.URL, ResourceType: re.ResourceType, Status: re.Response.Status, MimeType: re.Response.Content.MimeType, Body: "absent"}
		if e.ResourceType == "" {
			e.ResourceType = "unknown"
		}
		if s := re.Response.Content.Size; s != nil && *s >= 0 && *s < math.MaxInt64 {
			e.Size = strconv.FormatInt(int64(*s), 10)
		}
		if t := re.Response.Content.Text; t != nil {
			body := []byte(*t)
			ok := true
			if re.Response.Content.Encoding == "base64" {
				b, err := base64.StdEncoding.DecodeString(*t)
				if err != nil {
					ok = false
					c.Unresolved = append(c.Unresolved, Unresolved{Index: i, Reason: "content.text is not valid base64 although content.encoding is base64; the body is not retained"})
				}
				body = b
			}
			if ok {
				sum := sha256.Sum256(body)
				e.Body, e.BodySHA256 = "retained", hex.EncodeToString(sum[:])
			}
		}
		if re.Time != nil && finite(*re.Time) {
			v := *re.Time
			e.TimeMS = &v
		}
		for k, v := range re.Timings {
			if v != nil && *v >= 0 && finite(*v) {
				if e.Timings == nil {
					e.Timings = map[string]float64{}
				}
				e.Timings[k] = *v
			}
		}
		c.Entries = append(c.Entries, e)
	}
	return c, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// GroupKey is a repeated-request group: same method, URL and resource type.
type GroupKey struct {
	Method       string `json:"method"`
	URL          string `json:"url"`
	ResourceType string `json:"resource_type"`
}

func keyOf(e Entry) GroupKey { return GroupKey{e.Method, e.URL, e.ResourceType} }

func (k GroupKey) less(o GroupKey) bool {
	if k.URL != o.URL {
		return k.URL < o.URL
	}
	if k.Method != o.Method {
		return k.Method < o.Method
	}
	return k.ResourceType < o.ResourceType
}

// Group is one repeated-request group of a capture with its summary.
type Group struct {
	GroupKey
	Count       int            `json:"count"`
	Statuses    map[string]int `json:"statuses"`
	MimeTypes   map[string]int `json:"mime_types"`
	BodiesKept  int            `json:"bodies_retained"`
	SizeTotal   string         `json:"size_total,omitempty"`
	SizeKnown   int            `json:"size_known"`
	TimeMinMS   *float64       `json:"time_min_ms,omitempty"`
	TimeMaxMS   *float64       `json:"time_max_ms,omitempty"`
	TimeTotalMS *float64       `json:"time_total_ms,omitempty"`
	Entries     []Entry        `json:"entries"`
}

// Groups returns c's repeated-request groups ordered by URL, method and
// resource type, entries in capture order.
func Groups(c *Capture) []Group {
	idx := map[GroupKey]int{}
	var gs []Group
	for _, e := range c.Entries {
		k := keyOf(e)
		i, ok := idx[k]
		if !ok {
			i = len(gs)
			idx[k] = i
			gs = append(gs, Group{GroupKey: k, Statuses: map[string]int{}, MimeTypes: map[string]int{}})
		}
		g := &gs[i]
		g.Count++
		g.Statuses[strconv.Itoa(e.Status)]++
		if e.MimeType != "" {
			g.MimeTypes[e.MimeType]++
		}
		if e.Body == "retained" {
			g.BodiesKept++
		}
		if e.Size != "" {
			n, _ := strconv.ParseInt(e.Size, 10, 64)
			t, _ := strconv.ParseInt(orZero(g.SizeTotal), 10, 64)
			g.SizeTotal = strconv.FormatInt(t+n, 10)
			g.SizeKnown++
		}
		if e.TimeMS != nil {
			v := *e.TimeMS
			if g.TimeMinMS == nil || v < *g.TimeMinMS {
				g.TimeMinMS = ptr(v)
			}
			if g.TimeMaxMS == nil || v > *g.TimeMaxMS {
				g.TimeMaxMS = ptr(v)
			}
			if g.TimeTotalMS == nil {
				g.TimeTotalMS = ptr(0)
			}
			*g.TimeTotalMS += v
		}
		g.Entries = append(g.Entries, e)
	}
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].GroupKey.less(gs[j].GroupKey) })
	return gs
}

func ptr(f float64) *float64 { return &f }

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

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
	// one on status, MIME type and retained body digest.
	VerdictEqual = "equal"
	// VerdictOmissions: every retained sample of the partial side (or of
	// a side with unretained bodies) is contained in its peer; omissions
	// can explain the difference, equality or modification stays unknown.
	VerdictOmissions = "omissions_can_explain"
	// VerdictIndependent: a retained sample is absent from a complete peer
	// group: an observed difference independent of omissions.
	VerdictIndependent = "independent_difference"
	// VerdictUndetermined: both sides are partial and not contained in
	// each other; omissions on either side may explain it.
	VerdictUndetermined = "undetermined"
)

// Sample is the comparable projection of one response.
type Sample struct {
	Index      int    `json:"index"`
	Status     int    `json:"status"`
	MimeType   string `json:"mime_type,omitempty"`
	BodySHA256 string `json:"body_sha256,omitempty"`
}

func sampleOf(e Entry) Sample {
	return Sample{Index: e.Index, Status: e.Status, MimeType: e.MimeType, BodySHA256: e.BodySHA256}
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
}

// match pairs samples of a and b greedily: exact digests first, then a
// known digest with an unretained peer body, then unretained with any
// peer of the same status and MIME type. It returns the unmatched samples
// of each side and whether any pair rested on an unretained body.
func match(a, b []Sample) (ua, ub []Sample, unknown bool) {
	usedB := make([]bool, len(b))
	usedA := make([]bool, len(a))
	meta := func(x, y Sample) bool { return x.Status == y.Status && x.MimeType == y.MimeType }
	pass := func(ok func(x, y Sample) bool, unk bool) {
		for i, x := range a {
			if usedA[i] {
				continue
			}
			for j, y := range b {
				if !usedB[j] && meta(x, y) && ok(x, y) {
					usedA[i], usedB[j] = true, true
					if unk {
						unknown = true
					}
					break
				}
			}
		}
	}
	pass(func(x, y Sample) bool { return x.BodySHA256 != "" && x.BodySHA256 == y.BodySHA256 }, false)
	pass(func(x, y Sample) bool { return x.BodySHA256 != "" && y.BodySHA256 == "" }, true)
	pass(func(x, y Sample) bool { return x.BodySHA256 == "" }, true)
	for i, x := range a {
		if !usedA[i] {
			ua = append(ua, x)
		}
	}
	for j, y := range b {
		if !usedB[j] {
			ub = append(ub, y)
		}
	}
	return ua, ub, unknown
}

// Compare compares the groups of two captures whose completeness the
// caller declared (Complete or Partial).
func Compare(left, right *Capture, lc, rc string) []GroupDelta {
	lg, rg := Groups(left), Groups(right)
	lm, rm := map[GroupKey]*Group{}, map[GroupKey]*Group{}
	var keys []GroupKey
	for i := range lg {
		lm[lg[i].GroupKey] = &lg[i]
		keys = append(keys, lg[i].GroupKey)
	}
	for i := range rg {
		rm[rg[i].GroupKey] = &rg[i]
		if lm[rg[i].GroupKey] == nil {
			keys = append(keys, rg[i].GroupKey)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	var out []GroupDelta
	for _, k := range keys {
		var ls, rs []Sample
		if g := lm[k]; g != nil {
			for _, e := range g.Entries {
				ls = append(ls, sampleOf(e))
			}
		}
		if g := rm[k]; g != nil {
			for _, e := range g.Entries {
				rs = append(rs, sampleOf(e))
			}
		}
		d := GroupDelta{GroupKey: k, LeftCount: len(ls), RightCount: len(rs), Correspond: "same HTTP method, URL and resource type: a repeated-request group", Unknown: "which individual responses correspond", LeftAbsent: []Sample{}, RightAbsent: []Sample{}}
		switch {
		case len(ls) > 0 && len(rs) > 0:
			d.Presence = "both"
		case len(ls) > 0:
			d.Presence = "left_only"
		default:
			d.Presence = "right_only"
		}
		ua, ub, unk := match(ls, rs)
		d.LeftAbsent, d.RightAbsent = nonNil(ua), nonNil(ub)
		// A retained sample is an independent difference only when its
		// peer capture is complete.
		indep := (len(ua) > 0 && rc == Complete) || (len(ub) > 0 && lc == Complete)
		switch {
		case indep:
			d.Verdict = VerdictIndependent
			var parts []string
			if len(ua) > 0 && rc == Complete {
				parts = append(parts, fmt.Sprintf("%d retained left sample(s) absent from the complete right group", len(ua)))
			}
			if len(ub) > 0 && lc == Complete {
				parts = append(parts, fmt.Sprintf("%d retained right sample(s) absent from the complete left group", len(ub)))
			}
			d.Content = joinParts(parts)
			d.Unknown += "; other unobserved differences"
		case len(ua) == 0 && len(ub) == 0 && lc == Complete && rc == Complete && !unk:
			d.Verdict = VerdictEqual
			d.Content = "both captures complete; the response multisets match one to one on status, MIME type and body sha256"
		case len(ua) == 0 && len(ub) == 0 && lc == Complete && rc == Complete:
			d.Verdict = VerdictOmissions
			d.Content = "both captures complete and the multisets match on status and MIME type, but some bodies were not retained: omissions can explain every sample; equality or modification unknown"
		case len(ua) == 0 && rc == Complete, len(ub) == 0 && lc == Complete:
			d.Verdict = VerdictOmissions
			d.Content = "the partial side's response multiset is contained in the complete peer group: omissions can explain every retained sample; equality or modification unknown"
		default:
			d.Verdict = VerdictUndetermined
			d.Content = "neither side is contained in a complete peer: samples missing from either side may be omissions"
		}
		out = append(out, d)
	}
	return out
}

func nonNil(s []Sample) []Sample {
	if s == nil {
		return []Sample{}
	}
	return s
}

func joinParts(p []string) string {
	s := ""
	for i, x := range p {
		if i > 0 {
			s += "; "
		}
		s += x
	}
	return s
}
