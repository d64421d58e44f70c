package ipc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// strictResultOf is resultOf decoding the whole result with
// encoding/json: the reference of the data cut.
func strictResultOf(raw json.RawMessage) (*contract.Result, error) {
	var wire wireResult
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, contract.Errorf(contract.CodeInternalError, "the host sent an undecodable result")
	}
	return wire.result()
}

// checkValidated fails when the frame reading of a validated payload p
// differs from the strict one: the response validatedResponse reads
// must be Decode's, and resultOf's outcome of its result must be
// strictResultOf's (same result fields, data and coverage bytes, error).
// It reports whether validatedResponse read p and whether splitData cut
// its result.
func checkValidated(t *testing.T, p []byte) (read, cut bool) {
	t.Helper()
	if checkPayload(p) != nil {
		return false, false
	}
	r, ok := validatedResponse(p)
	m, err := Decode(p)
	if ok {
		want, isResp := m.(*Response)
		if err != nil || !isResp {
			t.Fatalf("validatedResponse read %s, which Decode refuses (%v, %T)", p, err, m)
		}
		if r.Kind != want.Kind || r.RequestID != want.RequestID || !bytes.Equal(r.Result, want.Result) {
			t.Fatalf("validatedResponse of %s is %+v, Decode's %+v", p, r, want)
		}
	}
	raw := p
	if want, isResp := m.(*Response); err == nil && isResp {
		raw = want.Result
	}
	if raw[0] != '{' {
		return ok, false
	}
	_, _, cut = splitData(raw)
	got, gotErr := resultOf(raw)
	want, wantErr := strictResultOf(raw)
	if !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("resultOf(%s) error %v, the strict decoding's %v", raw, gotErr, wantErr)
	}
	if gotErr == nil {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) || !reflect.DeepEqual(got.Data, want.Data) || !reflect.DeepEqual(got.Coverage, want.Coverage) {
			t.Fatalf("resultOf(%s) is\n%s\nthe strict decoding's\n%s", raw, g, w)
		}
	}
	return ok, cut
}

// validatedCases are result objects and frames around them: the shapes
// the host writes and the ones the fast reading must leave to the strict
// decoder.
var validatedResults = []string{
	`{"api_version":"1.0","status":"complete","warnings":[],"coverage":{"total":3},"data":{"rows":[{"pid":1,"name":"a}\"]{["}],"next_cursor":null},"next_action":null}`,
	`{"data":{"x":1}}`,
	`{"data":[1,2,{"a":"]"}],"status":"partial","warnings":["w"]}`,
	`{"status":"complete","data":{"k":"\"}"}}`,
	`{"status":"complete","data":{"k":"a\\","l":"]"},"warnings":["\\"]}`,
	`{ "status" : "complete" , "data" : { "a" : [ ] } , "coverage" : null }`,
	`{"data":null,"status":"complete"}`,
	`{"data":"text"}`,
	`{"data":5}`,
	`{"status":"complete"}`,
	`{}`,
	`{"Data":{"a":1},"status":"complete"}`,
	`{"DATA":{"a":1}}`,
	`{"d\u0061ta":{"a":1}}`,
	`{"data":{"a":1},"data":{"b":2}}`,
	`{"data":{"a":1},"DaTa":{"b":2}}`,
	`{"error":{"code":"INVALID_ARGUMENT","message":"bad","field":"/limit"}}`,
	`{"error":null,"data":{"a":1}}`,
	`{"error":{"code":"BUSY","message":"x"},"data":{"a":1}}`,
	`{"status":5,"data":{"a":1}}`,
	`{"captured_at":"not a time","data":{"a":1}}`,
	`{"next_action":{"tool":"list_processes","arguments":{"cursor":"c"}},"data":{"rows":[]},"warnings":null}`,
	`{"coverage":{"a":[1,{"b":"}"}]},"data":{"z":true},"api_version":"1.0"}`,
}

// TestValidatedMatchesStrict: for the frames encode writes around every
// case and hand-written frames in other shapes (whitespace, fields in
// another order, escaped or long request ids, extra fields, a result that
// is no object, kind twice), the fast reading equals Decode and the
// strict result decoding; the host's own shape is read fast and a
// success result's object data is cut.
func TestValidatedMatchesStrict(t *testing.T) {
	for _, res := range validatedResults {
		if !json.Valid([]byte(res)) {
			t.Fatalf("case %s is not JSON", res)
		}
		for _, id := range []string{"1", "42", strings.Repeat("7", MaxIDBytes)} {
			p := encode(Response{Kind: KindResponse, RequestID: id, Result: json.RawMessage(res)})
			if read, _ := checkValidated(t, p); !read {
				t.Fatalf("the host's frame %s was not read fast", p)
			}
		}
	}
	if _, cut := checkValidated(t, []byte(validatedResults[0])); !cut {
		t.Fatalf("the data of a list_processes result was not cut out")
	}
	frames := []string{
		`{"kind":"response","request_id":"1","result":{"data":{}}}`,
		`{"kind":"response","request_id":"1","result":{"data":{}} }`,
		`{"kind":"response","request_id":"1","result":{"data":{}},"extra":1}`,
		`{"kind":"response","request_id":"1","result":{"data":{}},"kind":"response"}`,
		`{"kind":"response","request_id":"\u0031","result":{"data":{}}}`,
		`{"kind":"response","request_id":"` + strings.Repeat("7", MaxIDBytes+1) + `","result":{}}`,
		`{"kind":"response","request_id":"","result":{}}`,
		`{"kind":"response","request_id":"1","result":[]}`,
		`{"kind":"response","request_id":"1","result":null}`,
		`{"kind":"response","result":{},"request_id":"1"}`,
		`{"request_id":"1","kind":"response","result":{}}`,
		`{"kind":"request","request_id":"1","method":"m","arguments":{}}`,
		`{"kind":"response","request_id":"1","result":{"a":"}"},"b":{}}`,
	}
	for _, f := range frames {
		checkValidated(t, []byte(f))
	}
}

// FuzzValidatedFrames: on any payload ReadFrame accepts, the fast reading
// of a response and of its result equals the strict decoding.
func FuzzValidatedFrames(f *testing.F) {
	for _, res := range validatedResults {
		f.Add(encode(Response{Kind: KindResponse, RequestID: "1", Result: json.RawMessage(res)}))
		f.Add([]byte(res))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		checkValidated(t, p)
	})
}
