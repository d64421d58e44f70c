package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// runtimeInfo is get_runtime_collection of the detail's lifetime: the
// managed runtime found in it (jvm, dotnet, none, unknown), its version,
// the collection state (disabled, waiting, collecting, stopping,
// unavailable) with the reason, and, while collecting, the current
// values (metrics: catalog id -> decimal string).
type runtimeInfo struct {
	ref                     string
	runtime, version, state string
	reason, detail          string
	supported, enabled      bool
	metrics                 map[string]string
	err                     string
	loaded                  bool
}

type runtimeMsg struct {
	ref string
	rt  *runtimeInfo
}

// loadRuntime reads get_runtime_collection for ref. Log view has none
// (a recording holds the jvm_* metrics it recorded, not the runtime's
// state), so nothing is asked there.
func (m *Model) loadRuntime(ref string) tea.Cmd {
	if m.log != nil {
		return nil
	}
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rt := &runtimeInfo{ref: ref, loaded: true}
		res, err := call(ctx, b, "get_runtime_collection", map[string]any{"process_ref": ref})
		if err != nil {
			rt.err = "not read: " + contract.AsError(err).Message
			return runtimeMsg{ref, rt}
		}
		var d struct {
			Runtime   string  `json:"runtime"`
			Version   *string `json:"version"`
			State     string  `json:"state"`
			Reason    *string `json:"reason"`
			Detail    *string `json:"detail"`
			Supported bool    `json:"supported"`
			Enabled   bool    `json:"enabled"`
			Values    *struct {
				Metrics map[string]any `json:"metrics"`
			} `json:"values"`
		}
		if err := decode(res, &d); err != nil {
			rt.err = err.Error()
			return runtimeMsg{ref, rt}
		}
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		rt.runtime, rt.version, rt.state, rt.reason, rt.detail = d.Runtime, str(d.Version), d.State, str(d.Reason), str(d.Detail)
		rt.supported, rt.enabled = d.Supported, d.Enabled
		if d.Values != nil {
			rt.metrics = map[string]string{}
			for k, v := range d.Values.Metrics {
				if s, ok := v.(string); ok {
					rt.metrics[k] = s
				}
			}
		}
		return runtimeMsg{ref, rt}
	}
}

// runtimeLines are the detail's runtime lines: what runs the process
// and the collection state, then, while collecting, heap and collections.
//
//	Runtime  jvm 17.0.15  collection disabled: not authorized (inquest runtime enable PID)
//	Runtime  jvm 17.0.15  collecting  heap 12.3 MiB used, 16.0 MiB committed, 64.0 MiB max
//	         GC young 4 (0.012 s)  old 3 (0.045 s)  threads 11  classes 512  (m graphs jvm_* metrics)
func (m *Model) runtimeLines(r *Row) []string {
	rt := m.rt
	if m.log != nil {
		return []string{"  Runtime  not shown in Log view (a recording keeps the jvm_* metrics it collected; m graphs them)"}
	}
	if r.Ended {
		return []string{"  Runtime  not read: the lifetime ended (its retained jvm_* history stays; m graphs it)"}
	}
	if rt == nil || rt.ref != r.Ref || !rt.loaded {
		return []string{"  Runtime  reading..."}
	}
	if rt.err != "" {
		return []string{"  Runtime  " + rt.err}
	}
	name := rt.runtime
	if rt.version != "" {
		name += " " + escapeText(rt.version)
	}
	var state string
	switch rt.state {
	case "disabled":
		state = "collection disabled"
		if rt.supported {
			state += fmt.Sprintf(": not authorized (inquest runtime enable %d)", r.PID)
		}
	case "unavailable":
		state = "collection unavailable"
		if rt.reason != "" {
			state += ": " + escapeText(rt.reason)
		}
		if rt.detail != "" {
			state += " (" + escapeText(rt.detail) + ")"
		}
	case "waiting":
		state = "collection waiting"
		if rt.detail != "" {
			state += ": " + escapeText(rt.detail)
		}
	default:
		state = escapeText(rt.state)
	}
	if rt.runtime == "none" || rt.runtime == "unknown" {
		state = ""
		if rt.detail != "" {
			state = "(" + escapeText(rt.detail) + ")"
		}
	}
	first := "  Runtime  " + name + "  " + state
	if rt.state != "collecting" || rt.metrics == nil {
		return []string{first}
	}
	bytes := func(id string) string {
		if v, err := strconv.ParseUint(rt.metrics[id], 10, 64); err == nil {
			return Bytes(v)
		}
		return "-"
	}
	count := func(id string) string {
		if v, ok := rt.metrics[id]; ok {
			return v
		}
		return "-"
	}
	secs := func(id string) string {
		if v, err := strconv.ParseUint(rt.metrics[id], 10, 64); err == nil {
			return strconv.FormatFloat(float64(v)/1e9, 'f', 3, 64) + " s"
		}
		return "-"
	}
	first += fmt.Sprintf("  heap %s used, %s committed, %s max", bytes("jvm_heap_used_bytes"), bytes("jvm_heap_committed_bytes"), bytes("jvm_heap_max_bytes"))
	second := fmt.Sprintf("           GC young %s (%s)  old %s (%s)  threads %s  classes %s  (m graphs jvm_* metrics)",
		count("jvm_young_gc_count"), secs("jvm_young_gc_time_ns"), count("jvm_old_gc_count"), secs("jvm_old_gc_time_ns"),
		count("jvm_threads_live"), count("jvm_classes_loaded"))
	return []string{first, second}
}

