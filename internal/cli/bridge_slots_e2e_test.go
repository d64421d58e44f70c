//go:build linux

package cli

import (
	"strings"
	"testing"
	"time"
)

// TestOneHostConnectionPerBridge runs the built binary over stdio: four
// bridges whose first calls are each toolset's tools (bin's
// inspect_binary, whose mapped_by asks the running host; a perf capture,
// which names its workload through the host; a proc tool; and a bridge
// mixing all three) each hold exactly one host connection, so all four
// then make proc calls without BUSY, get_status counts 4 bridges, a fifth
// bridge is refused with BUSY, and gets in once one of the four exits.
func TestOneHostConnectionPerBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	if out, code := e.run("serve", "--detach"); code != 0 {
		t.Fatalf("serve --detach: %d %s", code, out)
	}
	all := []string{"--toolsets", "proc,perf,bin"}
	inspect := func(b *heBridge) {
		m := b.mustCall("inspect_binary", map[string]any{"path": "/bin/ls"})
		if dig(m, "data", "mapped_by", "state") != "known" {
			t.Fatalf("inspect_binary mapped_by with a running host: %v", dig(m, "data", "mapped_by"))
		}
	}
	capture := func(b *heBridge) {
		m := b.mustCall("capture_and_summarize_executions", map[string]any{
			"target":   map[string]any{"argv": []string{"/bin/true"}, "cwd": "/tmp"},
			"provider": map[string]any{"kind": "direct"},
		})
		if w, _ := m["warnings"].([]any); strings.Contains(strings.ToLower(strings.Join(strs(w), " ")), "busy") {
			t.Fatalf("capture warnings: %v", w)
		}
	}
	proc := func(b *heBridge) { b.mustCall("list_processes", map[string]any{"limit": 1}) }
	firsts := []struct {
		name  string
		calls []func(*heBridge)
	}{
		{"bin first", []func(*heBridge){inspect}},
		{"perf first", []func(*heBridge){capture}},
		{"proc first", []func(*heBridge){proc}},
		{"mixed", []func(*heBridge){inspect, capture, proc}},
	}
	var bridges []*heBridge
	for _, f := range firsts {
		b := e.bridgeArgs(all...)
		for _, c := range f.calls {
			c(b)
		}
		bridges = append(bridges, b)
	}
	// Every bridge now makes proc calls: none is refused for want of a slot.
	for i, b := range bridges {
		for j := 0; j < 3; j++ {
			if m, isErr := b.call("get_status", nil); isErr {
				t.Fatalf("%s: get_status: %v", firsts[i].name, m["error"])
			}
		}
	}
	if out, code := e.run("call", "get_status"); code != 0 || !strings.Contains(out, `"bridge_connections": 4`) {
		t.Fatalf("get_status beside 4 bridges: %d %s", code, out)
	}
	fifth := e.bridgeArgs(all...)
	if m, isErr := fifth.call("get_status", nil); !isErr || errCode(m) != "BUSY" {
		t.Fatalf("fifth bridge beside 4: %v", m)
	}
	// One bridge exits: its slot frees and the fifth gets in.
	bridges[0].cs.Close()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		m, isErr := fifth.call("get_status", nil)
		if !isErr {
			break
		}
		if errCode(m) != "BUSY" || time.Now().After(deadline) {
			t.Fatalf("fifth bridge after one exited: %v", m["error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func strs(v []any) []string {
	out := make([]string, 0, len(v))
	for _, x := range v {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
