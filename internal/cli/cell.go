package cli

import (
	"regexp"
	"sync"

	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/termtext"
)

// cell makes a value safe for one table cell on a terminal: control
// characters (newline, tab, ESC and the rest of C0/C1, DEL), Unicode
// format and bidi controls (U+202E, U+2066 ...) and invalid UTF-8 are shown
// escaped (\n, \t, \x1b, \u202e ...) by termtext.Escape, so a process or
// file name can neither break the table, inject terminal escape sequences
// nor reorder the line. JSON output (--json) is never passed through cell.
func cell(s string) string { return termtext.Escape(s) }

// textCell is cell for the exact bytes of a name or path: a backslash is
// shown as \\ too, so the escaped form is unambiguous and unescapeCell
// returns the exact bytes (a literal `\xff` in a name and the byte 0xff
// print differently).
func textCell(s string) string { return termtext.EscapeExact(s) }

// unescapeCell inverts textCell (termtext.Unescape); ok is false for a
// string textCell cannot produce.
func unescapeCell(s string) (string, bool) { return termtext.Unescape(s) }

// exactText returns the exact bytes of the name or path field key of a
// JSON row: the base64 key_bytes field when present (the display string
// is lossy), else the key string itself; ok is false when the field is
// absent or null.
func exactText(r map[string]any, key string) (string, bool) {
	if b, ok := r[key+"_bytes"].(string); ok {
		if v, err := sample.DecodeBytes(b); err == nil {
			return v, true
		}
	}
	v, ok := r[key].(string)
	return v, ok
}

// textOf is the table cell of the name or path field key of a row: its
// exact bytes escaped by textCell, or "-" when unknown.
func textOf(r map[string]any, key string) string {
	v, ok := exactText(r, key)
	if !ok {
		return "-"
	}
	return textCell(v)
}

// deletedCell renders a row's deleted field: "yes", "no" or "?" (unknown).
func deletedCell(v any) string {
	switch v {
	case true:
		return "yes"
	case false:
		return "no"
	}
	return "?"
}

// commandOfTool is the command a person types for a proc tool that a
// tool's warning names (warnings are written for agents, in tool names).
var commandOfTool = map[string]string{
	"update_tracking": "inquest track add NAME",
	"get_tracking":    "inquest track list",
	"rank_processes":  "inquest top",
	"list_processes":  "inquest ps",
	"get_history":     "inquest history",
	"start_recording": "inquest record start",
	"stop_recording":  "inquest record stop",
	"wait_condition":  "inquest wait",
	"update_profile":  "inquest profile",
	"list_profiles":   "inquest profile",
	"open_log":        "inquest log",
	"list_metrics":    "inquest call list_metrics",
}

// toolWord matches a lower-case snake_case word, the shape of a tool name.
var toolWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`) })

// noteCell is cell for a tool's warning printed as a note to a person:
// the proc tools it names become the commands that do the same
// (update_tracking is "inquest track add NAME"); other words are kept.
func noteCell(w string) string {
	return cell(toolWord().ReplaceAllStringFunc(w, func(s string) string {
		if c, ok := commandOfTool[s]; ok {
			return c
		}
		return s
	}))
}
