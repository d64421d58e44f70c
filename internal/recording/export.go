package recording

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/openmetrics"
	"github.com/inquest-dev/inquest/internal/sample"
)

// Export formats.
const (
	FormatCSV         = "csv"
	FormatJSONL       = "jsonl"
	FormatOpenMetrics = "openmetrics"
)

// ExportOptions select what Export writes. Empty Metrics means every
// catalog metric; empty PIDs means every identity (and the system);
// with PIDs set the system is left out. From/To bound frames inclusively
// (zero = open).
type ExportOptions struct {
	Format   string
	Metrics  []string
	PIDs     []int32
	From, To time.Time
}

// ExportStats counts what Export wrote: Samples is the number of metric
// values (CSV rows, OpenMetrics samples, JSONL values).
type ExportStats struct {
	Samples int
	Series  int
}

type exportTarget struct {
	system bool
	p      *Proc
	view   *history.View
}

func (o ExportOptions) interval() history.Interval {
	var iv history.Interval
	if !o.From.IsZero() {
		iv.From, iv.HasFrom = o.From.UnixMilli(), true
	}
	if !o.To.IsZero() {
		iv.To, iv.HasTo = o.To.UnixMilli(), true
	}
	return iv
}

func (l *Log) exportTargets(o ExportOptions) []exportTarget {
	var out []exportTarget
	if len(o.PIDs) == 0 {
		out = append(out, exportTarget{system: true, view: l.System.View()})
	}
	for _, p := range l.Procs {
		if len(o.PIDs) > 0 && !slices.Contains(o.PIDs, p.PID) {
			continue
		}
		out = append(out, exportTarget{p: p, view: p.Series.View()})
	}
	return out
}

func (o ExportOptions) metrics(kind string) ([]sample.Metric, error) {
	var out []sample.Metric
	for _, id := range o.Metrics {
		if _, ok := sample.LookupMetric(id); !ok {
			return nil, fmt.Errorf("unknown metric %q (inquest call list_metrics gives the catalog)", id)
		}
	}
	cat := sample.ProcessMetrics[:]
	if kind == sample.TargetSystem {
		cat = sample.SystemMetrics[:]
	}
	for _, m := range cat {
		if len(o.Metrics) == 0 || slices.Contains(o.Metrics, m.ID) {
			out = append(out, m)
		}
	}
	return out, nil
}

