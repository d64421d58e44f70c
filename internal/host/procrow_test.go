package host

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// The reference of rowEncoder: a list_processes row as a map (what the
// listing built before rows were encoded without reflection), encoded by
// encoding/json. rowEncoder must write the same bytes.

func mapProjectProcess(h *Host, r *procRow, fields []string) map[string]any {
	row := make(map[string]any, len(fields))
	for _, f := range fields {
		switch f {
		case "process_ref":
			row[f] = h.Ref(r.id)
		case "pid":
			row[f] = r.id.PID
		case "name":
			sample.TextFields(f, r.name, func(k string, v any) { row[k] = v })
		case "comm", "path":
			s := r.comm
			if f == "path" {
				s = r.path
			}
			if s != "" {
				sample.TextFields(f, s, func(k string, v any) { row[k] = v })
			} else {
				row[f] = nil
			}
		case "path_deleted":
			if r.path != "" {
				row[f] = r.pathDel
			} else {
				row[f] = nil
			}
		case "parent":
			p := map[string]any{"pid": r.ppid, "relationship": "unknown"}
			if r.verified {
				p["relationship"] = "verified"
				p["process_ref"] = r.parentRef
			}
			row[f] = p
		case "start_time":
			row[f] = contract.TS(r.start)
		case "state":
			row[f] = r.state
		case "uid":
			if r.uidKnown {
				row[f] = r.uid
			} else {
				row[f] = nil
			}
		case "user":
			if r.uidKnown {
				row[f] = sample.UserName(r.uid)
			} else {
				row[f] = nil
			}
		case "lifecycle":
			row[f] = r.lifecycle()
		case "last_seen_at":
			row[f] = contract.TS(r.lastSeen)
		case "exited_at":
			row[f] = nil
			if !r.exitedAt.IsZero() {
				row[f] = contract.TS(r.exitedAt)
			}
		case "exit_basis":
			row[f] = nil
			if !r.exitedAt.IsZero() {
				row[f] = "absent_from_snapshot"
			}
		case "namespaces", "ns_pid", "container":
			row[f] = mapNSField(r, f)
		case "history":
			if r.hasHist {
				row[f] = map[string]any{"retained_from": contract.TS(r.from), "retained_to": contract.TS(r.to)}
			} else {
				row[f] = nil
			}
		case "command_line":
			if !r.live {
				row[f] = map[string]any{"unavailable": "process_not_live"}
				continue
			}
			raw, complete, err := sample.ReadCommandLine(r.id)
			if err != nil {
				row[f] = map[string]any{"unavailable": "unreadable"}
				continue
			}
			pg := sample.PageArgv(raw, 0, sample.RowCommandLineBytes, complete)
			row[f] = map[string]any{"value": pg.Args}
			row["command_line_truncated"] = pg.Truncated()
			if pg.Truncated() {
				row["command_line_arguments"], row["command_line_bytes"], row["command_line_sha256"] = pg.Total, strconv.Itoa(pg.Bytes), pg.SHA256
				row["command_line_next_offset"] = nil
				if pg.Next < pg.Total {
					row["command_line_next_offset"] = pg.Next
				}
			}
		}
	}
	return row
}

func mapAddValues(row map[string]any, r *procRow, ms ...sample.Metric) {
	values, unavailable := map[string]any{}, map[string]any{}
	for _, m := range ms {
		if v, ok := sortValue(m, r); ok {
			enc, _ := EncodeValue(m, v)
			values[m.ID] = enc
		} else if r.p == nil {
			unavailable[m.ID] = "process_not_live"
		} else {
			unavailable[m.ID] = "unknown"
		}
	}
	row["values"], row["unavailable"] = values, unavailable
}

// checkRow compares rowEncoder's bytes for r with encoding/json's of the
// map row.
func checkRow(t *testing.T, h *Host, r *procRow, fields []string, ms []sample.Metric) {
	t.Helper()
	m := mapProjectProcess(h, r, fields)
	if len(ms) > 0 {
		mapAddValues(m, r, ms...)
	}
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := newRowEncoder(h, fields, ms).append(nil, r)
	if !bytes.Equal(got, want) {
		t.Fatalf("row of pid %d, fields %v:\n got %s\nwant %s", r.id.PID, fields, got, want)
	}
	if !json.Valid(got) {
		t.Fatalf("not JSON: %s", got)
	}
}

