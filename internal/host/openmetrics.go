package host

import (
	"github.com/inquest-dev/inquest/internal/openmetrics"
)

// OpenMetricsSource returns the source of the host's /metrics exporter
// (openmetrics.Server, started by the faces that own the shared host when
// openmetrics_listen is set): the newest retained system sample and the
// newest retained sample of every live tracked lifetime, named by its
// latest name. Values and timestamps are those get_history returns for
// the same samples.
func (h *Host) OpenMetricsSource() openmetrics.Source {
	return func() openmetrics.Snapshot {
		inv := investigationOf(h)
		if inv == nil {
			return openmetrics.Snapshot{}
		}
		var snap openmetrics.Snapshot
		if ms, avail, vals, ok := inv.store.System().Last(); ok {
			snap.System = &openmetrics.Point{At: ms, Avail: avail, Vals: vals}
		}
		for _, lv := range inv.store.TrackedLive() {
			ms, avail, vals, ok := lv.View.Last()
			if !ok {
				continue
			}
			snap.Procs = append(snap.Procs, openmetrics.Lifetime{Name: lv.Name, PID: lv.ID.PID, StartTime: lv.StartTime, Last: openmetrics.Point{At: ms, Avail: avail, Vals: vals}})
		}
		return snap
	}
}
