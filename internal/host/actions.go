package host

import (
	"encoding/json"
	"os"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/jobs"
)

// Cross-toolset next steps (proc -> bin). A modules or open_files row
// whose inspect_path (the collector's check that it opens the object the
// process maps or holds) is a regular file now carries the row field
// actions:
// ["inspect_binary"]; every other row carries actions: [] (deleted,
// replaced, unknown, or not a regular file: inspecting the path would not
// inspect what the process holds). The page names the call once, as a
// template in data.actions, instead of a copy per row, so the action costs
// each row about 30 bytes of the result budget. get_process_info names the
// concrete call for its executable in data.actions.

// ActionInspectBinary is the action name a row's actions field lists when
// inspect_binary can be called with the row's path.
const ActionInspectBinary = "inspect_binary"

// rowActionKinds are the capture kinds whose rows carry an actions field.
var rowActionKinds = map[string]bool{capture.KindModules: true, capture.KindOpenFiles: true}

// rowActionTemplates is data.actions of a modules or open_files page:
// the argument is the row's inspect_path, a path that opens the object the
// process maps or holds (/proc/PID/root/... for a process in another
// mount namespace).
var rowActionTemplates = []map[string]any{{
	"tool":               ActionInspectBinary,
	"arguments_from_row": map[string]any{"path": "inspect_path"},
	"applies_to":         "rows whose actions lists inspect_binary: inspect_path opens the object the process maps or holds (same device, inode, build id); else action_withheld says why",
}}

// regularFile reports whether path names a regular file now (os.Stat,
// following symbolic links).
func regularFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// addRowActions appends the actions field to every row of a modules or
// open_files capture c: ["inspect_binary"] when the row's path is known,
// not deleted (deleted false), not replaced (modules: replaced is not
// true), of kind "file" (open_files), and a regular file at the path now;
// else []. Each distinct path is examined once.
func addRowActions(c *capture.Capture) {
	if !rowActionKinds[c.Kind] {
		return
	}
	seen := map[string]bool{}
	for i := range c.Rows {
		r := &c.Rows[i]
		acts := []string{}
		if rowInspectable(r, seen) {
			acts = []string{ActionInspectBinary}
		}
		r.Fields = append(r.Fields, capture.Field{Key: "actions", Value: acts})
	}
}

func rowInspectable(r *capture.Row, seen map[string]bool) bool {
	if ip, ok := r.Get("inspect_path"); ok {
		// modules: the collector checked which path opens the mapped
		// object (nil: none does, action_withheld says why)
		path, _ := ip.(string)
		if path == "" {
			return false
		}
		ok, done := seen[path]
		if !done {
			ok = regularFile(path)
			seen[path] = ok
		}
		return ok
	}
	p, _ := r.Get("path")
	path, _ := p.(string)
	if path == "" {
		return false
	}
	if d, _ := r.Get("deleted"); d != false {
		return false
	}
	if rep, _ := r.Get("replaced"); rep == true {
		return false
	}
	if k, ok := r.Get("kind"); ok && k != "file" {
		return false
	}
	ok, done := seen[path]
	if !done {
		ok = regularFile(path)
		seen[path] = ok
	}
	return ok
}

// pageActions returns data.actions of a read_capture page of view (kind
// of the source capture), or nil when the page has none: the row-action
// templates when the rows carry both path and actions, and for
// process_info the concrete inspect_binary call of the executable when
// exe is known, not deleted, and a regular file now.
func pageActions(kind string, view *jobs.Capture, projection []string) any {
	if rowActionKinds[kind] {
		if len(projection) > 0 && (!containsStr(projection, "inspect_path") || !containsStr(projection, "actions")) {
			return nil
		}
		return rowActionTemplates
	}
	if kind != capture.KindProcessInfo || len(view.Enc) != 1 {
		return nil
	}
	var row struct {
		Exe *struct {
			Value   *string `json:"value"`
			Deleted *bool   `json:"deleted"`
		} `json:"exe"`
	}
	acts := []contract.Action{}
	if json.Unmarshal(view.Enc[0], &row) == nil && row.Exe != nil && row.Exe.Value != nil &&
		row.Exe.Deleted != nil && !*row.Exe.Deleted && regularFile(*row.Exe.Value) {
		acts = append(acts, contract.Action{Tool: ActionInspectBinary, Arguments: map[string]any{"path": *row.Exe.Value}})
	}
	return acts
}