// picker is the graph picker (m in the process detail): the process
// metrics of the catalog (list_metrics), the jvm_* family only for a
// process whose runtime is a JVM; Enter graphs the selected one for the
// detail's process (add_graphs).
type picker struct {
	ref     string
	metrics []pickMetric
	scr     scroll
	err     string
	loaded  bool
}

// pickMetric is one catalog entry the picker lists.
type pickMetric struct{ id, unit, desc string }

type pickerMsg struct {
	ref string
	p   *picker
}

// openPicker reads the process metric catalog for the picker of ref;
// jvm says whether the jvm_* family is listed.
func (m *Model) openPicker(ref string, jvm bool) tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p := &picker{ref: ref, loaded: true}
		res, err := call(ctx, b, "list_metrics", map[string]any{"target_kind": "process"})
		if err != nil {
			p.err = errText(err)
			return pickerMsg{ref, p}
		}
		var d struct {
			Metrics []struct {
				ID        string `json:"id"`
				Unit      string `json:"unit"`
				Desc      string `json:"description"`
				Available bool   `json:"available_on_platform"`
			} `json:"metrics"`
		}
		if err := decode(res, &d); err != nil {
			p.err = err.Error()
			return pickerMsg{ref, p}
		}
		// The JVM family first for a JVM: it is what the picker is
		// opened for there.
		var jvms, others []pickMetric
		for _, x := range d.Metrics {
			if !x.Available {
				continue
			}
			desc := x.Desc
			if strings.HasPrefix(desc, "JVM (") { // the family's common source clause
				if i := strings.Index(desc, "): "); i > 0 {
					desc = desc[i+3:]
				}
			}
			pm := pickMetric{x.ID, x.Unit, desc}
			if strings.HasPrefix(x.ID, "jvm_") {
				if jvm {
					jvms = append(jvms, pm)
				}
				continue
			}
			others = append(others, pm)
		}
		p.metrics = append(jvms, others...)
		return pickerMsg{ref, p}
	}
}

// pickerShown is how many metrics the picker shows at once.
func (m *Model) pickerShown() int { return max(m.height-7, 1) }

// pickerKey handles the picker's keys: movement, Enter graphs the
// selected metric, Esc (or m, q) closes.
func (m *Model) pickerKey(s string) tea.Cmd {
	p := m.pick
	switch s {
	case "esc", "q", "m":
		m.pick = nil
		return nil
	case "enter":
		if p == nil || len(p.metrics) == 0 {
			return nil
		}
		id := p.metrics[p.scr.sel].id
		m.pick = nil
		return m.addGraph([]map[string]any{{"metric_id": id, "process_ref": p.ref}})
	}
	if p != nil {
		p.scr.key(s, len(p.metrics), m.pickerShown())
	}
	return nil
}

// pickerView draws the picker in place of the table.
func (m *Model) pickerView(st styles, w int) []string {
	p := m.pick
	title := "Graph a metric (Enter adds it, Esc closes)"
	if p != nil && p.loaded {
		if pos := p.scr.position("metrics", len(p.metrics), m.pickerShown()); pos != "" {
			title += "  " + pos
		}
	}
	lines := []string{st.head.Render(fit(title, w))}
	switch {
	case p == nil || !p.loaded:
		lines = append(lines, fit("  reading the metric catalog...", w))
	case p.err != "":
		lines = append(lines, fit("  "+p.err, w))
	default:
		from, to := p.scr.window(len(p.metrics), m.pickerShown())
		for i := from; i < to; i++ {
			x := p.metrics[i]
			mark := "  "
			if i == p.scr.sel {
				mark = "> "
			}
			line := fit(fmt.Sprintf("%s%-32s %-12s %s", mark, x.id, x.unit, escapeText(x.desc)), w)
			if i == p.scr.sel {
				line = st.sel.Render(line)
			}
			lines = append(lines, line)
		}
	}
	return lines
}