func metricsOf(t testing.TB, ids ...string) []sample.Metric {
	var ms []sample.Metric
	for _, id := range ids {
		m, ok := sample.LookupMetric(id)
		if !ok {
			t.Fatalf("no metric %s", id)
		}
		ms = append(ms, m)
	}
	return ms
}

// TestRowEncoderMatchesMarshal: every process of a live snapshot, with
// every field (all, user, command_line), the compact defaults, and every
// process metric as values, encodes to encoding/json's bytes of the map
// row; so do synthetic rows that reach each branch (names that are not
// UTF-8, HTML-sensitive and control characters, unknown uid, unverified
// parent, history-only lifetimes, zero times, non-finite and tiny
// numbers, a lifetime whose command line cannot be read).
func TestRowEncoderMatchesMarshal(t *testing.T) {
	h, _ := captureHost(t)
	snap := h.sampler.Latest()
	all := append(processFields([]string{ProjectionAll}, "live"), "user", "command_line")
	var every []string
	for _, m := range sample.ProcessMetrics {
		every = append(every, m.ID)
	}
	layouts := []struct {
		name    string
		fields  []string
		metrics []sample.Metric
	}{
		{"compact", CompactProcessFields, nil},
		{"compact retained", CompactRetainedProcessFields, nil},
		{"ps columns", CompactProcessFields, metricsOf(t, "cpu_percent", "rss_bytes", "threads", "fd_count")},
		{"all fields, every metric", all, metricsOf(t, every...)},
		{"duplicate fields and metrics", []string{"pid", "pid", "name", "no_such_field"}, metricsOf(t, "rss_bytes", "rss_bytes")},
	}
	rows := 0
	for i := range snap.Procs {
		p := &snap.Procs[i]
		r := &procRow{id: p.ID(), name: p.Name, comm: p.Comm, path: p.Exe, pathDel: p.ExeDeleted, ppid: p.PPID, start: p.StartTime,
			state: sample.StateName(p.State), uid: p.UID, uidKnown: p.UIDKnown, live: true, lastSeen: snap.Time, p: p}
		if par := snap.Find(p.PPID); par != nil && par.StartTicks < p.StartTicks {
			r.verified, r.parentRef = true, h.Ref(par.ID())
		}
		for _, l := range layouts {
			checkRow(t, h, r, l.fields, l.metrics)
		}
		rows++
	}
	if rows == 0 {
		t.Fatal("the snapshot has no processes")
	}

	self := snap.Find(int32(os.Getpid()))
	if self == nil {
		t.Fatal("this test process is not in the snapshot")
	}
	num := &sample.Process{}
	cpu := metricsOf(t, "cpu_percent")[0]
	synthetic := []struct {
		name string
		row  procRow
	}{
		{"not UTF-8 and HTML", procRow{id: sample.Identity{PID: 42, StartTicks: 7}, name: "a\xff<b>&\u2028\"\\", comm: "c\x01\x7f", path: "/tmp/x\xfe y", pathDel: true,
			ppid: 1, state: "sleeping", uid: 1000, uidKnown: true, live: true, lastSeen: time.Unix(1700000000, 123456789), start: time.Unix(1600000000, 0), p: num}},
		{"unknown uid, no path, no comm", procRow{id: sample.Identity{PID: 43, StartTicks: 8}, name: "", ppid: 0, state: "zombie", live: true, p: num}},
		{"history only", procRow{id: sample.Identity{PID: 44, StartTicks: 9}, name: "gone", comm: "gone", ppid: 2, state: "unknown",
			hasHist: true, from: time.Unix(1700000000, 0).In(time.FixedZone("x", 3600)), to: time.Unix(1700000100, 5)}},
		{"ended, seen to end", procRow{id: sample.Identity{PID: 77, StartTicks: 5}, name: "gone", state: "unknown", hasHist: true,
			from: time.Unix(1700000000, 0), to: time.Unix(1700000060, 5), lastSeen: time.Unix(1700000060, 5), exitedAt: time.Unix(1700000061, 250000000)}},
		{"command line unreadable", procRow{id: sample.Identity{PID: 1 << 30, StartTicks: 1}, name: "none", state: "running", live: true, p: num}},
		{"this process", procRow{id: self.ID(), name: self.Name, comm: self.Comm, path: self.Exe, state: "running", live: true, verified: true, parentRef: "pr_x<y>", p: self}},
	}
	for _, c := range synthetic {
		t.Run(c.name, func(t *testing.T) {
			for _, l := range layouts {
				checkRow(t, h, &c.row, l.fields, l.metrics)
			}
		})
	}
	// Numbers: tiny, huge, negative zero; a NaN is unavailable.
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-9, 2.5e21, 33.333333333333336, math.NaN(), math.Inf(1)} {
		p := &sample.Process{}
		p.Set(cpu.Index, sample.F(f))
		r := &procRow{id: sample.Identity{PID: 45}, name: "n", live: true, p: p}
		checkRow(t, h, r, CompactProcessFields, []sample.Metric{cpu})
	}
}

