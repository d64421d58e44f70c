package tool

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestOutputSchemaAcceptsEnvelopes compiles the envelope schema under JSON
// Schema 2020-12 and draft-07 and checks it against envelopes produced by
// contract.Marshal: every success and error shape is accepted, and
// envelopes that break the contract are refused.
func TestOutputSchemaAcceptsEnvelopes(t *testing.T) {
	data := json.RawMessage(`{"type":"object","required":["rows"],"properties":{"rows":{"type":"array"}}}`)
	raw, err := OutputSchema(data)
	if err != nil {
		t.Fatal(err)
	}
	// The envelope is repeated in every tool of tools/list: it stays
	// compact (it was 1770 bytes with the code list and the action
	// written twice).
	if bare, _ := OutputSchema(nil); len(bare) > 1150 {
		t.Errorf("envelope schema is %d bytes, want at most 1150", len(bare))
	}
	for _, draft := range []*jsonschema.Draft{jsonschema.Draft2020, jsonschema.Draft7} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(draft)
		c.AssertFormat()
		if err := c.AddResource("out.json", doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile("out.json")
		if err != nil {
			t.Fatalf("draft %v: %v", draft, err)
		}
		ok := func(name string, res *contract.Result, e error) {
			t.Helper()
			body, _ := contract.Marshal(res, e)
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
			if err := s.Validate(v); err != nil {
				t.Errorf("%s: %s refused: %v", name, body, err)
			}
		}
		res := contract.NewResult("/proc", time.Now(), map[string]any{"rows": []any{1}})
		ok("success", res, nil)
		res2 := contract.NewResult("", time.Time{}, map[string]any{"rows": []any{}})
		res2.Warn("w")
		res2.NextAction = &contract.Action{Tool: "list_processes", Arguments: map[string]any{"cursor": "c"}}
		ok("partial with next_action", res2, nil)
		for _, c := range contract.AllCodes {
			e := contract.Errorf(c, "m")
			e.Field = "/x"
			ok(string(c), nil, e)
		}
		ok("plain error", nil, errors.New("boom"))
		bad := func(name, body string) {
			t.Helper()
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(body))
			if s.Validate(v) == nil {
				t.Errorf("%s accepted: %s", name, body)
			}
		}
		bad("data breaks the tool's data schema", `{"api_version":"`+contract.APIVersion+`","status":"complete","warnings":[],"coverage":{},"data":{},"next_action":null}`)
		bad("missing next_action", `{"api_version":"`+contract.APIVersion+`","status":"complete","warnings":[],"coverage":{},"data":{"rows":[]}}`)
		bad("unknown status", `{"api_version":"`+contract.APIVersion+`","status":"done","warnings":[],"coverage":{},"data":{"rows":[]},"next_action":null}`)
		bad("next_action without arguments", `{"api_version":"`+contract.APIVersion+`","status":"complete","warnings":[],"coverage":{},"data":{"rows":[]},"next_action":{"tool":"x"}}`)
		bad("lower-case code", `{"error":{"code":"oops","message":"m","retryable":false}}`)
		bad("error without retryable", `{"error":{"code":"BUSY","message":"m"}}`)
		bad("neither", `{}`)
	}
	re := regexp.MustCompile(codePattern)
	for _, c := range contract.AllCodes {
		if !re.MatchString(string(c)) {
			t.Errorf("code %s does not match the published pattern", c)
		}
	}
	if _, err := OutputSchema(json.RawMessage(`{"type":`)); err == nil {
		t.Error("a data schema that is not JSON was accepted")
	}
}