func formatValue(m sample.Metric, v uint64) (string, bool) {
	if m.Repr == sample.ReprNumber {
		f := sample.AsFloat(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", false
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return strconv.FormatUint(v, 10), true
}

func rfc3339ms(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Export writes the loaded recording to w in o.Format:
//
//   - csv: one row per available value: timestamp (RFC 3339, ms), target
//     (system or process), pid, start_time, name, metric, value. Missing
//     values have no row.
//   - jsonl: one JSON object per frame and target: {at, target, values,
//     unavailable}; integers as decimal strings, numbers as JSON numbers.
//   - openmetrics: OpenMetrics text in the families of package
//     openmetrics, the same names, types, units and labels (name, pid,
//     start_time in seconds since the epoch) the host's /metrics
//     exporter serves: a counter (samples named FAMILY_total) for a
//     cumulative metric, else a gauge; nanosecond metrics in seconds;
//     sample timestamps in seconds with millisecond decimals; ends with
//     "# EOF". Accepted by `promtool tsdb create-blocks-from openmetrics`.
func (l *Log) Export(w io.Writer, o ExportOptions) (ExportStats, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var st ExportStats
	var err error
	switch o.Format {
	case FormatCSV:
		st, err = l.exportCSV(bw, o)
	case FormatJSONL:
		st, err = l.exportJSONL(bw, o)
	case FormatOpenMetrics:
		st, err = l.exportOpenMetrics(bw, o)
	default:
		return st, fmt.Errorf("unknown export format %q (csv, jsonl, openmetrics)", o.Format)
	}
	if err != nil {
		return st, err
	}
	return st, bw.Flush()
}

func (l *Log) exportCSV(w io.Writer, o ExportOptions) (ExportStats, error) {
	var st ExportStats
	cw := csv.NewWriter(w)
	cw.Write([]string{"timestamp", "target", "pid", "start_time", "name", "metric", "value"})
	iv := o.interval()
	for _, t := range l.exportTargets(o) {
		kind, pid, start, name := "system", "", "", ""
		ms, err := o.metrics(sample.TargetSystem)
		if !t.system {
			kind, pid, start, name = "process", strconv.Itoa(int(t.p.PID)), t.p.StartTime.UTC().Format(time.RFC3339Nano), t.p.Name
			ms, err = o.metrics(sample.TargetProcess)
		}
		if err != nil {
			return st, err
		}
		if len(ms) == 0 {
			continue
		}
		st.Series++
		t.view.Each(func(at int64, avail uint32, vals []uint64) bool {
			if !iv.Contains(at) {
				return true
			}
			for _, m := range ms {
				if avail&(1<<uint(m.Index)) == 0 {
					continue
				}
				if v, ok := formatValue(m, vals[m.Index]); ok {
					cw.Write([]string{rfc3339ms(at), kind, pid, start, name, m.ID, v})
					st.Samples++
				}
			}
			return true
		})
	}
	cw.Flush()
	return st, cw.Error()
}

func (l *Log) exportJSONL(w io.Writer, o ExportOptions) (ExportStats, error) {
	var st ExportStats
	iv := o.interval()
	enc := json.NewEncoder(w)
	var werr error
	for _, t := range l.exportTargets(o) {
		target := map[string]any{"system": true}
		ms, err := o.metrics(sample.TargetSystem)
		if !t.system {
			target = map[string]any{"pid": t.p.PID, "start_time": t.p.StartTime.UTC().Format(time.RFC3339Nano), "name": t.p.Name}
			ms, err = o.metrics(sample.TargetProcess)
		}
		if err != nil {
			return st, err
		}
		if len(ms) == 0 {
			continue
		}
		st.Series++
		t.view.Each(func(at int64, avail uint32, vals []uint64) bool {
			if !iv.Contains(at) {
				return true
			}
			values, unav := map[string]any{}, []string{}
			for _, m := range ms {
				v, ok := formatValue(m, vals[m.Index])
				if avail&(1<<uint(m.Index)) == 0 || !ok {
					unav = append(unav, m.ID)
					continue
				}
				if m.Repr == sample.ReprNumber {
					values[m.ID] = json.Number(v)
				} else {
					values[m.ID] = v
				}
				st.Samples++
			}
			werr = enc.Encode(map[string]any{"at": rfc3339ms(at), "target": target, "values": values, "unavailable": unav})
			return werr == nil
		})
		if werr != nil {
			return st, werr
		}
	}
	return st, nil
}

func (l *Log) exportOpenMetrics(w *bufio.Writer, o ExportOptions) (ExportStats, error) {
	var st ExportStats
	iv := o.interval()
	targets := l.exportTargets(o)
	e := openmetrics.NewEncoder(w, openmetrics.OpenMetrics)
	for _, kind := range []string{sample.TargetSystem, sample.TargetProcess} {
		ms, err := o.metrics(kind)
		if err != nil {
			return st, err
		}
		fams := openmetrics.SystemFamilies()
		if kind == sample.TargetProcess {
			fams = openmetrics.ProcessFamilies()
		}
		for _, m := range ms {
			fam := fams[m.Index]
			e.FamilyHeader(fam)
			for _, t := range targets {
				if t.system != (kind == sample.TargetSystem) {
					continue
				}
				labels := ""
				if !t.system {
					labels = openmetrics.ProcessLabels(t.p.Name, t.p.PID, t.p.StartTime)
				}
				n := 0
				t.view.Each(func(at int64, avail uint32, vals []uint64) bool {
					if !iv.Contains(at) || avail&(1<<uint(m.Index)) == 0 {
						return true
					}
					if e.Sample(fam, labels, vals[m.Index], at) {
						n++
					}
					return true
				})
				if n > 0 {
					st.Series++
					st.Samples += n
				}
			}
		}
	}
	return st, e.Close()
}

// Summary writes a human summary of the log: format, interval, span,
// frames, identities, completeness ("incomplete" with the reasons for an
// interrupted or damaged file) and per-metric min/avg/max over every
// available value (system metrics over the system series, process metrics
// over every identity's frames).
func (l *Log) Summary(w io.Writer) error {
	in := l.Info
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "format:      %s v%d\n", in.Header.Format, in.Header.Version)
	fmt.Fprintf(bw, "interval:    %gs\n", l.Interval.Seconds())
	if in.Frames > 0 {
		fmt.Fprintf(bw, "span:        %s to %s (%s)\n", rfc3339ms(in.First), rfc3339ms(in.Last), time.Duration(in.Last-in.First)*time.Millisecond)
	} else {
		fmt.Fprintf(bw, "span:        no frames\n")
	}
	fmt.Fprintf(bw, "frames:      %d\n", in.Frames)
	if lf := in.LostFrames(); lf > 0 {
		fmt.Fprintf(bw, "lost:        %d frames not written (%d gaps: write errors)\n", lf, len(in.Gaps))
	}
	fmt.Fprintf(bw, "identities:  %d\n", len(l.Procs))
	fmt.Fprintf(bw, "tracked:     %s\n", strings.Join(in.Header.Tracked, ", "))
	fmt.Fprintf(bw, "size:        %d bytes\n", in.Size)
	if in.Complete() {
		fmt.Fprintf(bw, "status:      complete (end record: %s)\n", in.End.Reason)
	} else {
		fmt.Fprintf(bw, "status:      incomplete\n")
		for _, p := range in.Problems() {
			fmt.Fprintf(bw, "  - %s\n", p)
		}
	}
	fmt.Fprintf(bw, "\n%-28s %-8s %10s %22s %22s %22s\n", "METRIC", "TARGET", "VALUES", "MIN", "AVG", "MAX")
	all := []exportTarget{{system: true, view: l.System.View()}}
	for _, p := range l.Procs {
		all = append(all, exportTarget{p: p, view: p.Series.View()})
	}
	for _, kind := range []string{sample.TargetSystem, sample.TargetProcess} {
		ms, _ := ExportOptions{}.metrics(kind)
		for _, m := range ms {
			var n int64
			var lo, hi uint64
			var flo, fhi, fsum float64
			isum := new(big.Int)
			for _, t := range all {
				if t.system != (kind == sample.TargetSystem) {
					continue
				}
				t.view.Each(func(_ int64, avail uint32, vals []uint64) bool {
					if avail&(1<<uint(m.Index)) == 0 {
						return true
					}
					v := vals[m.Index]
					if m.Repr == sample.ReprNumber {
						f := sample.AsFloat(v)
						if math.IsNaN(f) || math.IsInf(f, 0) {
							return true
						}
						if n == 0 || f < flo {
							flo = f
						}
						if n == 0 || f > fhi {
							fhi = f
						}
						fsum += f
					} else {
						if n == 0 || v < lo {
							lo = v
						}
						if n == 0 || v > hi {
							hi = v
						}
						isum.Add(isum, new(big.Int).SetUint64(v))
					}
					n++
					return true
				})
			}
			if n == 0 {
				fmt.Fprintf(bw, "%-28s %-8s %10d %22s %22s %22s\n", m.ID, kind, 0, "-", "-", "-")
				continue
			}
			if m.Repr == sample.ReprNumber {
				fmt.Fprintf(bw, "%-28s %-8s %10d %22.4g %22.4g %22.4g\n", m.ID, kind, n, flo, fsum/float64(n), fhi)
			} else {
				avg := new(big.Rat).SetFrac(isum, big.NewInt(n))
				fmt.Fprintf(bw, "%-28s %-8s %10d %22d %22s %22d\n", m.ID, kind, n, lo, avg.FloatString(1), hi)
			}
		}
	}
	return bw.Flush()
}
