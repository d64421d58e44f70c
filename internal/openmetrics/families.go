// Package openmetrics renders the metric catalog (sample.ProcessMetrics and
// sample.SystemMetrics) as Prometheus metric families, for both paths that
// leave inquest for a Prometheus-compatible store: a recording exported
// with `inquest log export --format openmetrics` (internal/recording) and
// the host's opt-in /metrics endpoint (Exporter, Server). Both use the
// same family names, types, units and labels, so a recording loaded with
// `promtool tsdb create-blocks-from openmetrics` lines up with scraped
// live data.
//
// Naming follows the OpenMetrics and Prometheus conventions: a family is
// inquest_process_<name> or inquest_system_<name>; a unit is the name's
// suffix (_bytes, _seconds, _percent); a cumulative catalog metric is a
// counter whose samples are named <family>_total; the rest are gauges.
// Nanosecond catalog metrics (cpu_time_ns, the JVM *_time_ns) are exported
// in seconds, the base unit (cpu_time_ns becomes inquest_process_cpu_seconds,
// value cpu_time_ns / 1e9, written as an exact decimal).
package openmetrics

import (
	"strings"
	"sync"

	"github.com/inquest-dev/inquest/internal/sample"
)

// Family types.
const (
	TypeCounter = "counter"
	TypeGauge   = "gauge"
)

// Family is one catalog metric as a Prometheus metric family.
type Family struct {
	// Metric is the catalog entry the family renders.
	Metric sample.Metric
	// Name is the family name (inquest_process_rss_bytes); a counter's
	// samples are named Name + "_total" (SampleName).
	Name string
	// Type is TypeCounter for a cumulative catalog metric, else TypeGauge.
	Type string
	// Unit is the OpenMetrics unit, the suffix of Name: "bytes",
	// "seconds", "percent", or "" for a count.
	Unit string
	// Help is the first clause of the catalog description.
	Help string
	// Nanos says the catalog value is nanoseconds exported as seconds.
	Nanos bool
}

// SampleName is the name of the family's samples: Name + "_total" for a
// counter, else Name.
func (f Family) SampleName() string {
	if f.Type == TypeCounter {
		return f.Name + "_total"
	}
	return f.Name
}

// renames maps the catalog ids whose name would break a Prometheus naming
// rule (promtool check metrics: a gauge must not end in _count, a unit
// must be the base unit) to their exported name.
var renames = map[string]string{
	"cpu_time_ns":        "cpu_seconds",
	"fd_count":           "open_fds",
	"jvm_young_gc_count": "jvm_young_gcs",
	"jvm_old_gc_count":   "jvm_old_gcs",
	"system_cpu_percent": "cpu_percent",
	"process_count":      "processes",
	"system_cpu_time_ns": "cpu_seconds",
}

func familyOf(m sample.Metric) Family {
	name := m.ID
	if r, ok := renames[name]; ok {
		name = r
	}
	f := Family{Metric: m, Type: TypeGauge}
	if m.Cumulative {
		f.Type = TypeCounter
	}
	if strings.HasSuffix(name, "_ns") {
		name = strings.TrimSuffix(name, "_ns") + "_seconds"
	}
	if m.Unit == "nanoseconds" {
		f.Nanos = true
	}
	for _, u := range []string{"bytes", "seconds", "percent"} {
		if strings.HasSuffix(name, "_"+u) {
			f.Unit = u
		}
	}
	f.Name = "inquest_" + m.Target + "_" + name
	f.Help = m.Description
	if i := strings.Index(f.Help, ";"); i > 0 {
		f.Help = f.Help[:i]
	}
	f.Help = strings.TrimSuffix(f.Help, ".")
	if f.Unit == "" && m.Unit != "count" {
		f.Help += " (" + m.Unit + ")"
	}
	return f
}

type catalog struct {
	process, system []Family
	byName          map[string]Family
}

var families = sync.OnceValue(func() catalog {
	c := catalog{byName: map[string]Family{}}
	for _, m := range sample.ProcessMetrics {
		c.process = append(c.process, familyOf(m))
	}
	for _, m := range sample.SystemMetrics {
		c.system = append(c.system, familyOf(m))
	}
	for _, f := range append(append([]Family(nil), c.process...), c.system...) {
		c.byName[f.Name] = f
		c.byName[f.SampleName()] = f
	}
	return c
})

// ProcessFamilies returns the process metric families in catalog slot
// order (ProcessFamilies()[i].Metric.Index == i). The slice is shared: do
// not modify it.
func ProcessFamilies() []Family { return families().process }

// SystemFamilies returns the system metric families in catalog slot order.
// The slice is shared: do not modify it.
func SystemFamilies() []Family { return families().system }

// Lookup returns the family with this family or sample name
// (inquest_process_cpu_seconds or inquest_process_cpu_seconds_total).
func Lookup(name string) (Family, bool) {
	f, ok := families().byName[name]
	return f, ok
}
