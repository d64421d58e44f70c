package openmetrics

import (
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// DefaultMaxSeries is the exporter's cap on the series of one exposition
// (process and system samples; the exporter's own three gauges are not
// counted). Lifetimes beyond it are left out whole, newest first, and
// counted in inquest_exporter_series_dropped.
const DefaultMaxSeries = 10000

// Point is one retained sample: its time (ms since the Unix epoch), the
// availability bitmap of its catalog slots and their values (slot bits,
// sample.ProcessMetrics or sample.SystemMetrics order).
type Point struct {
	At    int64
	Avail uint32
	Vals  []uint64
}

// Lifetime is one tracked process lifetime and its newest retained sample.
type Lifetime struct {
	// Name is the process name (the tracked name rule of the host).
	Name string
	// PID and StartTime identify the lifetime.
	PID       int32
	StartTime time.Time
	// Last is the newest retained sample.
	Last Point
}

// Snapshot is what one scrape exposes: the newest system sample (nil when
// there is none yet) and the live tracked lifetimes.
type Snapshot struct {
	System *Point
	Procs  []Lifetime
}

// Source returns the current Snapshot; it is called once per scrape and
// may be called concurrently.
type Source func() Snapshot

// Exporter renders a Source as an exposition.
type Exporter struct {
	// Source supplies the samples.
	Source Source
	// MaxSeries caps the series of one exposition (0 = DefaultMaxSeries).
	MaxSeries int
}

// Stats describes one exposition: Series written (process and system
// samples) and Dropped, the series left out by the cap.
type Stats struct {
	Series, Dropped int
}

// seriesOf counts the values of p that would be written.
func seriesOf(fams []Family, p Point) int {
	n := 0
	for _, f := range fams {
		i := f.Metric.Index
		if i >= len(p.Vals) || p.Avail&(1<<uint(i)) == 0 {
			continue
		}
		if f.Metric.Repr == sample.ReprNumber {
			if x := sample.AsFloat(p.Vals[i]); math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
		}
		n++
	}
	return n
}

// Write writes one exposition of the exporter's Source in format f: the
// system families, the process families (one sample per live tracked
// lifetime with that value available, labelled by ProcessLabels, stamped
// with its sample's time), then the exporter's own gauges
// inquest_exporter_series, inquest_exporter_series_dropped and
// inquest_exporter_series_limit. Lifetimes are admitted oldest first
// (start time, then pid) while the cap allows all of a lifetime's series;
// once one does not fit, it and every newer one are left out, so the
// exposed set stays stable as processes come and go.
func (x *Exporter) Write(w io.Writer, f Format) (Stats, error) {
	limit := x.MaxSeries
	if limit <= 0 {
		limit = DefaultMaxSeries
	}
	snap := x.Source()
	sys, procs := SystemFamilies(), ProcessFamilies()
	var st Stats
	if snap.System != nil {
		n := seriesOf(sys, *snap.System)
		if n > limit {
			st.Dropped += n
			snap.System = nil
		} else {
			st.Series += n
		}
	}
	ls := slices.Clone(snap.Procs)
	slices.SortFunc(ls, func(a, b Lifetime) int {
		if c := a.StartTime.Compare(b.StartTime); c != 0 {
			return c
		}
		return int(a.PID) - int(b.PID)
	})
	admitted := ls[:0]
	full := false
	for _, l := range ls {
		n := seriesOf(procs, l.Last)
		if full || st.Series+n > limit {
			full = true
			st.Dropped += n
			continue
		}
		st.Series += n
		admitted = append(admitted, l)
	}
	labels := make([]string, len(admitted))
	for i, l := range admitted {
		labels[i] = ProcessLabels(l.Name, l.PID, l.StartTime)
	}
	e := NewEncoder(w, f)
	if snap.System != nil {
		p := *snap.System
		for _, fam := range sys {
			e.FamilyHeader(fam)
			if i := fam.Metric.Index; i < len(p.Vals) && p.Avail&(1<<uint(i)) != 0 {
				e.Sample(fam, "", p.Vals[i], p.At)
			}
		}
	}
	for _, fam := range procs {
		e.FamilyHeader(fam)
		i := fam.Metric.Index
		for k, l := range admitted {
			if i < len(l.Last.Vals) && l.Last.Avail&(1<<uint(i)) != 0 {
				e.Sample(fam, labels[k], l.Last.Vals[i], l.Last.At)
			}
		}
	}
	e.Header("inquest_exporter_series", TypeGauge, "", "process and system series in this exposition")
	e.Gauge("inquest_exporter_series", "", int64(st.Series))
	e.Header("inquest_exporter_series_dropped", TypeGauge, "", "series left out of this exposition by the series limit (whole lifetimes, newest first)")
	e.Gauge("inquest_exporter_series_dropped", "", int64(st.Dropped))
	e.Header("inquest_exporter_series_limit", TypeGauge, "", "the most series one exposition holds")
	e.Gauge("inquest_exporter_series_limit", "", int64(limit))
	return st, e.Close()
}

// Negotiate picks the format for an Accept header: OpenMetrics when it
// names application/openmetrics-text (as Prometheus' scraper does), else
// the Prometheus text format (curl, `promtool check metrics`).
func Negotiate(accept string) Format {
	if strings.Contains(accept, "application/openmetrics-text") {
		return OpenMetrics
	}
	return Text
}

// ServeHTTP serves GET and HEAD of /metrics (format by Negotiate); every
// other path is 404 and every other method 405 (Allow: GET, HEAD). It
// serves nothing but the exposition and changes nothing.
func (x *Exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.Error(w, "not found: the exporter serves only GET /metrics", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: /metrics is read-only (GET, HEAD)", http.StatusMethodNotAllowed)
		return
	}
	f := Negotiate(r.Header.Get("Accept"))
	w.Header().Set("Content-Type", f.ContentType())
	if r.Method == http.MethodHead {
		return
	}
	x.Write(w, f)
}
