package tool

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNextCallMismatches: a sentence about next_action or next_page
// needs the field it names; a sentence saying there is none does not.
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
