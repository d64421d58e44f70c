package host

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// spliceReference is what splice replaced: strings.Replacer over the same
// pairs, $CAPTURE_FIELDS last.
func spliceReference(s string) string {
	pairs := append(append([]string(nil), schemaEnums()...), "$CAPTURE_FIELDS", captureFieldsEnum())
	return strings.NewReplacer(pairs...).Replace(s)
}

// FuzzSchemaSplice: schema's splice gives strings.Replacer's output for
// any template: every placeholder, ones sharing a prefix ($PROC_FIELDS,
// $PROCESS_SORT_KEYS, $PROCESS_METRIC_IDS), a '$' that starts none, one
// at the end, and placeholders back to back.
func FuzzSchemaSplice(f *testing.F) {
	for _, s := range []string{
		`{"enum":$PROC_FIELDS}`, `$PROCESS_SORT_KEYS$PROCESS_METRIC_IDS`, `$METRIC_IDS,$CAPTURE_KINDS,$INFO_FIELDS,$MAX_WAIT_MS`,
		`$CAPTURE_FIELDS`, `$`, `a$`, `$$PROC_FIELDS$`, `$PROC`, `$PROCESS_`, `price $5`, "ü$MAX_WAIT_MSü",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := splice(s, schemaEnums(), captureFieldsEnum), spliceReference(s); got != want {
			t.Fatalf("splice(%q) = %q, want %q", s, got, want)
		}
	})
}

var placeholder = regexp.MustCompile(`\$[A-Z][A-Z_]*`)

// TestSchemaSpliced: every proc tool's published input schema, in both
// delivery modes, has each placeholder spliced (no $NAME is left in any;
// a pattern's $ anchor stays).
func TestSchemaSpliced(t *testing.T) {
	for _, raw := range []bool{false, true} {
		for _, d := range ToolsFor(Delivery{Raw: raw}) {
			if m := placeholder.FindString(string(d.Input)); m != "" {
				t.Errorf("%s (raw %v): schema keeps %s", d.Name, raw, m)
			}
		}
	}
}

// TestEnumJSON: enumJSON writes what encoding/json.Marshal writes for
// the catalogs' lists and for lists with characters it escapes.
func TestEnumJSON(t *testing.T) {
	lists := [][]string{nil, {}, {"pid"}, ProcessFields, AllCaptureFields(), {"a\"b", "<&>", "tab\t", "\u2028", "é", ""}}
	for _, l := range lists {
		want, _ := json.Marshal(l)
		if got := enumJSON(l); got != string(want) {
			t.Fatalf("enumJSON(%q) = %s, want %s", l, got, want)
		}
	}
}
