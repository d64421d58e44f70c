package har

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// rewrite applies edit to every entry of the HAR file at p.
func rewrite(t *testing.T, p string, edit func(i int, e map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for i, e := range doc["log"].(map[string]any)["entries"].([]any) {
		edit(i, e.(map[string]any))
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOptionalProducerFieldsNeverGroup: the same three responses, once
// with Chrome's optional _resourceType and once without it (as Firefox
// writes them), form one group each side and compare equal; the group
// counts the resource types it saw.
func TestOptionalProducerFieldsNeverGroup(t *testing.T) {
	dir := t.TempDir()
	three := []fx{
		{"GET", "https://example.test/a", "fetch", "text/plain", "same", 200, false, false},
		{"GET", "https://example.test/a", "fetch", "text/plain", "same", 200, false, false},
		{"GET", "https://example.test/a", "fetch", "text/plain", "same", 200, false, false},
	}
	chrome := write(t, dir, "chrome.har", three)
	firefox := write(t, dir, "firefox.har", three)
	rewrite(t, firefox, func(_ int, e map[string]any) { delete(e, "_resourceType") })
	l, r := parseFile(t, chrome), parseFile(t, firefox)
	ds := mustCompare(t, l, r, Complete, Complete)
	if len(ds) != 1 || ds[0].Verdict != VerdictEqual || ds[0].LeftCount != 3 || ds[0].RightCount != 3 {
		t.Fatalf("deltas %+v", ds)
	}
	gs, err := Groups(t.Context(), r, 10)
	if err != nil || len(gs) != 1 || gs[0].ResourceTypes["unknown"] != 3 {
		t.Fatalf("groups %+v %v", gs, err)
	}
}

// TestBodyCutByItsProducer: a content.text shorter than content.size (a
// browser keeping the first bytes of a large body) is truncated, its
// digest labelled as of the partial text, its decoded length given; a
// text longer than content.size is size_mismatch. Compared with the
// whole body, neither is an independent difference: the body is unknown.
func TestBodyCutByItsProducer(t *testing.T) {
	dir := t.TempDir()
	whole := strings.Repeat("x", 4096)
	one := func(body string) []fx {
		return []fx{{"GET", "https://example.test/big", "fetch", "text/plain", body, 200, false, false}}
	}
	full := write(t, dir, "full.har", one(whole))
	cut := write(t, dir, "cut.har", one(whole[:1024]))
	rewrite(t, cut, func(_ int, e map[string]any) {
		e["response"].(map[string]any)["content"].(map[string]any)["size"] = len(whole)
	})
	long := write(t, dir, "long.har", one(whole))
	rewrite(t, long, func(_ int, e map[string]any) {
		e["response"].(map[string]any)["content"].(map[string]any)["size"] = 100
	})
	for _, tc := range []struct {
		path, body, digestOf, bodyBytes string
		truncated, mismatched           int
	}{
		{full, BodyRetained, DigestTextUTF8, "", 0, 0},
		{cut, BodyTruncated, "partial_" + DigestTextUTF8, "1024", 1, 0},
		{long, BodySizeMismatch, DigestTextUTF8, strconv.Itoa(len(whole)), 0, 1},
	} {
		c := parseFile(t, tc.path)
		e := c.Entries[0]
		if e.Body != tc.body || e.BodyDigestOf != tc.digestOf || e.BodyBytes != tc.bodyBytes || e.BodySHA256 == "" {
			t.Errorf("%s: body %s digest_of %s body_bytes %q sha %q", tc.path, e.Body, e.BodyDigestOf, e.BodyBytes, e.BodySHA256)
		}
		if c.Unknowns.BodiesTruncated != tc.truncated || c.Unknowns.BodiesSizeMismatch != tc.mismatched {
			t.Errorf("%s: unknowns %+v", tc.path, c.Unknowns)
		}
		if tc.path == full {
			continue
		}
		ds := mustCompare(t, parseFile(t, full), c, Complete, Complete)
		if len(ds) != 1 || ds[0].Verdict == VerdictIndependent || ds[0].Verdict == VerdictEqual {
			t.Errorf("%s against the whole body: %+v", tc.path, ds)
		}
	}
}
