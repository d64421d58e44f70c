//go:build linux

package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/managed/jvmtest"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// jvmFixture is a host sampling this machine every 250 ms with a real
// JVM (the test program of jvmtest) running; it returns the host, a TUI
// backend (a local face) and the JVM.
func jvmFixture(t *testing.T) (*host.Host, Backend, *jvmtest.Proc) {
	t.Helper()
	jdk := jvmtest.Default(t)
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	p := jvmtest.Start(t, jdk)
	p.Do(t, "alloc 16")
	h, err := host.New(host.Options{Version: "test", Interval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	s := h.NewSession()
	host.MarkLocalFace(s)
	b := BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	})
	return h, b, p
}

// jstatCounts runs `jstat -gc PID` once and returns YGC and FGC.
func jstatCounts(t *testing.T, jdk jvmtest.JDK, pid int) (string, string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(filepath.Dir(jdk.Java), "jstat"), "-gc", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("jstat: %v", err)
	}
	l := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(l) != 2 {
		t.Fatalf("jstat -gc printed %q", out)
	}
	names, vals := strings.Fields(l[0]), strings.Fields(l[1])
	m := map[string]string{}
	for i := range names {
		if i < len(vals) {
			m[names[i]] = vals[i]
		}
	}
	return m["YGC"], m["FGC"]
}

// The process detail of a real JVM names its runtime, the version jcmd
// reports and the collection state; an MCP client's enable request shows
// as the confirmation overlay and y authorizes it; the detail then shows
// heap and collections, whose young and full counts equal jstat -gc read
// in the same run while the JVM is idle; m opens the graph picker with the
// jvm_* family first (golden at 120x40 and 80x24), and Enter graphs the
// JVM's heap used, which the graph workspace then holds for this
// process.
func TestDetailRuntimeAndGraphPicker(t *testing.T) {
	h, b, p := jvmFixture(t)
	pid := p.PID
	d := newDriver(t, b)
	var ref string
	waitPoll(t, "the JVM in the table", func() bool {
		d.refresh()
		for _, r := range d.m.frame.Rows {
			if r.PID == pid && !r.Ended {
				ref = r.Ref
				return true
			}
		}
		return false
	})
	d.keys("/")
	d.keys(strings.Split(strconv.Itoa(pid), "")...)
	d.keys("enter", "enter")
	if r := d.m.selected(); r == nil || r.PID != pid || !d.m.detail {
		t.Fatalf("the JVM's detail is not open:\n%s", d.m.View())
	}
	jcmd := filepath.Join(filepath.Dir(p.JDK.Java), "jcmd")
	out, err := exec.Command(jcmd, strconv.Itoa(pid), "VM.system_properties").Output()
	if err != nil {
		t.Fatalf("jcmd: %v", err)
	}
	version := regexp.MustCompile(`(?m)^java\.version=(.*)$`).FindStringSubmatch(string(out))
	if version == nil {
		t.Fatalf("no java.version in jcmd output:\n%s", out)
	}
	want := fmt.Sprintf("Runtime  jvm %s  collection disabled: not authorized (inquest runtime enable %d)", version[1], pid)
	if v := d.m.View(); !strings.Contains(v, want) {
		t.Fatalf("want %q in the detail:\n%s", want, v)
	}

	// An MCP client asks; the TUI's overlay confirms.
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	defer bs.Close()
	bcall := func(method string, args any) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := h.Dispatch(context.Background(), bs, method, raw)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		bb, _ := json.Marshal(res.Data)
		json.Unmarshal(bb, &m)
		return m
	}
	rt := bcall("get_runtime_collection", map[string]any{"process_ref": ref})
	en := bcall("set_runtime_collection", map[string]any{"process_ref": ref, "enabled": true, "operation_id": "tui-rt-1", "expected_revision": rt["revision"], "wait_ms": 0})
	if en["state"] != "pending_confirmation" {
		t.Fatalf("enable: %v", en)
	}
	d.refresh()
	if v := d.m.View(); !strings.Contains(v, "Confirm set_runtime_collection") {
		t.Fatalf("no overlay for the enable:\n%s", v)
	}
	d.keys("y")
	d.refresh()
	var view string
	waitPoll(t, "the detail to show the JVM collecting", func() bool {
		d.refresh()
		d.run(d.m.loadRuntime(ref))
		view = d.m.View()
		return strings.Contains(view, "collecting  heap ")
	})
	// The JVM is idle: the counts shown are jstat's.
	var ygc, fgc string
	waitPoll(t, "the shown GC counts to equal jstat's", func() bool {
		ygc, fgc = jstatCounts(t, p.JDK, pid)
		d.run(d.m.loadRuntime(ref))
		view = d.m.View()
		return strings.Contains(view, "GC young "+ygc+" (") && strings.Contains(view, " old "+fgc+" (")
	})
	t.Logf("detail shows young %s, old %s collections (jstat YGC %s FGC %s)", ygc, fgc, ygc, fgc)
	if !regexp.MustCompile(`heap \S+ used, \S+ committed, \S+ max`).MatchString(view) {
		t.Fatalf("heap line:\n%s", view)
	}

	// The graph picker.
	for _, sz := range []struct {
		w, h int
		name string
	}{{120, 40, "graph_picker"}, {80, 24, "graph_picker_80x24"}} {
		d.m.Update(tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		d.keys("m")
		v := d.m.View()
		checkShape(t, v, sz.w, sz.h)
		lines := strings.Split(v, "\n")
		golden(t, sz.name, strings.Join(lines[3:], "\n")) // below the header and meters
		if !strings.Contains(lines[4], "> jvm_heap_used_bytes") {
			t.Fatalf("the picker does not start on jvm_heap_used_bytes:\n%s", v)
		}
		d.keys("esc")
		if d.m.pick != nil || !d.m.detail {
			t.Fatal("Esc did not close the picker only")
		}
	}
	d.m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	d.keys("m", "enter")
	if !strings.Contains(d.m.notice, "added") {
		t.Fatalf("graph notice %q", d.m.notice)
	}
	gs := bcall("get_graphs", map[string]any{})
	found := false
	for _, g := range gs["graphs"].([]any) {
		gm := g.(map[string]any)
		b, _ := json.Marshal(gm)
		if strings.Contains(string(b), `"jvm_heap_used_bytes"`) && strings.Contains(string(b), ref) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no jvm_heap_used_bytes graph of %s in the workspace: %v", ref, gs)
	}
}

// waitPoll polls fn every 50 ms until it holds; the bound only catches a
// hang.
func waitPoll(t *testing.T, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var _ = os.Getpid
