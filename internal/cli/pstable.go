package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/sample"
)

// psPage is the part of list_processes' data the ps table reads, decoded
// into fixed types (no map or boxed number per value): V is psColumnValues
// for the four table metrics, or psSortValues when --sort adds a column of
// another metric.
type psPage[V any] struct {
	Rows []psRow[V] `json:"rows"`
	// Next is the next page's cursor; nil on the last page.
	Next *string `json:"next_cursor"`
}

// psRow is one process row of the ps table.
type psRow[V any] struct {
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	NameBytes string `json:"name_bytes"`
	State     string `json:"state"`
	// Container is the row's container object; nil when absent or null.
	Container *psContainer `json:"container"`
	// Values holds the column metrics and the sort metric, from the
	// snapshot the order comes from.
	Values V `json:"values"`
}

// psContainer is the part of a row's container object the CONTAINER cell
// shows: the runtime name and the container id (empty when null).
type psContainer struct {
	Runtime string `json:"runtime"`
	ID      string `json:"id"`
}

// cell is the row's CONTAINER cell, as containerCell renders it:
// runtime:shortid, "-" for a host process, "?" when unknown.
func (c *psContainer) cell() string {
	if c == nil {
		return "?"
	}
	switch c.Runtime {
	case sample.RuntimeNone:
		return "-"
	case "", sample.RuntimeUnknown:
		return "?"
	}
	return c.Runtime + ":" + sample.Container{ID: c.ID}.ShortID()
}

// psColumnValues are the four metrics of the ps table's columns.
type psColumnValues struct {
	CPU     psMetric `json:"cpu_percent"`
	RSS     psMetric `json:"rss_bytes"`
	Threads psMetric `json:"threads"`
	FDs     psMetric `json:"fd_count"`
}

func (v *psColumnValues) columns() *psColumnValues { return v }

// extra is never asked of the fixed columns: a sort by one of them
// shows no extra column.
func (v *psColumnValues) extra(string) psMetric { return psMetric{} }

// psSortValues are the table's four metrics and, under Other, every
// value of the row (the extra sort metric among them).
type psSortValues struct {
	psColumnValues
	Other map[string]psMetric
}

// UnmarshalJSON decodes the values object once into a map and takes the
// four columns from it.
func (v *psSortValues) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &v.Other); err != nil {
		return err
	}
	v.CPU, v.RSS, v.Threads, v.FDs = v.Other["cpu_percent"], v.Other["rss_bytes"], v.Other["threads"], v.Other["fd_count"]
	return nil
}

func (v *psSortValues) columns() *psColumnValues { return &v.psColumnValues }
func (v *psSortValues) extra(id string) psMetric { return v.Other[id] }

// psValues is what the table reads of a row's values.
type psValues interface {
	columns() *psColumnValues
	extra(id string) psMetric
}

// psMetric is one metric value as list_processes sent it: absent or null
// (unknown, shown "-"), a JSON number (percentages, slopes), a decimal
// string (exact integers) or, from a host of another version, any other
// JSON value, kept as encoding/json decodes it into an interface.
type psMetric struct {
	kind  psMetricKind
	num   float64
	str   string
	other any
}

// psMetricKind says which field of a psMetric holds the value.
type psMetricKind uint8

const (
	psNone psMetricKind = iota // absent or null
	psNum
	psStr
	psOther
)

// UnmarshalJSON decodes one JSON value b (valid, as the decoder hands it
// over).
func (v *psMetric) UnmarshalJSON(b []byte) error {
	*v = psMetric{}
	switch c := b[0]; {
	case c == 'n':
		return nil
	case c == '"':
		if bytes.IndexByte(b, '\\') < 0 {
			v.kind, v.str = psStr, string(b[1:len(b)-1])
			return nil
		}
		v.kind = psStr
		return json.Unmarshal(b, &v.str)
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			// out of float64's range: encoding/json's own error
			var x any
			return json.Unmarshal(b, &x)
		}
		v.kind, v.num = psNum, f
		return nil
	}
	v.kind = psOther
	return json.Unmarshal(b, &v.other)
}

