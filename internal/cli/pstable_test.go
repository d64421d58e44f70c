package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
)

// writePSTableMaps is the ps table as it was rendered from values decoded
// into map[string]any: the reference writePSTable's typed decoding must
// match byte for byte.
func writePSTableMaps(out io.Writer, data any, extra string, exact bool) (bool, error) {
	var page struct {
		Rows []struct {
			PID       int            `json:"pid"`
			Name      string         `json:"name"`
			NameBytes string         `json:"name_bytes"`
			State     string         `json:"state"`
			Container map[string]any `json:"container"`
			Values    map[string]any `json:"values"`
		} `json:"rows"`
		Next *string `json:"next_cursor"`
	}
	if err := remarshal(data, &page); err != nil {
		return false, err
	}
	hdr := []string{"PID", "CPU%", "RSS", "THR", "FDS"}
	left := []bool{false, false, false, false, false}
	if extra != "" {
		hdr, left = append(hdr, strings.ToUpper(cell(extra))), append(left, false)
	}
	showContainer := false
	for _, r := range page.Rows {
		if c := containerCell(map[string]any{"container": r.Container}); c != "-" && c != "?" {
			showContainer = true
		}
	}
	if showContainer {
		hdr, left = append(hdr, "CONTAINER"), append(left, true)
	}
	hdr, left = append(hdr, "STATE", "NAME"), append(left, true, true)
	cells := [][]string{hdr}
	for _, r := range page.Rows {
		v := r.Values
		rss := humanBytes(fmtVal(v["rss_bytes"]))
		if exact {
			rss = fmtVal(v["rss_bytes"])
		}
		line := []string{strconv.Itoa(r.PID), fmtPercent(v["cpu_percent"]), rss, fmtVal(v["threads"]), fmtVal(v["fd_count"])}
		if extra != "" {
			line = append(line, fmtMetricValue(metricUnit(extra), r.Values[extra]))
		}
		if showContainer {
			line = append(line, containerCell(map[string]any{"container": r.Container}))
		}
		n := map[string]any{"name": r.Name}
		if r.NameBytes != "" {
			n["name_bytes"] = r.NameBytes
		}
		cells = append(cells, append(line, cell(r.State), textOf(n, "name")))
	}
	writeAligned(out, cells, left)
	return page.Next != nil, nil
}

// checkPSTable fails when writePSTable and the map-based reference differ
// on data (bytes, more or the error).
func checkPSTable(t *testing.T, what string, data json.RawMessage, extra string, exact bool) {
	t.Helper()
	var got, want bytes.Buffer
	gotMore, gotErr := writePSTable(&got, data, extra, exact)
	wantMore, wantErr := writePSTableMaps(&want, data, extra, exact)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%s (extra %q): error %v, the map decoding's %v", what, extra, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if got.String() != want.String() || gotMore != wantMore {
		t.Fatalf("%s (extra %q, exact %v): the table differs from the map decoding's\ngot (more %v):\n%s\nwant (more %v):\n%s", what, extra, exact, gotMore, got.String(), wantMore, want.String())
	}
}