// FuzzRowEncoder: any name, comm and path bytes and any cpu_percent
// value encode as encoding/json encodes the map row.
func FuzzRowEncoder(f *testing.F) {
	f.Add("bash", "bash", "/usr/bin/bash", math.Float64bits(1.5))
	f.Add("\xff\xfe", "<&>", "/a\u2028b", math.Float64bits(1e-7))
	f.Add("", "", "", math.Float64bits(math.NaN()))
	h := &Host{refs: newRefCodec("fuzz")}
	cpu, _ := sample.LookupMetric("cpu_percent")
	rss, _ := sample.LookupMetric("rss_bytes")
	fields := append(processFields([]string{ProjectionAll}, "live"), "user")
	f.Fuzz(func(t *testing.T, name, comm, path string, cpuBits uint64) {
		p := &sample.Process{}
		p.Set(cpu.Index, cpuBits)
		r := &procRow{id: sample.Identity{PID: 7, StartTicks: 3}, name: name, comm: comm, path: path, state: "running",
			uid: 0, uidKnown: true, live: true, lastSeen: time.Unix(0, int64(cpuBits>>20)), p: p}
		checkRow(t, h, r, fields, []sample.Metric{rss, cpu})
	})
}

// mapNSField is the reference of the namespaces, ns_pid and container
// values: the sample facts as maps.
func mapNSField(r *procRow, f string) any {
	if r.p == nil {
		return map[string]any{"unavailable": "process_not_live"}
	}
	facts := r.p.Facts
	if facts == nil {
		if f == "container" {
			return map[string]any{"runtime": "unknown", "unavailable": "unsupported"}
		}
		return map[string]any{"unavailable": "unsupported"}
	}
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	switch f {
	case "namespaces":
		m := map[string]any{}
		un := map[string]any{}
		for i, k := range sample.NamespaceKinds {
			if facts.Namespaces.Known(i) {
				m[k] = facts.Namespaces.Inode[i]
			} else {
				m[k] = nil
				un[k] = reasonOr(facts.Namespaces.Reason[i])
			}
		}
		if len(un) > 0 {
			m["unavailable"] = un
		}
		return m
	case "ns_pid":
		if len(facts.Namespaces.NSpid) == 0 {
			return map[string]any{"unavailable": reasonOr(facts.Namespaces.NSpidReason)}
		}
		return map[string]any{"value": facts.Namespaces.NSpid}
	}
	c := facts.Container
	m := map[string]any{"runtime": c.Runtime, "id": opt(c.ID), "pod": opt(c.Pod), "engine": opt(c.Engine), "cgroup": opt(c.Cgroup), "rule": opt(c.Rule)}
	if c.Reason != "" {
		m["unavailable"] = c.Reason
	}
	return m
}
