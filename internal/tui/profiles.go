package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
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
	if m.profScr.sel < len(items) {
		sel = &items[m.profScr.sel]
	}
	switch s {
	case "esc", "q", "o":
		m.mode = modeTable
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
	default:
		// Up/Down, PgUp/PgDn, Home/End move the selection over the
		// names and profiles; the view moves the window to hold it.
		m.profMove(s)
	}
	return nil
}

// profBodyShown is how many lines of the pane's list (tracked names and
// saved profiles with their headings) fit: below the meters, the pane's
// three head lines and above its position line, the prompt and the
// confirmation overlay.
func (m *Model) profBodyShown() int {
	n := m.height - 4 - 3 - 1 - m.confirmHeight()
	if m.prompt != nil {
		n -= 2
	}
	return max(n, 1)
}

// profBody is the pane's list: its lines (without the selection mark)
// and, per line, the item it shows (an index into profItems; -1 for a
// heading or a blank line).
func (m *Model) profBody() (body []string, item []int) {
	p := m.profiles()
	if p == nil {
		return nil, nil
	}
	line := func(s string, i int) { body, item = append(body, s), append(item, i) }
	i := 0
	line("Tracked names (history kept ~2 h for every process of these names and their descendants)", -1)
	if len(p.Working) == 0 {
		line("    none: + adds a name, or * on a table row", -1)
	}
	for _, n := range p.Working {
		line("  "+n, i)
		i++
	}
	line("", -1)
	line("Saved profiles", -1)
	if len(p.Saved) == 0 {
		line("    none: A saves the tracked names as a profile", -1)
	}
	for k := range p.Saved {
		pr := &p.Saved[k]
		flag := ""
		if p.Active != nil && *p.Active == pr.ID {
			flag = "  [active]"
		}
		line(fmt.Sprintf("  %-20s rev %-4s %s%s", pr.Name, pr.Revision, strings.Join(pr.Tracking, ", "), flag), i)
		i++
	}
	return body, item
}

// lineOf is the body line of item it (-1 when none shows it).
func lineOf(item []int, it int) int {
	for l, x := range item {
		if x == it {
			return l
		}
	}
	return -1
}

// profMove handles a movement key of the pane. The list has headings
// between its items, so the keys work on the window of lines: Up/Down
// select the previous/next item and the window follows it; PgUp/PgDn
// move the window by its height (every line is shown on the way) and
// select an item it shows if the selected one left it; Home/End go to
// the first item and the top, the last item and the end of the list.
func (m *Model) profMove(key string) {
	body, item := m.profBody()
	n, shown := len(body), m.profBodyShown()
	items := len(m.profItems())
	d, ok := scrollStep(key, items, shown)
	if !ok || items == 0 {
		return
	}
	sc := &m.profScr
	switch key {
	case "pgup", "pgdown", " ":
		sc.top = max(min(sc.top+d, n-shown), 0)
		if l := lineOf(item, sc.sel); l < sc.top || l >= sc.top+shown {
			win := item[sc.top:min(sc.top+shown, n)]
			for k := range win {
				if d < 0 {
					k = len(win) - 1 - k // PgUp: the last item shown
				}
				if win[k] >= 0 {
					sc.sel = win[k]
					break
				}
			}
		}
		return
	case "home":
		sc.sel, sc.top = 0, 0
		return
	case "end":
		sc.sel, sc.top = items-1, n
		return
	}
	sc.sel = max(min(sc.sel+d, items-1), 0)
	if sc.sel == items-1 {
		sc.top = n // the end of the list: the headings after the last item too
	}
	sc.top = follow(sc.top, lineOf(item, sc.sel), shown)
}

// profilesView draws the Tracking and profiles pane in w cells: its head,
// the window of the list (which holds the selected name or profile), and,
// when the list does not fit, "rows N–M of T" (the names and profiles the
// window shows, of all).
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
	body, item := m.profBody()
	items := len(m.profItems())
	shown, n := m.profBodyShown(), len(body)
	// the window keeps the selection (the list may have changed, or the
	// screen size)
	sc := scroll{top: m.profScr.top, sel: lineOf(item, m.profScr.sel)}
	if sc.sel < 0 {
		sc.top = 0
	}
	sc.clamp(n, shown)
	m.profScr.top = sc.top
	from, to := sc.window(n, shown)
	for l := from; l < to; l++ {
		mark := "  " // before an item
		switch {
		case item[l] < 0:
			mark = ""
		case item[l] == m.profScr.sel:
			mark = "> "
		}
		add(mark + body[l])
	}
	if n > shown {
		first, last := -1, -1
		for _, it := range item[from:to] {
			if it >= 0 {
				if first < 0 {
					first = it
				}
				last = it
			}
		}
		pos := fmt.Sprintf("  rows %d–%d of %d", first+1, last+1, items)
		if first < 0 {
			pos = fmt.Sprintf("  rows of %d", items)
		}
		add(pos + " (tracked names, then saved profiles; Up/Down, PgUp/PgDn, Home/End)")
	}
	if m.prompt != nil {
		add("")
		add(m.prompt.label + ": " + m.prompt.text + "█  (Enter ok, Esc cancel)")
	}
	return lines
}
