package tool

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// nextCallSentence matches a sentence (up to ".", ";" or the end) that
// tells the caller to make a call named by a result field.
var nextCallSentence = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[^.;]*\bnext_(action|page|cursor)\b[^.;]*`)
})

// noCall matches the wording of a sentence that says there is no such
// call (which a null field matches).
var noCall = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(no|null|none|without|nothing)\b`)
})

// NextCallMismatches checks a delivered envelope (success or error) for
// sentences about a next call that its fields contradict: any text of the
// result (warnings, the error message, and every string under coverage
// and data: notes, messages, prose) that points at next_action while
// next_action is null, at next_page while data.next_page is null or
// absent, or at next_cursor while data.next_cursor is. A sentence that
// says there is none ("no next_action", "next_page is null") is not a
// promise. It returns one description per mismatch, naming where the
// text is (a JSON pointer); nil when the text and the fields agree or
// body is not an envelope.
func NextCallMismatches(body json.RawMessage) []string {
	var env struct {
		Warnings   []string        `json:"warnings"`
		NextAction json.RawMessage `json:"next_action"`
		Coverage   any             `json:"coverage"`
		Data       json.RawMessage `json:"data"`
		Error      *struct {
			Message    string          `json:"message"`
			NextAction json.RawMessage `json:"next_action"`
			Details    any             `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	var data any
	_ = json.Unmarshal(env.Data, &data)
	dm, _ := data.(map[string]any)
	null := func(v json.RawMessage) bool { s := strings.TrimSpace(string(v)); return s == "" || s == "null" }
	field := func(k string) json.RawMessage {
		if v, ok := dm[k]; ok && v != nil {
			b, _ := json.Marshal(v)
			return b
		}
		return nil
	}
	page, cursor := field("next_page"), field("next_cursor")
	var out []string
	check := func(where, text string, action json.RawMessage, inError bool) {
		for _, s := range nextCallSentence().FindAllStringSubmatch(text, -1) {
			if noCall().MatchString(s[0]) {
				continue
			}
			switch {
			case s[1] == "action" && null(action):
				out = append(out, where+" says "+strings.TrimSpace(s[0])+", but next_action is null")
			case s[1] == "page" && !inError && null(page):
				out = append(out, where+" says "+strings.TrimSpace(s[0])+", but data.next_page is null")
			case s[1] == "page" && inError:
				out = append(out, where+" says "+strings.TrimSpace(s[0])+", but an error has no next_page")
			case s[1] == "cursor" && !inError && null(cursor):
				out = append(out, where+" says "+strings.TrimSpace(s[0])+", but data.next_cursor is null")
			}
		}
	}
	for i, w := range env.Warnings {
		check("/warnings/"+strconv.Itoa(i), w, env.NextAction, false)
	}
	walkStrings("/coverage", env.Coverage, func(ptr, s string) { check(ptr, s, env.NextAction, false) })
	walkStrings("/data", data, func(ptr, s string) { check(ptr, s, env.NextAction, false) })
	if env.Error != nil {
		check("/error/message", env.Error.Message, env.Error.NextAction, true)
		walkStrings("/error/details", env.Error.Details, func(ptr, s string) { check(ptr, s, env.Error.NextAction, true) })
	}
	return out
}

// walkStrings calls f with the JSON pointer and value of every string in
// v (a decoded JSON value), in a stable order; the arguments of a call
// (next_action, next_page: tokens and values the caller passes back) are
// not text and are skipped.
func walkStrings(ptr string, v any, f func(ptr, s string)) {
	switch x := v.(type) {
	case string:
		f(ptr, x)
	case []any:
		for i, e := range x {
			walkStrings(ptr+"/"+strconv.Itoa(i), e, f)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			if k == "arguments" || k == "argv" || k == "next_page" || k == "next_action" || k == "next_cursor" {
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkStrings(ptr+"/"+k, x[k], f)
		}
	}
}
