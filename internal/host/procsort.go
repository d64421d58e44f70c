package host

import (
	"math"
	"sort"
	"strings"

	"github.com/inquest-dev/inquest/internal/sample"
)

// sortProcessRows orders list_processes rows by pid (default), name or a
// process metric of the catalog, in order asc or desc (default asc for pid
// and name, desc for a metric). A metric's value is the row's value in the
// latest applied snapshot; rows without one (unmeasured, or a history-only
// lifetime, which has no current value) come after every row with one, in
// pid order, whatever the order. Ties break by identity (pid, then start).
// It returns the sort metric and whether the sort is by a metric.
func sortProcessRows(list []*procRow, by, order string) (sample.Metric, bool, error) {
	var m sample.Metric
	byMetric := false
	switch by {
	case "", "pid", "name":
	default:
		mm, ok := sample.LookupMetric(by)
		if !ok || mm.Target != sample.TargetProcess {
			return m, false, invalidAt("/sort", "sort must be pid, name or a process metric id (list_metrics)")
		}
		m, byMetric = mm, true
	}
	desc := byMetric
	switch order {
	case "":
	case "asc":
		desc = false
	case "desc":
		desc = true
	default:
		return m, false, invalidAt("/order", "order must be asc or desc")
	}
	byID := func(x, y *procRow) bool {
		if x.id.PID != y.id.PID {
			return x.id.PID < y.id.PID
		}
		return x.id.StartTicks < y.id.StartTicks
	}
	switch {
	case byMetric:
		sort.SliceStable(list, func(i, j int) bool {
			x, y := list[i], list[j]
			xv, xok := sortValue(m, x)
			yv, yok := sortValue(m, y)
			if xok != yok {
				return xok
			}
			if xok {
				if c := cmpSlot(m, xv, yv); c != 0 {
					return (c > 0) == desc
				}
			}
			return byID(x, y)
		})
	case by == "name":
		sort.SliceStable(list, func(i, j int) bool {
			x, y := list[i], list[j]
			if c := strings.Compare(sample.FoldBytes(x.name), sample.FoldBytes(y.name)); c != 0 {
				return (c > 0) == desc
			}
			return byID(x, y)
		})
	default:
		sort.SliceStable(list, func(i, j int) bool {
			if desc {
				return byID(list[j], list[i])
			}
			return byID(list[i], list[j])
		})
	}
	return m, byMetric, nil
}

// sortValue returns the row's value of m in the latest snapshot (ok false
// when unmeasured, non-finite, or the row is history-only).
func sortValue(m sample.Metric, r *procRow) (uint64, bool) {
	if r.p == nil || !r.p.Has(m.Index) {
		return 0, false
	}
	v := r.p.Vals[m.Index]
	if m.Repr == sample.ReprNumber {
		f := sample.AsFloat(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
	}
	return v, true
}

func cmpSlot(m sample.Metric, a, b uint64) int {
	if m.Repr == sample.ReprNumber {
		fa, fb := sample.AsFloat(a), sample.AsFloat(b)
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortCoverage records a metric sort in the listing's coverage: the
// metric, the order, and how many rows have no value (they are last).
func sortCoverage(cov map[string]any, m sample.Metric, order string, list []*procRow) {
	if order == "" {
		order = "desc"
	}
	missing := 0
	for _, r := range list {
		if _, ok := sortValue(m, r); !ok {
			missing++
		}
	}
	cov["sort"] = map[string]any{"metric_id": m.ID, "order": order, "value_unavailable": missing}
}
