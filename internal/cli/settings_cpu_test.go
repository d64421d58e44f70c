package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/tui"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// The TUI's CPU% scale persists: toggling it in Settings (S, c) with the
// CLI's save function writes cpu_share_of_all_cores to inquest.toml,
// `inquest settings get` reads it back, and a new TUI model opens with
// the saved scale; `settings set ... false` and `settings unset` return
// to per core.
func TestCPUShareSettingPersists(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "inquest.toml")
	t.Setenv("INQUEST_CONFIG", cfg)
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d %s", args, code, errb.String())
		}
		return out.String()
	}
	model := func() *tui.Model {
		m := tui.New(tui.Options{NoColor: true, LoadSettings: loadTUISettings, SetCPUShareOfAllCores: saveCPUShareOfAllCores})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		return m
	}
	key := func(m *tui.Model, k string) {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
	}
	const on, off = "[x] CPU% as a share of all cores", "[ ] CPU% as a share of all cores"
	if got := run("settings", "get", "cpu_share_of_all_cores"); got != "cpu_share_of_all_cores = false\n" {
		t.Fatalf("default: %q", got)
	}
	m := model()
	key(m, "S")
	if !strings.Contains(m.View(), off) {
		t.Fatalf("first TUI settings:\n%s", m.View())
	}
	key(m, "c")
	if v := m.View(); !strings.Contains(v, on) || strings.Contains(v, "error:") {
		t.Fatalf("after c:\n%s", v)
	}
	if f, err := config.LoadFrom(cfg); err != nil || !f.Settings.CPUShareOfAllCores {
		t.Fatalf("file after c: %+v %v", f, err)
	}
	if got := run("settings", "get", "cpu_share_of_all_cores"); got != "cpu_share_of_all_cores = true\n" {
		t.Fatalf("get after c: %q", got)
	}
	m2 := model()
	key(m2, "S")
	if !strings.Contains(m2.View(), on) {
		t.Fatalf("a new TUI did not open with the saved scale:\n%s", m2.View())
	}
	key(m2, "c") // back to per core, saved
	if f, _ := config.LoadFrom(cfg); f.Settings.CPUShareOfAllCores {
		t.Fatal("toggling back was not saved")
	}
	for _, reset := range [][]string{{"settings", "set", "cpu_share_of_all_cores", "false"}, {"settings", "unset", "cpu_share_of_all_cores"}} {
		run("settings", "set", "cpu_share_of_all_cores", "true")
		m3 := model()
		key(m3, "S")
		if !strings.Contains(m3.View(), on) {
			t.Fatalf("after settings set true:\n%s", m3.View())
		}
		run(reset...)
		m4 := model()
		key(m4, "S")
		if !strings.Contains(m4.View(), off) {
			t.Fatalf("after %q:\n%s", reset, m4.View())
		}
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"settings", "set", "cpu_share_of_all_cores", "maybe"}, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(errb.String(), "cpu_share_of_all_cores takes true or false") {
		t.Fatalf("bad value: exit %d %q", code, errb.String())
	}
}