// any is the value as encoding/json decodes it into an interface (nil,
// float64, string, ...), for fmtMetricValue.
func (v psMetric) any() any {
	switch v.kind {
	case psNum:
		return v.num
	case psStr:
		return v.str
	case psOther:
		return v.other
	}
	return nil
}

// text is fmtVal of the value.
func (v psMetric) text() string {
	switch v.kind {
	case psNone:
		return "-"
	case psNum:
		if v.num == math.Trunc(v.num) && math.Abs(v.num) < 1e15 {
			return strconv.FormatFloat(v.num, 'f', 0, 64)
		}
		return strconv.FormatFloat(v.num, 'f', 1, 64)
	case psStr:
		return v.str
	}
	return fmtVal(v.other)
}

// percent is fmtPercent of the value.
func (v psMetric) percent() string {
	if v.kind == psNum {
		return strconv.FormatFloat(v.num, 'f', 1, 64)
	}
	return "-"
}

// writePSTable writes the ps table of list_processes' data (the
// json.RawMessage the bridge passes on, or any value that marshals to
// that data) to out: PID, CPU%, RSS, THR, FDS, the extra sort metric's
// column when extra is set, CONTAINER when a row runs in a container,
// STATE and NAME. exact prints RSS in bytes. more reports a next page.
func writePSTable(out io.Writer, data any, extra string, exact bool) (more bool, err error) {
	if extra == "" {
		var page psPage[psColumnValues]
		if err := remarshal(data, &page); err != nil {
			return false, err
		}
		writePSRows(out, page.Rows, extra, exact)
		return page.Next != nil, nil
	}
	var page psPage[psSortValues]
	if err := remarshal(data, &page); err != nil {
		return false, err
	}
	writePSRows(out, page.Rows, extra, exact)
	return page.Next != nil, nil
}

// writePSRows renders rows as writePSTable describes.
func writePSRows[V any, PV interface {
	*V
	psValues
}](out io.Writer, rows []psRow[V], extra string, exact bool) {
	hdr := []string{"PID", "CPU%", "RSS", "THR", "FDS"}
	left := []bool{false, false, false, false, false}
	unit := ""
	if extra != "" {
		hdr, left = append(hdr, strings.ToUpper(cell(extra))), append(left, false)
		unit = metricUnit(extra)
	}
	showContainer := false
	for i := range rows {
		if c := rows[i].Container.cell(); c != "-" && c != "?" {
			showContainer = true
			break
		}
	}
	if showContainer {
		hdr, left = append(hdr, "CONTAINER"), append(left, true)
	}
	hdr, left = append(hdr, "STATE", "NAME"), append(left, true, true)
	cells := make([][]string, 0, len(rows)+1)
	cells = append(cells, hdr)
	for i := range rows {
		r := &rows[i]
		vals := PV(&r.Values)
		v := vals.columns()
		rss := v.RSS.text()
		if !exact {
			rss = humanBytes(rss)
		}
		line := make([]string, 5, len(hdr))
		line[0], line[1], line[2], line[3], line[4] = strconv.Itoa(r.PID), v.CPU.percent(), rss, v.Threads.text(), v.FDs.text()
		if extra != "" {
			line = append(line, fmtMetricValue(unit, vals.extra(extra).any()))
		}
		if showContainer {
			line = append(line, r.Container.cell())
		}
		cells = append(cells, append(line, cell(r.State), psNameCell(r.Name, r.NameBytes)))
	}
	writeAligned(out, cells, left)
}

// psNameCell is textOf of a row's name: its exact bytes from name_bytes
// when that decodes, else the name, escaped by textCell.
func psNameCell(name, nameBytes string) string {
	if nameBytes != "" {
		if v, err := sample.DecodeBytes(nameBytes); err == nil {
			return textCell(v)
		}
	}
	return textCell(name)
}
