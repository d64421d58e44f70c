package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Profile is one saved investigation profile (list_profiles): its id,
// name, revision (a decimal string) and tracked names.
type Profile struct {
	ID       string   `json:"profile_id"`
	Name     string   `json:"name"`
	Revision string   `json:"revision"`
	Tracking []string `json:"tracking"`
}

// Profiles is the Tracking and profiles pane's state (list_profiles): the
// investigation revision every change must name, the working Tracking
// List, the active profile and whether the working list differs from it.
type Profiles struct {
	Revision string    `json:"revision"`
	Active   *string   `json:"active_profile_id"`
	Working  []string  `json:"working_tracking"`
	Unsaved  bool      `json:"unsaved_changes"`
	Saved    []Profile `json:"profiles"`
}

// active returns the active profile, nil when none is.
func (p *Profiles) active() *Profile {
	if p == nil || p.Active == nil {
		return nil
	}
	for i := range p.Saved {
		if p.Saved[i].ID == *p.Active {
			return &p.Saved[i]
		}
	}
	return nil
}

// profItem is one selectable line of the pane: a tracked name or a saved
// profile.
type profItem struct {
	name    string   // a tracked name
	profile *Profile // or a saved profile
}

func (m *Model) profItems() []profItem {
	p := m.profiles()
	if p == nil {
		return nil
	}
	var out []profItem
	for _, n := range p.Working {
		out = append(out, profItem{name: n})
	}
	for i := range p.Saved {
		out = append(out, profItem{profile: &p.Saved[i]})
	}
	return out
}

// profiles is the latest list_profiles read (nil before the first).
func (m *Model) profiles() *Profiles {
	if m.frame == nil {
		return nil
	}
	return m.frame.Profiles
}

// prompt is a one-line text input of the profiles pane (a tracked name to
// add, a profile name to save as or rename to).
type prompt struct {
	label string
	text  string
	done  func(string) tea.Cmd
}

// profileOp runs one update_profile or update_tracking call as the TUI's
// own operation, with the investigation revision the pane shows (a change
// made meanwhile by an agent is STATE_CONFLICT, as it would be for the
// agent). wait_ms 0: an action that needs a local decision (deleting a
// profile, a load that discards history or unsaved tracking) waits in the
// confirmation overlay like an agent's.
func (m *Model) profileOp(method, what string, args map[string]any) tea.Cmd {
	b := m.opt.Backend
	p := m.profiles()
	if p == nil {
		return nil
	}
	args["operation_id"] = fmt.Sprintf("tui-%s-%d", method, time.Now().UnixNano())
	args["expected_revision"] = p.Revision
	args["wait_ms"] = 0
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := call(ctx, b, method, args)
		if err != nil {
			return confirmedMsg{what + ": " + errText(err)}
		}
		var d struct {
			State string `json:"state"`
		}
		decode(res, &d)
		switch d.State {
		case "pending_confirmation":
			return confirmedMsg{what + ": waiting for your decision (y confirms, n denies)"}
		case "succeeded":
			return confirmedMsg{what + ": done"}
		}
		return confirmedMsg{what + ": " + d.State}
	}
}

