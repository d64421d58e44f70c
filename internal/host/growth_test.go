package host

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// lsqSlope is the ordinary least-squares slope of (t seconds, x) pairs.
func lsqSlope(ts, xs []float64) float64 {
	n := float64(len(ts))
	var st, sx, stt, stx float64
	for i := range ts {
		st += ts[i]
		sx += xs[i]
		stt += ts[i] * ts[i]
		stx += ts[i] * xs[i]
	}
	return (n*stx - st*sx) / (n*stt - st*st)
}

// TestRankGrowthSlope: a process that grows its resident memory by 8 MiB
// per second ranks above one whose memory stays put under rss_bytes with
// aggregate slope; each row's slope is the least-squares fit the test
// computes from get_history's raw samples of the same window, and
// aggregate increase is their last minus first value.
func TestRankGrowthSlope(t *testing.T) {
	rankChildBinary(t)
	h := testHost(t, 250*time.Millisecond, nil)
	h.HistoryStore().SetTracking([]string{"rankchild"})
	s := h.NewSession()
	grow := startRankChild(t, "grow", "8")
	flat := startRankChild(t, "alloc", "16")
	refG, _ := rankRefOf(t, h, grow.Process.Pid)
	refF, _ := rankRefOf(t, h, flat.Process.Pid)
	from := time.Now().UTC().Format(time.RFC3339Nano)
	waitFor(t, 3*time.Minute, "8 samples of each", func() bool {
		return historySpanRSS(t, h, s, refG, from) >= 8 && historySpanRSS(t, h, s, refF, from) >= 8
	})
	to := h.Sampler().Latest().Time.UTC().Format(time.RFC3339Nano)

	fit := func(ref string) (slope float64, increase int64) {
		hd, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "from": from, "to": to, "mode": "raw"})
		var ts, xs []float64
		var first, last int64
		for _, r := range hd["rows"].([]any) {
			row := r.(map[string]any)
			v, ok := row["values"].(map[string]any)["rss_bytes"].(string)
			if !ok {
				continue
			}
			x, _ := strconv.ParseInt(v, 10, 64)
			at := parseTS(t, row["at"].(string))
			if len(ts) == 0 {
				first = x
			}
			last = x
			ts = append(ts, float64(at.UnixMilli())/1000)
			xs = append(xs, float64(x))
		}
		if len(ts) < 2 {
			t.Fatalf("%s: %d samples", ref, len(ts))
		}
		t0 := ts[0]
		for i := range ts {
			ts[i] -= t0
		}
		return lsqSlope(ts, xs), last - first
	}
	rows := func(agg string) map[string]map[string]any {
		_, _, all := rankAll(t, h, s, map[string]any{"metric_id": "rss_bytes", "aggregate": agg, "from": from, "to": to, "limit": MaxRankLimit, "filter": map[string]any{"name": "rankchild"}})
		m := map[string]map[string]any{}
		for _, r := range all {
			m[r["process_ref"].(string)] = r
		}
		return m
	}
	bySlope := rows("slope")
	byInc := rows("increase")
	for _, ref := range []string{refG, refF} {
		want, inc := fit(ref)
		got, ok := bySlope[ref]["value"].(float64)
		if !ok || math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: slope %v, least squares over get_history's samples %v", ref, bySlope[ref]["value"], want)
		}
		if byInc[ref]["value"] != strconv.FormatInt(inc, 10) {
			t.Errorf("%s: increase %v, last - first %d", ref, byInc[ref]["value"], inc)
		}
		t.Logf("%s: slope %.0f B/s, increase %d B", ref, want, inc)
	}
	if bySlope[refG]["rank"].(float64) >= bySlope[refF]["rank"].(float64) {
		t.Errorf("growing process ranks %v, flat one %v", bySlope[refG]["rank"], bySlope[refF]["rank"])
	}
}

// historySpanRSS is the number of available rss_bytes samples of ref
// since from.
func historySpanRSS(t *testing.T, h *Host, s *Session, ref, from string) int {
	t.Helper()
	d, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "from": from})
	return int(d["metrics"].(map[string]any)["rss_bytes"].(map[string]any)["available_value_count"].(float64))
}