// TestPSTableMatchesMapDecoding: the ps table of typed values prints the
// same bytes as the table of values decoded into maps, for every shape a
// value takes (number, decimal string, null, absent, escaped string, a
// rational object, a value of an unexpected type), containers, names
// that are not UTF-8, a next page, and for live list_processes pages
// of this machine (in-process host) under every sort ps shows.
func TestPSTableMatchesMapDecoding(t *testing.T) {
	cases := []struct {
		name, data string
	}{
		{"empty", `{"rows":[],"next_cursor":null}`},
		{"no rows field", `{}`},
		{"numbers", `{"rows":[{"pid":1,"name":"init","state":"sleeping","values":{"cpu_percent":0.9995285084091843,"fd_count":"294","rss_bytes":"13312000","threads":"16"}}]}`},
		{"integral floats and big", `{"rows":[{"pid":2,"name":"a","state":"running","values":{"cpu_percent":100,"fd_count":3,"rss_bytes":1e15,"threads":2.5}},{"pid":3,"name":"b","state":"zombie","values":{"cpu_percent":-0,"rss_bytes":"1023","threads":1e300,"fd_count":-7}}]}`},
		{"null and absent", `{"rows":[{"pid":4,"name":"k","state":"idle","unavailable":{"fd_count":"denied"},"values":{"cpu_percent":null,"rss_bytes":null}},{"pid":5,"name":"x","state":"sleeping"},{"pid":6,"name":"y","state":"sleeping","values":null}]}`},
		{"strings", `{"rows":[{"pid":7,"name":"tab\tname","state":"disk \"sleep\"","values":{"cpu_percent":"1.5","rss_bytes":"12\u00341","threads":"x","fd_count":""}}]}`},
		{"odd types", `{"rows":[{"pid":8,"name":"o","state":"s","values":{"cpu_percent":true,"rss_bytes":[1,2],"threads":{"a":1},"fd_count":false}}]}`},
		{"name bytes", `{"rows":[{"pid":9,"name":"caf\ufffd","name_bytes":"` + sample.EncodeBytes("caf\xe9") + `","state":"sleeping","values":{}},{"pid":10,"name":"bad","name_bytes":"!!","state":"sleeping","values":{}}]}`},
		{"containers", `{"rows":[{"pid":11,"name":"c","state":"sleeping","container":{"cgroup":"/docker/abc","engine":null,"id":"0123456789abcdef0123","pod":null,"rule":"docker","runtime":"docker"},"values":{}},{"pid":12,"name":"h","state":"sleeping","container":{"cgroup":"/","engine":null,"id":null,"pod":null,"rule":null,"runtime":"none"},"values":{}},{"pid":13,"name":"u","state":"sleeping","container":{"runtime":"unknown","unavailable":"unsupported"},"values":{}},{"pid":14,"name":"n","state":"sleeping","container":null,"values":{}}]}`},
		{"host containers only", `{"rows":[{"pid":12,"name":"h","state":"sleeping","container":{"id":null,"runtime":"none"},"values":{}}]}`},
		{"next page", `{"rows":[{"pid":1,"name":"a","state":"s","values":{"cpu_percent":0}}],"next_cursor":"abc"}`},
		{"extra values", `{"rows":[{"pid":1,"name":"a","state":"s","values":{"cpu_percent":1,"major_faults":"6","cpu_time_ns":"65000000000","read_bytes_per_s":{"numerator":"3","denominator":"2"},"vsz_bytes":null,"write_bytes_per_s":12.5}},{"pid":2,"name":"b","state":"s","values":{"major_faults":3.5,"cpu_time_ns":null,"read_bytes_per_s":"7"}}]}`},
		{"duplicate keys", `{"rows":[{"pid":1,"name":"a","state":"s","values":{"cpu_percent":1,"cpu_percent":null,"threads":"2","threads":"3"}}]}`},
		{"type error", `{"rows":[{"pid":"one","name":"a","state":"s","values":{}}]}`},
	}
	extras := []string{"", "major_faults", "cpu_time_ns", "read_bytes_per_s", "write_bytes_per_s", "vsz_bytes"}
	for _, c := range cases {
		if !json.Valid([]byte(c.data)) {
			t.Fatalf("%s: the case's data is not JSON", c.name)
		}
		for _, extra := range extras {
			for _, exact := range []bool{false, true} {
				checkPSTable(t, c.name, json.RawMessage(c.data), extra, exact)
			}
		}
	}

	rt, err := newProcRuntime(context.Background(), runtimeOptions{InProcess: true, Stderr: io.Discard, ProcTools: []string{"list_processes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, sortBy := range []string{"pid", "cpu", "rss", "majflt", "time", "read", "vsz", "name"} {
		key, err := psSortKey(sortBy)
		if err != nil {
			t.Fatal(err)
		}
		extra := ""
		switch key {
		case "pid", "name", "cpu_percent", "rss_bytes", "threads", "fd_count":
		default:
			extra = key
		}
		raw, _ := psArgs(key, "", "", 0, false, true)
		res, err := rt.Registry.Call(context.Background(), "list_processes", withContainerFilter(raw, "", true))
		if err != nil {
			t.Fatalf("list_processes sorted by %s: %v", key, err)
		}
		data, err := json.Marshal(res.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(`"rows":[{`)) {
			t.Fatalf("list_processes sorted by %s listed no process: %s", key, data)
		}
		for _, exact := range []bool{false, true} {
			checkPSTable(t, "live --sort "+sortBy, data, extra, exact)
		}
	}
}
