package host

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// FuzzParseThreshold: any JSON gives an exact rational or a typed
// INVALID_ARGUMENT, never a panic; a decimal string round-trips exactly.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{`"150000000"`, `1.5`, `-3`, `"18446744073709551617"`, `1e400`, `"abc"`, `null`, `{}`, `"1/3"`, `1e999999999`, `"-1E-999999"`, `9007199254740993`} {
		f.Add([]byte(s))
	}
	m, _ := sample.LookupMetric("rss_bytes")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseThreshold(json.RawMessage(b), m)
		if err != nil {
			if contract.CodeOf(err) != contract.CodeInvalidArgument {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var s string
		if json.Unmarshal(b, &s) == nil && !strings.ContainsAny(s, "eE") {
			want, ok := new(big.Rat).SetString(s)
			if !ok || want.Cmp(r) != 0 {
				t.Fatalf("%q parsed as %v", s, r)
			}
		}
		// compare never panics on any value
		compare(m, 1<<63, r, ">=")
	})
}

// FuzzParseBound: timestamps parse to milliseconds or fail typed.
func FuzzParseBound(f *testing.F) {
	for _, s := range []string{"2026-11-29T10:00:00Z", "2026-11-29T10:00:00.0005+01:00", "1969-12-31T23:59:59.9999Z", "nope", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, exact, err := parseBound(s, "from", true)
		if err != nil {
			if contract.CodeOf(err) != contract.CodeInvalidArgument {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		ms2, exact2, _ := parseBound(s, "to", false)
		if exact != exact2 || (exact && ms != ms2) || ms < ms2 || ms-ms2 > 1 {
			t.Fatalf("%q: from %d(%v) to %d(%v)", s, ms, exact, ms2, exact2)
		}
	})
}
