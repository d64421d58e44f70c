package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// viaTree is what printBody replaces: decode into an any, printJSON.
func viaTree(body []byte) []byte {
	var v any
	_ = json.Unmarshal(body, &v)
	var b bytes.Buffer
	_ = printJSON(&b, v)
	return b.Bytes()
}

func viaPrintBody(body []byte) []byte {
	var b bytes.Buffer
	_ = printBody(&b, body)
	return b.Bytes()
}

// TestPrintBodyMatchesTree: printBody prints every text byte for byte as
// decoding into an any and printJSON does: sorted and repeated member
// names, escapes (HTML, U+2028, invalid UTF-8, \u escapes of plain
// characters), numbers a float64 rewrites (exponents, large integers,
// -0, trailing zeros), empty containers, whitespace, nesting beyond the
// rewrite's depth, and text that is not JSON (trailing commas, missing
// colons, bad escapes and numbers, truncation).
func TestPrintBodyMatchesTree(t *testing.T) {
	cases := []string{
		`{"b":1,"a":{"d":[1,2,{"z":null,"y":true}],"c":false}}`,
		`{"a":1,"a":2,"b":{"x":1},"b":{"y":2}}`,
		`{"\u0062":1,"a":"\u0041<>&\u2028","é":"caf\u00e9","bad":"` + "\xff\xfe" + `"}`,
		`{"k<":"</script>","k\\":"a\\b\"c\n\t\u0001"}`,
		`[1.0,1e3,1E-7,-0,0.000001,1e21,123456789012345678,9007199254740993,1.5e300,-2.25,100000000000000000000]`,
		`{"empty":{},"list":[],"nested":[[],[{}],{"a":[]}]}`,
		" \n\t{ \"a\" : [ 1 , 2 ] , \"b\" : \"x\" } \n",
		`"just a string"`, `42`, `null`, `true`, `[]`, `{}`,
		strings.Repeat(`{"a":`, 250) + `1` + strings.Repeat(`}`, 250),
		strings.Repeat(`[`, 300) + strings.Repeat(`]`, 300),
		`{"a":1e400}`,
		`not json`, ``, `{"a":1}{"b":2}`,
		`[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`, `tru`, `nul`, `[true`, `{"a":`,
		`01`, `1.`, `-`, `.5`, `+1`, `1e`, `1e+`, `-01.5`, `[-0.0e-0]`, `1.5E+10`,
		`"unterminated`, "\"ctl\x01\"", `"\x"`, `"\u12G4"`, `"\u12"`, `"\`, `"\uD800\uDC00"`, `"a\/b"`,
	}
	for _, c := range cases {
		if got, want := viaPrintBody([]byte(c)), viaTree([]byte(c)); !bytes.Equal(got, want) {
			t.Errorf("%.60q:\n got %s\nwant %s", c, got, want)
		}
	}
}

// TestPrintBodyEnvelope: real envelopes (inspect_binary on this test
// binary, with every facet, and a failure) print identically both ways.
func TestPrintBodyEnvelope(t *testing.T) {
	rt := &Runtime{Registry: tool.NewRegistry()}
	defer rt.Close()
	if err := buildBin(context.Background(), rt, runtimeOptions{NoHost: true}); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	for _, args := range []map[string]any{
		{"path": self, "facets": []string{"sections", "segments", "imports", "exports", "libraries", "go_deps", "dwarf_producers"}, "limit": 1000},
		{"path": filepath.Join(t.TempDir(), "missing")},
	} {
		raw, _ := json.Marshal(args)
		res, err := rt.Registry.Call(context.Background(), "inspect_binary", raw)
		body, _ := contract.Marshal(res, err)
		if len(body) < 100 {
			t.Fatalf("envelope too short: %s", body)
		}
		if got, want := viaPrintBody(body), viaTree(body); !bytes.Equal(got, want) {
			t.Errorf("%v: got %s\nwant %s", args, got, want)
		}
	}
}

// FuzzPrintBody: on any bytes, printBody prints what the decoded tree
// prints.
func FuzzPrintBody(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2.5,"x"]}`, `{"a":"\u00e9<","a":1e-9}`, `[{},[],null,true,false,-0.0]`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, want := viaPrintBody(body), viaTree(body); !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", body, got, want)
		}
	})
}
