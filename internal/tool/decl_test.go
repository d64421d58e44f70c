package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

type demoFilter struct {
	Name *string `json:"name,omitempty"`
}

type demoArgs struct {
	Limit  int         `json:"limit,omitempty"`
	Cursor string      `json:"cursor,omitempty"`
	Filter *demoFilter `json:"filter,omitempty"`
}

const demoSchema = `{"type":"object","additionalProperties":false,"properties":{
"limit":{"type":"integer","minimum":1,"maximum":10},
"cursor":{"type":"string","minLength":1},
"filter":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"}}}}}`

func TestDefineDecodesOnceAndChecksAgreement(t *testing.T) {
	var got demoArgs
	tl := Define(Tool{Name: "demo", Toolset: Proc, Input: json.RawMessage(demoSchema), Paging: CursorPaging},
		func(ctx context.Context, a demoArgs) (*contract.Result, error) {
			got = a
			return contract.NewResult("test", time.Time{}, map[string]any{}), nil
		})
	r := NewRegistry()
	r.MustAdd(tl)
	if _, err := r.Call(context.Background(), "demo", json.RawMessage(`{"limit":3.0,"filter":{"name":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	if got.Limit != 3 || got.Filter == nil || got.Filter.Name == nil || *got.Filter.Name != "x" {
		t.Fatalf("decoded %+v", got)
	}
	if err := CheckArgs(tl); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"extra property", strings.Replace(demoSchema, `"limit":`, `"sort":{"type":"string"},"limit":`, 1), "/sort has no struct field"},
		{"missing property", strings.Replace(demoSchema, `"cursor":{"type":"string","minLength":1},`, "", 1), "/cursor is a struct field without"},
		{"nested", strings.Replace(demoSchema, `"name":{"type":"string"}`, `"pid":{"type":"integer"}`, 1), "/filter/pid has no struct field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tl
			bad.Input = json.RawMessage(tc.schema)
			err := CheckArgs(bad)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckArgs = %v, want %q", err, tc.want)
			}
		})
	}
	if err := CheckArgs(Tool{Name: "untyped", Input: json.RawMessage(demoSchema)}); err == nil {
		t.Fatal("a tool without Define passed CheckArgs")
	}
}

func TestDecodeTypeMismatchIsInvalidArgument(t *testing.T) {
	_, err := Decode[demoArgs](json.RawMessage(`{"limit":"x"}`))
	ce, ok := err.(*contract.Error)
	if !ok || ce.Code != contract.CodeInvalidArgument || ce.Field != "/limit" {
		t.Fatalf("err = %#v", err)
	}
}

func TestFitRowsAndNextCall(t *testing.T) {
	rows := []json.RawMessage{json.RawMessage(`"aaaa"`), json.RawMessage(`"bbbb"`), json.RawMessage(`"cccc"`)}
	for _, tc := range []struct {
		limit, budget, n int
		byBytes          bool
	}{
		{10, 1000, 3, false},
		{2, 1000, 2, false},
		{10, 16, 2, true},
		{10, 1, 1, true},
		{10, 0, 1, true},
	} {
		n, by := FitRows(rows, tc.limit, tc.budget)
		if n != tc.n || by != tc.byBytes {
			t.Errorf("FitRows(limit %d, budget %d) = %d,%v want %d,%v", tc.limit, tc.budget, n, by, tc.n, tc.byBytes)
		}
	}
	if a := CursorPaging.NextCall("list_processes", json.RawMessage(`{"scope":"all"}`), ""); a != nil {
		t.Fatal("NextCall without a token named a call")
	}
	a := ContinuationPaging.NextCall("summarize_profile", json.RawMessage(`{"page_size":5}`), "tok")
	if a.Tool != "summarize_profile" || a.Arguments["continuation"] != "tok" || a.Arguments["page_size"] != float64(5) {
		t.Fatalf("NextCall = %+v", a)
	}
	if b := ResultBudget(WithResultBudget(context.Background(), 1<<30)); b != HardResultBytes {
		t.Fatalf("budget above the hard limit = %d", b)
	}
	if b := ResultBudget(context.Background()); b != DefaultResultBytes {
		t.Fatalf("default budget = %d", b)
	}
}

// everyByte is each byte value 0-255 once, then the ASCII ones again
// between letters.
func everyByte() string {
	b := make([]byte, 0, 512)
	for c := 0; c < 256; c++ {
		b = append(b, byte(c))
	}
	for c := 0; c < 128; c++ {
		b = append(b, 'a', byte(c))
	}
	return string(b)
}

// DeliveredBytes is exact: structuredContent plus the text block as
// encoding/json writes it (the MCP SDK's encoder).
func TestDeliveredBytesMatchesEncoding(t *testing.T) {
	for _, body := range []string{
		`{}`,
		`{"name":"a \"quoted\" <tag> & more","path":"C:\\dir\\file"}`,
		"{\"ctl\":\"\x01\x1f\t\n\r\",\"ls\":\"\u2028\u2029\",\"bad\":\"\xff\xfe\",\"uni\":\"héllo ☃\"}",
		everyByte(),
	} {
		text, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := DeliveredBytes([]byte(body)), len(body)+len(text); got != want {
			t.Errorf("DeliveredBytes(%q) = %d, want %d", body, got, want)
		}
		if got, want := RowCost([]byte(body)), (len(body)+len(text)-2+1)/2+1; got != want {
			t.Errorf("RowCost(%q) = %d, want %d", body, got, want)
		}
	}
}
