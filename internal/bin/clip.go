package bin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/inquest-dev/inquest/internal/tool"
)

// A bin row states strings read from the file (symbol and demangled
// names, section and segment names, import and export names, disassembly
// symbols and annotations, strings). One such string can be far longer
// than a page's byte budget: clipRows clips it so every page fits.

// ClipShare is the fraction (1/ClipShare) of a page's row byte budget
// that one string of a row may cost before it is clipped; a row that
// still passes half the budget has its strings clipped to halving shares
// (down to MinClipBytes) until it fits.
const ClipShare = 4

// MinClipBytes is the smallest share a clipped string is cut to.
const MinClipBytes = 256

// clipReserve is what the clip warning may add to a page beyond the
// envelope reserve the row budget keeps.
const clipReserve = 768

// selfClipped names the tools whose rows clip their own long strings
// (the HAR tools' URLs, clipURL): clipRows leaves their rows as they are.
var selfClipped = map[string]bool{"inspect_http_capture": true, "compare_http_captures": true}

// clipRows returns rows with each row whose strings are too long for a
// page of budget row bytes clipped (clipRow), how many rows were clipped,
// and the clipped keys of them all (sorted, each once).
// A budget of 0 clips nothing.
func clipRows(rows []json.RawMessage, budget int) ([]json.RawMessage, int, []string) {
	if budget <= 0 {
		return rows, 0, nil
	}
	share := max(budget/ClipShare, MinClipBytes)
	n := 0
	seen := map[string]bool{}
	var keys []string
	var out []json.RawMessage
	for i, r := range rows {
		// A row whose every string fits its share is kept as encoded:
		// only a row long enough to hold a long string is decoded.
		// The escaping adds at most 5 bytes a byte (tool.RowCost): a
		// row short enough to fit its share at that rate is not read.
		if (7*len(r)+1)/2+1 <= share || tool.RowCost(r) <= share {
			continue
		}
		c, ks := clipRow(r, share, budget/2)
		if ks == nil {
			continue
		}
		if out == nil {
			out = append([]json.RawMessage(nil), rows...)
		}
		out[i] = c
		n++
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if out == nil {
		return rows, 0, nil
	}
	sort.Strings(keys)
	return out, n, keys
}

// clipRow returns row with every string of its objects (nested objects
// and objects in arrays included) whose JSON costs more than share bytes
// (tool.RowCost) clipped by tool.ClipString: the string holds its first
// bytes and its object gains <key>_truncated (true), <key>_bytes (the
// whole string's length in bytes) and <key>_sha256 (of the whole
// string). While the clipped row costs more than fit bytes the share
// halves, down to MinClipBytes. It returns the clipped row and the
// clipped keys, or row and nil when no string was clipped.
func clipRow(row json.RawMessage, share, fit int) (json.RawMessage, []string) {
	var out json.RawMessage
	var keys []string
	for ; ; share /= 2 {
		share = max(share, MinClipBytes)
		dec := json.NewDecoder(bytes.NewReader(row))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return row, nil
		}
		seen := map[string]bool{}
		keys = keys[:0]
		clipValue(v, share, func(k string) {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		})
		out, _ = json.Marshal(v)
		if tool.RowCost(out) <= fit || share == MinClipBytes {
			break
		}
	}
	if len(keys) == 0 {
		return row, nil
	}
	return out, keys
}

// clipValue clips the long strings of the objects in v (see clipRow),
// calling clipped with the key of each. A string that is an element of
// an array has no key of its own to carry the facts and is left whole.
func clipValue(v any, share int, clipped func(string)) {
	switch t := v.(type) {
	case map[string]any:
		var long []string
		for k, e := range t {
			if s, ok := e.(string); ok {
				if _, c := tool.ClipString(s, share); c.Truncated {
					long = append(long, k)
				}
				continue
			}
			clipValue(e, share, clipped)
		}
		sort.Strings(long)
		for _, k := range long {
			s, c := tool.ClipString(t[k].(string), share)
			t[k] = s
			t[k+"_truncated"], t[k+"_bytes"], t[k+"_sha256"] = true, c.Bytes, c.SHA256
			clipped(k)
		}
	case []any:
		for _, e := range t {
			clipValue(e, share, clipped)
		}
	}
	if t, ok := v.(map[string]any); ok {
		clipElements(t, share, clipped)
	}
}

// clippedElement identifies a clipped string element of an array (see
// clipElements): its index, whole length in bytes and SHA-256.
type clippedElement struct {
	Index  int    `json:"index"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// clipElements clips the long string elements of the arrays of object t
// (such as needed library names): each holds its first bytes, and t
// gains <key>_clipped, one clippedElement per clipped element.
func clipElements(t map[string]any, share int, clipped func(string)) {
	var keys []string
	for k, e := range t {
		if _, ok := e.([]any); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := t[k].([]any)
		var cs []clippedElement
		for i, e := range a {
			if s, ok := e.(string); ok {
				if p, c := tool.ClipString(s, share); c.Truncated {
					a[i] = p
					cs = append(cs, clippedElement{Index: i, Bytes: c.Bytes, SHA256: c.SHA256})
				}
			}
		}
		if cs != nil {
			t[k+"_clipped"] = cs
			clipped(k)
		}
	}
}

// clipData clips the strings of the result's facts beyond its rows
// (inspection, summary, counts, context) as clipRow does, each to a
// 1/ClipShare share of budget at most, and returns the clipped keys.
func clipData(d *paged, budget int) []string {
	if d == nil || budget <= 0 {
		return nil
	}
	share := max(budget/ClipShare, MinClipBytes)
	var keys []string
	for _, f := range []*any{&d.Inspection, &d.Summary, &d.Counts, &d.Extra} {
		if *f == nil {
			continue
		}
		enc, err := json.Marshal(*f)
		if err != nil || tool.RowCost(enc) <= share {
			continue
		}
		c, ks := clipRow(enc, share, share)
		if ks == nil {
			continue
		}
		*f = c
		keys = append(keys, ks...)
	}
	sort.Strings(keys)
	return keys
}

// clipDataWarning is the warning of a result whose facts beyond the rows
// hold clipped strings (keys their fields).
func clipDataWarning(keys []string) string {
	return fmt.Sprintf("the result's summary holds a string too long for the page's byte budget (%s): each such field holds its first bytes, with <field>_truncated true, <field>_bytes and <field>_sha256 of the whole value; an array's clipped elements are listed in <field>_clipped (index, bytes, sha256)", strings.Join(keys, ", "))
}

// clipWarning is the warning of a page with n clipped rows (keys their
// clipped fields).
func clipWarning(n int, keys []string) string {
	return fmt.Sprintf("%d row(s) hold a string too long for the page's byte budget (%s): each such field holds its first bytes, with <field>_truncated true, <field>_bytes its whole length and <field>_sha256 the SHA-256 of the whole value", n, strings.Join(keys, ", "))
}
