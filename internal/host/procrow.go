package host

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/jsonenc"
	"github.com/inquest-dev/inquest/internal/sample"
)

// rowEncoder writes list_processes rows as JSON objects: the projected
// fields (processFields) and, when the listing carries metric values,
// values and unavailable. The bytes are those encoding/json writes for
// the row as a map (keys in sorted order, HTML-safe strings), without
// building the map per row; processes_test.go checks every field against
// encoding/json on a live snapshot.
type rowEncoder struct {
	h *Host
	// cmdTruncated counts rows whose command_line was cut
	// (sample.RowCommandLineBytes).
	cmdTruncated int
	// keys are the row's keys in the order Marshal writes a map's keys
	// (sorted): the fields, plus values and unavailable with metrics. A
	// text field's _bytes companion sorts right after it (no other key
	// lies between "name" and "name_bytes", "comm" and "comm_bytes",
	// "path" and "path_bytes"), so it is written beside its field.
	keys []string
	// metrics are the values' metrics sorted by id (the values and
	// unavailable maps' key order).
	metrics []sample.Metric
}

// newRowEncoder returns the encoder of rows with fields and metrics (the
// sort metric and metric_ids, deduplicated; none: no values, no
// unavailable).
func newRowEncoder(h *Host, fields []string, metrics []sample.Metric) *rowEncoder {
	// Only row fields are keys (a field the switch of append does not
	// know would have no key in the map either), each once.
	keys := make([]string, 0, len(fields)+2)
	for _, f := range fields {
		if slices.Contains(ProcessFields, f) {
			keys = append(keys, f)
		}
	}
	if len(metrics) > 0 {
		keys = append(keys, "values", "unavailable")
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	ms := slices.Clone(metrics)
	slices.SortFunc(ms, func(a, b sample.Metric) int { return strings.Compare(a.ID, b.ID) })
	ms = slices.CompactFunc(ms, func(a, b sample.Metric) bool { return a.ID == b.ID })
	return &rowEncoder{h: h, keys: keys, metrics: ms}
}

// append appends row r's object to b. cmdFailed reports a command_line
// that could not be read (the row says unavailable: unreadable).
func (e *rowEncoder) append(b []byte, r *procRow) (out []byte, cmdFailed bool) {
	b = append(b, '{')
	for _, k := range e.keys {
		b = jsonenc.Key(b, k)
		switch k {
		case "process_ref":
			b = jsonenc.String(b, e.h.Ref(r.id))
		case "pid":
			b = strconv.AppendInt(b, int64(r.id.PID), 10)
		case "name":
			b = appendText(b, k, r.name)
		case "comm":
			b = appendOptText(b, k, r.comm)
		case "path":
			b = appendOptText(b, k, r.path)
		case "path_deleted":
			if r.path != "" {
				b = strconv.AppendBool(b, r.pathDel)
			} else {
				b = append(b, "null"...)
			}
		case "parent":
			b = append(b, `{"pid":`...)
			b = strconv.AppendInt(b, int64(r.ppid), 10)
			if r.verified {
				b = append(b, `,"process_ref":`...)
				b = jsonenc.String(b, r.parentRef)
				b = append(b, `,"relationship":"verified"}`...)
			} else {
				b = append(b, `,"relationship":"unknown"}`...)
			}
		case "start_time":
			b = appendTS(b, r.start)
		case "state":
			b = jsonenc.String(b, r.state)
		case "uid":
			if r.uidKnown {
				b = strconv.AppendUint(b, uint64(r.uid), 10)
			} else {
				b = append(b, "null"...)
			}
		case "user":
			if r.uidKnown {
				b = jsonenc.String(b, sample.UserName(r.uid))
			} else {
				b = append(b, "null"...)
			}
		case "lifecycle":
			b = jsonenc.String(b, r.lifecycle())
		case "exited_at":
			if r.exitedAt.IsZero() {
				b = append(b, "null"...)
			} else {
				b = appendTS(b, r.exitedAt)
			}
		case "exit_basis":
			if r.exitedAt.IsZero() {
				b = append(b, "null"...)
			} else {
				b = append(b, `"absent_from_snapshot"`...)
			}
		case "last_seen_at":
			b = appendTS(b, r.lastSeen)
		case "history":
			if r.hasHist {
				b = append(b, `{"retained_from":`...)
				b = appendTS(b, r.from)
				b = append(b, `,"retained_to":`...)
				b = appendTS(b, r.to)
				b = append(b, '}')
			} else {
				b = append(b, "null"...)
			}
		case "namespaces", "ns_pid", "container":
			if r.p == nil {
				b = append(b, `{"unavailable":"process_not_live"}`...)
				continue
			}
			switch k {
			case "namespaces":
				b = appendNamespaces(b, r.p.Facts)
			case "ns_pid":
				b = appendNSPid(b, r.p.Facts)
			default:
				b = appendContainer(b, r.p.Facts)
			}
		case "command_line":
			if !r.live {
				b = append(b, `{"unavailable":"process_not_live"}`...)
				continue
			}
			raw, complete, err := sample.ReadCommandLine(r.id)
			if err != nil {
				b = append(b, `{"unavailable":"unreadable"}`...)
				cmdFailed = true
				continue
			}
			pg := sample.PageArgv(raw, 0, sample.RowCommandLineBytes, complete)
			if pg.Truncated() {
				e.cmdTruncated++
			}
			b = appendArgvPage(b, pg)
		case "values":
			b = append(b, '{')
			for _, m := range e.metrics {
				v, ok := sortValue(m, r)
				if !ok {
					continue
				}
				b = jsonenc.Key(b, m.ID)
				if m.Repr == sample.ReprNumber {
					b = jsonenc.Float(b, sample.AsFloat(v))
				} else {
					// integers are decimal strings (contract.Uint)
					b = append(b, '"')
					b = strconv.AppendUint(b, v, 10)
					b = append(b, '"')
				}
			}
			b = append(b, '}')
		case "unavailable":
			b = append(b, '{')
			for _, m := range e.metrics {
				if _, ok := sortValue(m, r); ok {
					continue
				}
				b = jsonenc.Key(b, m.ID)
				if r.p == nil {
					b = append(b, `"process_not_live"`...)
				} else {
					b = append(b, `"unknown"`...)
				}
			}
			b = append(b, '}')
		}
	}
	return append(b, '}'), cmdFailed
}

// appendText appends a text field's value (sample.Display) and, when the
// text is not valid UTF-8, its key_bytes companion (sample.TextFields).
func appendText(b []byte, key, s string) []byte {
	b = jsonenc.String(b, sample.Display(s))
	if sample.Lossy(s) {
		b = jsonenc.Key(b, key+"_bytes")
		b = jsonenc.String(b, sample.EncodeBytes(s))
	}
	return b
}

// appendOptText is appendText, null for an empty (unknown) text.
func appendOptText(b []byte, key, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendText(b, key, s)
}

// appendTS appends t as contract.TS encodes it: RFC 3339 with nanoseconds
// in UTC, null for the zero time.
func appendTS(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendArgvPage appends a command line page as a row's command_line
// value, {"value": [args]}, followed by its sibling fields:
// command_line_truncated (always), and when truncated command_line_bytes
// (the whole length, decimal string; null when longer than
// sample.MaxCommandLineRead), command_line_sha256 (of the whole
// /proc/PID/cmdline bytes; null likewise), command_line_arguments (the
// argument count) and command_line_next_offset (the argument index to
// pass as get_process_info's command_line_offset; null at the end).
func appendArgvPage(b []byte, pg sample.ArgvPage) []byte {
	b = append(b, `{"value":[`...)
	for i, a := range pg.Args {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.String(b, a)
	}
	b = append(b, "]}"...)
	// sibling keys in sorted order, like every row key
	if pg.Truncated() {
		if pg.Complete {
			b = append(b, `,"command_line_arguments":`...)
			b = strconv.AppendInt(b, int64(pg.Total), 10)
			b = append(b, `,"command_line_bytes":"`...)
			b = strconv.AppendInt(b, int64(pg.Bytes), 10)
			b = append(b, '"')
		} else {
			b = append(b, `,"command_line_arguments":null,"command_line_bytes":null`...)
		}
		b = append(b, `,"command_line_next_offset":`...)
		if pg.Next < pg.Total || !pg.Complete {
			b = strconv.AppendInt(b, int64(pg.Next), 10)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"command_line_sha256":`...)
		if pg.Complete {
			b = jsonenc.String(b, pg.SHA256)
		} else {
			b = append(b, "null"...)
		}
	}
	b = append(b, `,"command_line_truncated":`...)
	b = strconv.AppendBool(b, pg.Truncated())
	return b
}
