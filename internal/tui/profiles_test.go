package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/host"
)

// The Tracking and profiles pane changes tracking and profiles through
// the same update_tracking / update_profile operations agents use, with
// the revision it shows, and its actions that need a local decision
// (a load replacing unsaved tracking, a delete) wait in the confirmation
// overlay. What it did is checked against list_profiles as an agent reads
// it.
func TestProfilesPane(t *testing.T) {
	h, b := fixture(t, 3)
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	agent := func() Profiles {
		t.Helper()
		res, err := h.Dispatch(context.Background(), bs, "list_profiles", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var p Profiles
		decode(res, &p)
		return p
	}
	typeText := func(d *driver, s string) {
		for _, r := range s {
			d.keys(string(r))
		}
		d.keys("enter")
	}
	d := newDriver(t, b)
	d.keys("o")
	d.refresh()
	if v := d.m.View(); !strings.Contains(v, "Tracked names") || !strings.Contains(v, "  gone") {
		t.Fatalf("pane:\n%s", v)
	}
	d.keys("+")
	typeText(d, "worker")
	d.refresh()
	d.keys("A")
	typeText(d, "dev box")
	d.refresh()
	p := agent()
	if len(p.Saved) != 1 || p.Saved[0].Name != "dev box" || strings.Join(p.Saved[0].Tracking, ",") != "gone,worker" ||
		p.Active == nil || *p.Active != p.Saved[0].ID || p.Unsaved {
		t.Fatalf("after track + save as: %+v", p)
	}
	// untrack worker (the second name): unsaved changes
	d.keys("down", "d")
	d.refresh()
	if p = agent(); strings.Join(p.Working, ",") != "gone" || !p.Unsaved {
		t.Fatalf("after untrack: %+v (notice %q)", p, d.m.notice)
	}
	v := d.m.View()
	checkShape(t, v, 120, 40)
	golden(t, "profiles", stable(v))
	// load "dev box": it replaces unsaved tracking, so it waits for a decision
	d.keys("down", "enter")
	if !strings.Contains(d.m.notice, "waiting for your decision") {
		t.Fatalf("load: %q", d.m.notice)
	}
	d.refresh()
	if v = d.m.View(); !strings.Contains(v, "Confirm update_profile") || !strings.Contains(v, "replaces_unsaved_tracking: true") {
		t.Fatalf("no overlay for the load:\n%s", v)
	}
	golden(t, "profiles_confirm", stable(v))
	d.keys("y")
	d.refresh()
	if p = agent(); strings.Join(p.Working, ",") != "gone,worker" || p.Unsaved {
		t.Fatalf("after confirmed load: %+v (notice %q)", p, d.m.notice)
	}
	// a stale revision is refused as it would be for an agent
	stale := d.m.frame.Profiles.Revision
	if _, err := h.Dispatch(context.Background(), bs, "update_tracking", json.RawMessage(`{"operation_id":"agent-1","expected_revision":"`+stale+`","action":"add","process_name":"bash"}`)); err != nil {
		t.Fatal(err)
	}
	d.keys("s")
	if !strings.Contains(d.m.notice, "STATE_CONFLICT") {
		t.Fatalf("save with a stale revision: %q", d.m.notice)
	}
	d.refresh()
	d.keys("s")
	d.refresh()
	if p = agent(); p.Saved[0].Revision != "2" || strings.Join(p.Saved[0].Tracking, ",") != "bash,gone,worker" {
		t.Fatalf("after save: %+v (notice %q)", p, d.m.notice)
	}
	// delete asks; n keeps the profile, y deletes it
	for d.m.profScr.sel < len(d.m.profItems())-1 {
		d.keys("down")
	}
	d.keys("d")
	d.refresh()
	d.keys("n")
	d.refresh()
	if p = agent(); len(p.Saved) != 1 {
		t.Fatalf("denied delete: %+v", p)
	}
	d.keys("d")
	d.refresh()
	d.keys("y")
	d.refresh()
	if p = agent(); len(p.Saved) != 0 || p.Active != nil {
		t.Fatalf("confirmed delete: %+v", p)
	}
	if v := d.m.View(); !strings.Contains(v, "none: A saves the tracked names") {
		t.Fatalf("pane after delete:\n%s", v)
	}
}

// volatile are the parts of a view that differ run by run: the host
// instance prefix of revisions, generated profile ids and the TUI's
// operation ids (they hold the time) and the expiry of a confirmation.
var volatile = regexp.MustCompile(`revision [0-9a-f]{8}-|prof_[0-9a-f]{16}|tui-update_[a-z]+-\d+|expires \d{4}-\d\d-\d\dT[0-9:.]+Z *`)

// stable replaces the volatile parts of v with x's of the same width.
// An expiry is RFC 3339 with trailing zeros of the fraction dropped, so
// its width varies: it becomes a fixed "expires TIME" padded with the
// spaces that followed it, keeping the line's width.
func stable(v string) string {
	return volatile.ReplaceAllStringFunc(v, func(s string) string {
		if strings.HasPrefix(s, "expires ") {
			return fmt.Sprintf("%-*s", len(s), "expires TIME")
		}
		keep := ""
		for _, p := range []string{"revision ", "expires "} {
			if strings.HasPrefix(s, p) {
				keep = p
			}
		}
		return keep + strings.Repeat("x", len(s)-len(keep))
	})
}
