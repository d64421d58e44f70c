package tool

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNextCallMismatches: a sentence about next_action, next_page or
// next_cursor anywhere in a result's text (warnings, the error message
// and details, strings under coverage and data) needs the field it
// names; a sentence saying there is none does not, and the arguments of
// a call are not text.
func TestNextCallMismatches(t *testing.T) {
	for _, c := range []struct {
		body string
		want string // substring of the one mismatch; "" for none
	}{
		{`{"warnings":["the page ended early; follow next_action for the rest"],"next_action":null,"data":{}}`, "next_action is null"},
		{`{"warnings":["the page ended early; follow next_action for the rest"],"next_action":{"tool":"x","arguments":{}},"data":{}}`, ""},
		{`{"warnings":["more rows: follow next_page"],"next_action":{"tool":"x","arguments":{}},"data":{"next_page":null}}`, "data.next_page is null"},
		{`{"warnings":["more rows: follow next_page"],"next_action":null,"data":{"next_page":{"tool":"x","arguments":{}}}}`, ""},
		{`{"warnings":["rows were cut; there is no next_page for them"],"next_action":null,"data":{}}`, ""},
		{`{"error":{"code":"BUSY","message":"retry with next_action","retryable":true}}`, "next_action is null"},
		{`{"error":{"code":"BUSY","message":"retry with next_action","retryable":true,"next_action":{"tool":"x","arguments":{}}}}`, ""},
		{`{"warnings":[],"next_action":null,"data":{"notes":["follow next_action for the pages after this one"]}}`, "/data/notes/0 says"},
		{`{"warnings":[],"next_action":null,"coverage":{"why":"the rest is one next_page away"},"data":{}}`, "/coverage/why says"},
		{`{"warnings":[],"next_action":null,"data":{"rows":[],"text":"pass next_cursor as cursor"},"next_cursor":null}`, "data.next_cursor is null"},
		{`{"warnings":[],"next_action":{"tool":"x","arguments":{"note":"follow next_page"}},"data":{"next_cursor":"t","text":"pass next_cursor as cursor"}}`, ""},
		{`{"error":{"code":"BUSY","message":"x","retryable":true,"details":{"hint":"follow next_page"}}}`, "an error has no next_page"},
		{`not json`, ""},
	} {
		got := NextCallMismatches(json.RawMessage(c.body))
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: unexpected %v", c.body, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: got %v, want one saying %q", c.body, got, c.want)
		}
	}
}
