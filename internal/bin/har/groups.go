package har

import (
	"context"
	"sort"
	"strconv"

	"github.com/inquest-dev/inquest/internal/contract"
)

// GroupKey is a repeated-request group: same method and URL. Optional
// producer fields (Chrome's _resourceType, Firefox's _securityState, ...)
// never define identity: a Chrome and a Firefox capture of one page
// group alike. A group counts its entries' resource types instead
// (Group.ResourceTypes).
type GroupKey struct {
	Method string `json:"method"`
	URL    string `json:"url"`
}

func keyOf(e *Entry) GroupKey { return GroupKey{e.Method, e.URL} }

func (k GroupKey) less(o GroupKey) bool {
	if k.URL != o.URL {
		return k.URL < o.URL
	}
	return k.Method < o.Method
}

// Group is one repeated-request group of a capture with its summary. Sums,
// minima and maxima cover the entries whose value is known; the *Unknown
// counts say how many entries had none (time -1, status null or -1, size
// absent). In JSON, a count of entries with an unknown or damaged value
// (status_unknown, size_unknown, time_unknown, bodies_undecodable,
// bodies_truncated, bodies_size_mismatch) is left out when it is zero, so
// that a page holds many groups: absent means none, never unknown.
type Group struct {
	GroupKey
	Count int `json:"count"`
	// Statuses counts response.status values; null statuses count under
	// "unknown".
	Statuses      map[string]int `json:"statuses"`
	StatusUnknown int            `json:"status_unknown,omitempty"`
	MimeTypes     map[string]int `json:"mime_types"`
	// ResourceTypes counts the producer's optional _resourceType values
	// ("unknown" when an entry has none); they describe, never group.
	ResourceTypes map[string]int `json:"resource_types"`
	BodiesKept    int            `json:"bodies_retained"`
	// BodiesUndecodable counts bodies whose base64 text does not decode.
	BodiesUndecodable int `json:"bodies_undecodable,omitempty"`
	// BodiesTruncated counts bodies shorter than content.size (cut by
	// their producer); BodiesSizeMismatch bodies longer than it.
	BodiesTruncated    int `json:"bodies_truncated,omitempty"`
	BodiesSizeMismatch int `json:"bodies_size_mismatch,omitempty"`
	// SizeTotal is the sum of the known content sizes (decimal string),
	// absent when none is known; SizeKnown counts them.
	SizeTotal   string   `json:"size_total,omitempty"`
	SizeKnown   int      `json:"size_known"`
	SizeUnknown int      `json:"size_unknown,omitempty"`
	TimeMinMS   *float64 `json:"time_min_ms,omitempty"`
	TimeMaxMS   *float64 `json:"time_max_ms,omitempty"`
	TimeTotalMS *float64 `json:"time_total_ms,omitempty"`
	TimeUnknown int      `json:"time_unknown,omitempty"`
	// WebSocketConnections counts the group's WebSocket connection entries.
	WebSocketConnections int `json:"websocket_connections,omitempty"`
	// Entries are the group's first entries in capture order (at most the
	// listing bound passed to Groups); EntriesListed says how many.
	Entries       []Entry `json:"entries"`
	EntriesListed int     `json:"entries_listed"`
	sizeSum       int64
	sizeOverflow  bool
}

// Groups returns c's repeated-request groups ordered by URL and method, each listing at most maxListed entries in capture order
// (counts and summaries always cover every entry). It takes time linear
// in the entries and checks ctx every 1024 entries.
func Groups(ctx context.Context, c *Capture, maxListed int) ([]Group, error) {
	g := NewGrouper(maxListed)
	for n := range c.Entries {
		if n%cancelEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, contract.AsError(err)
			}
		}
		g.Add(&c.Entries[n])
	}
	return g.Groups(), nil
}

// Grouper accumulates repeated-request groups entry by entry, keeping
// per-group summaries and at most maxListed entries per group, so its
// memory is bounded by the groups rather than the entries (use it with
// Stream).
type Grouper struct {
	maxListed int
	idx       map[GroupKey]int
	gs        []Group
}

// NewGrouper returns an empty Grouper listing at most maxListed entries
// per group.
func NewGrouper(maxListed int) *Grouper {
	return &Grouper{maxListed: maxListed, idx: map[GroupKey]int{}}
}

// Add counts e into its group (e is copied when listed).
func (gr *Grouper) Add(e *Entry) {
	k := keyOf(e)
	i, ok := gr.idx[k]
	if !ok {
		i = len(gr.gs)
		gr.idx[k] = i
		gr.gs = append(gr.gs, Group{GroupKey: k, Statuses: map[string]int{}, MimeTypes: map[string]int{}, ResourceTypes: map[string]int{}})
	}
	g := &gr.gs[i]
	g.Count++
	if e.Status != nil {
		g.Statuses[strconv.Itoa(*e.Status)]++
	} else {
		g.Statuses["unknown"]++
		g.StatusUnknown++
	}
	if e.MimeType != "" {
		g.MimeTypes[e.MimeType]++
	}
	g.ResourceTypes[e.ResourceType]++
	switch e.Body {
	case BodyRetained:
		g.BodiesKept++
	case BodyUndecodable:
		g.BodiesUndecodable++
	case BodyTruncated:
		g.BodiesTruncated++
	case BodySizeMismatch:
		g.BodiesSizeMismatch++
	}
	if e.Size != "" {
		v, _ := strconv.ParseInt(e.Size, 10, 64)
		if g.sizeSum > (1<<63-1)-v {
			g.sizeOverflow = true
		}
		g.sizeSum += v
		g.SizeKnown++
	} else {
		g.SizeUnknown++
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
	} else {
		g.TimeUnknown++
	}
	if e.WebSocket != nil {
		g.WebSocketConnections++
	}
	if len(g.Entries) < gr.maxListed {
		g.Entries = append(g.Entries, *e)
	}
}

// Groups returns the groups ordered by URL and method.
func (gr *Grouper) Groups() []Group {
	gs := gr.gs
	for i := range gs {
		g := &gs[i]
		g.EntriesListed = len(g.Entries)
		if g.Entries == nil {
			g.Entries = []Entry{}
		}
		if g.SizeKnown > 0 && !g.sizeOverflow {
			g.SizeTotal = strconv.FormatInt(g.sizeSum, 10)
		}
	}
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].GroupKey.less(gs[j].GroupKey) })
	return gs
}

func ptr(f float64) *float64 { return &f }
