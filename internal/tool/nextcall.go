package tool

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
)

// nextCallSentence matches a sentence (up to ".", ";" or the end) that
// tells the caller to make a call named by a result field.
var nextCallSentence = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[^.;]*\bnext_(action|page)\b[^.;]*`)
})

// noCall matches the wording of a sentence that says there is no such
// call (which a null field matches).
var noCall = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(no|null|none|without|nothing)\b`)
})

// NextCallMismatches checks a delivered envelope (success or error) for
// sentences about a next call that its fields contradict: a warning or
// error message that points at next_action while next_action is null, or
// at next_page while data.next_page is null or absent. A sentence that
// says there is none ("no next_action", "next_page is null") is not a
// promise. It returns one description per mismatch; nil when the text
// and the fields agree or body is not an envelope.
func NextCallMismatches(body json.RawMessage) []string {
	var env struct {
		Warnings   []string        `json:"warnings"`
		NextAction json.RawMessage `json:"next_action"`
		Data       struct {
			NextPage json.RawMessage `json:"next_page"`
		} `json:"data"`
		Error *struct {
			Message    string          `json:"message"`
			NextAction json.RawMessage `json:"next_action"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	null := func(v json.RawMessage) bool { s := strings.TrimSpace(string(v)); return s == "" || s == "null" }
	var out []string
	check := func(where, text string, action, page json.RawMessage) {
		for _, s := range nextCallSentence().FindAllStringSubmatch(text, -1) {
			if noCall().MatchString(s[0]) {
				continue
			}
			switch {
			case s[1] == "action" && null(action):
				out = append(out, where+" says "+strings.TrimSpace(s[0])+", but next_action is null")
			case s[1] == "page" && null(page):
				out = append(out, where+" says "+strings.TrimSpace(s[0])+", but data.next_page is null")
			}
		}
	}
	for _, w := range env.Warnings {
		check("a warning", w, env.NextAction, env.Data.NextPage)
	}
	if env.Error != nil {
		check("the error message", env.Error.Message, env.Error.NextAction, nil)
	}
	return out
}