func (m *Model) profilesKey(s string, k tea.KeyMsg) tea.Cmd {
	if m.prompt != nil {
		switch k.Type {
		case tea.KeyEnter:
			pr := m.prompt
			m.prompt = nil
			if t := strings.TrimSpace(pr.text); t != "" {
				return pr.done(t)
			}
		case tea.KeyEsc:
			m.prompt = nil
		case tea.KeyBackspace:
			if r := []rune(m.prompt.text); len(r) > 0 {
				m.prompt.text = string(r[:len(r)-1])
			}
		case tea.KeyRunes, tea.KeySpace:
			m.prompt.text += string(k.Runes)
		}
		return nil
	}
	items := m.profItems()
	var sel *profItem
	if m.profSel < len(items) {
		sel = &items[m.profSel]
	}
	switch s {
	case "esc", "q", "o":
		m.mode = modeTable
	case "up", "k":
		if m.profSel > 0 {
			m.profSel--
		}
	case "down", "j":
		if m.profSel < len(items)-1 {
			m.profSel++
		}
	case "+":
		m.prompt = &prompt{label: "Track process name", done: func(name string) tea.Cmd {
			return m.profileOp("update_tracking", "track "+name, map[string]any{"action": "add", "process_name": name})
		}}
	case "-", "d":
		switch {
		case sel != nil && sel.profile == nil:
			return m.profileOp("update_tracking", "untrack "+sel.name, map[string]any{"action": "remove", "process_name": sel.name})
		case sel != nil:
			return m.profileOp("update_profile", "delete profile "+sel.profile.Name,
				map[string]any{"action": "delete", "profile_id": sel.profile.ID, "profile_revision": sel.profile.Revision})
		}
	case "enter":
		if sel != nil && sel.profile != nil {
			return m.profileOp("update_profile", "load profile "+sel.profile.Name,
				map[string]any{"action": "load", "profile_id": sel.profile.ID, "profile_revision": sel.profile.Revision})
		}
	case "s":
		a := m.profiles().active()
		if a == nil {
			m.notice = "no active profile to save: A saves the tracked names as a new profile"
			return nil
		}
		return m.profileOp("update_profile", "save profile "+a.Name,
			map[string]any{"action": "save", "profile_id": a.ID, "profile_revision": a.Revision})
	case "A":
		m.prompt = &prompt{label: "Save the tracked names as profile", done: func(name string) tea.Cmd {
			return m.profileOp("update_profile", "save as "+name, map[string]any{"action": "save_as", "name": name})
		}}
	case "r":
		if sel != nil && sel.profile != nil {
			p := *sel.profile
			m.prompt = &prompt{label: "Rename profile " + p.Name + " to", text: p.Name, done: func(name string) tea.Cmd {
				return m.profileOp("update_profile", "rename "+p.Name, map[string]any{"action": "rename", "profile_id": p.ID, "profile_revision": p.Revision, "name": name})
			}}
		}
	}
	return nil
}

// profilesView draws the Tracking and profiles pane in w cells.
func (m *Model) profilesView(w int) []string {
	var lines []string
	add := func(s string) { lines = append(lines, fit(s, w)) }
	p := m.profiles()
	add("Tracking and profiles   + track a name  d untrack/delete  Enter load  s save  A save as  r rename  Esc back")
	if p == nil {
		add("  loading...")
		return lines
	}
	active := "none"
	if a := p.active(); a != nil {
		active = a.Name
		if p.Unsaved {
			active += " (unsaved changes)"
		}
	}
	add(fmt.Sprintf("  revision %s   active profile: %s", p.Revision, active))
	add("")
	add("Tracked names (history kept ~2 h for every process of these names and their descendants)")
	i := 0
	mark := func() string {
		defer func() { i++ }()
		if i == m.profSel {
			return "> "
		}
		return "  "
	}
	if len(p.Working) == 0 {
		add("    none: + adds a name, or * on a table row")
	}
	for _, n := range p.Working {
		add(mark() + "  " + n)
	}
	add("")
	add("Saved profiles")
	if len(p.Saved) == 0 {
		add("    none: A saves the tracked names as a profile")
	}
	for k := range p.Saved {
		pr := &p.Saved[k]
		flag := ""
		if p.Active != nil && *p.Active == pr.ID {
			flag = "  [active]"
		}
		add(fmt.Sprintf("%s  %-20s rev %-4s %s%s", mark(), pr.Name, pr.Revision, strings.Join(pr.Tracking, ", "), flag))
	}
	if m.prompt != nil {
		add("")
		add(m.prompt.label + ": " + m.prompt.text + "█  (Enter ok, Esc cancel)")
	}
	return lines
}
