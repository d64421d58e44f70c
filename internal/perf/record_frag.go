package perf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Records larger than the page's byte budget: a JSON entry, JSONL record
// or CSV record whose row alone passes the budget is delivered as ordered
// fragments of its raw bytes; a string in an analysis row that makes the
// row pass the budget is clipped (tool.ClipString).

// recordFrag is where a page stopped inside a record delivered as
// fragments: the next fragment's index and the weight limit
// (splitRecord) the record was split with, kept so every page splits it
// the same way. The zero recordFrag is the start of a record.
type recordFrag struct {
	Fragment int `json:"rf,omitempty"`
	Limit    int `json:"rl,omitempty"`
}

// runeWeight is what one rune of a fragment's text costs, doubled, against
// the row budget (tool.RowCost: the mean of the JSON string's bytes and
// their escaped copy in the text block): 2 per byte, plus 4 for \" and \\
// (both characters escaped again), 3 for \n \r \t, 13 for a \u00XX escape
// (control bytes, <, >, &, U+2028, U+2029, an invalid byte).
func runeWeight(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 13
	case r == '"' || r == '\\':
		return 6
	case r == '\n' || r == '\r' || r == '\t':
		return 5
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 13
	}
	return 2 * size
}

// splitRecord splits b into consecutive fragments whose summed runeWeight
// is at most limit (a fragment always holds at least one rune), cut only
// at UTF-8 boundaries of valid input (an invalid byte is its own rune). It
// returns the end offset of each fragment; the last is len(b). Empty b is
// one empty fragment.
func splitRecord(b []byte, limit int) []int {
	if len(b) == 0 {
		return []int{0}
	}
	var ends []int
	w := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		rw := runeWeight(r, size)
		if w > 0 && w+rw > limit {
			ends = append(ends, i)
			w = 0
		}
		w += rw
		i += size
	}
	return append(ends, len(b))
}

// fragmentWeightLimit is the splitRecord limit that keeps a fragment row
// (base plus its fragment fields) within budget bytes: the row without
// text, with the widest numbers it can carry, costs base bytes; each rune
// adds half its runeWeight. It is at least 64.
func fragmentWeightLimit(base map[string]any, total int, budget int64) int {
	m := fragmentRow(base, total, total, "", total, strings.Repeat("0", 64))
	n, _ := rowCost(m)
	l := 2*(budget-n) - 32
	if l < 64 {
		l = 64
	}
	return int(l)
}

// fragmentRow is one fragment row: base (the fields naming the record)
// plus fragment (its zero-based index), fragments (their count), text
// (this fragment's bytes), bytes_total and sha256 (hex SHA-256) of the
// whole record, the row shape text_fragment_chars rows share (fragment,
// text).
func fragmentRow(base map[string]any, i, count int, text string, total int, sum string) map[string]any {
	m := make(map[string]any, len(base)+5)
	for k, v := range base {
		m[k] = v
	}
	m["fragment"], m["fragments"], m["text"], m["bytes_total"], m["sha256"] = i, count, text, total, sum
	return m
}

// offerRecord offers one record to p: whole (row) when its row fits the
// page's byte budget or other rows precede it on the page (the page then
// ends before it), else as fragment rows of its raw bytes (raw; base names
// the record in each fragment row), from fragment at on. It returns
// whether the record was consumed whole; when not and stop.Limit > 0, the
// page ended inside the record and the next page resumes at stop; when
// stop is zero the record was not consumed (the page ended before it) or
// p.err is set.
func (p *pager) offerRecord(row func() any, raw func() ([]byte, error), base func() map[string]any, at recordFrag) (bool, recordFrag, error) {
	if p.seen < p.start || p.full() {
		return p.offer(row), recordFrag{}, nil
	}
	r := row()
	n, err := rowCost(r)
	if at.Limit == 0 {
		if err != nil || n <= p.rowBudget() || len(p.rows) > 0 {
			return p.offer(func() any { return r }), recordFrag{}, nil
		}
	}
	b, err := raw()
	if err != nil {
		return false, recordFrag{}, err
	}
	bm := base()
	if at.Limit == 0 {
		at.Limit = fragmentWeightLimit(bm, len(b), p.rowBudget())
	}
	ends := splitRecord(b, at.Limit)
	if at.Fragment < 0 || at.Fragment >= len(ends) {
		return false, recordFrag{}, contract.Errorf(contract.CodeCursorInvalid, "the continuation points at fragment %d of a record split into %d", at.Fragment, len(ends))
	}
	sum := sha256.Sum256(b)
	hexSum := hex.EncodeToString(sum[:])
	row0 := p.seen
	for i := at.Fragment; i < len(ends); i++ {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		text := strings.ToValidUTF8(string(b[start:ends[i]]), "\uFFFD")
		p.seen = row0
		if !p.offer(func() any { return fragmentRow(bm, i, len(ends), text, len(b), hexSum) }) {
			p.seen = row0
			p.noteFragments(row0, len(b), len(ends), n)
			return false, recordFrag{Fragment: i, Limit: at.Limit}, nil
		}
	}
	p.seen = row0 + 1
	return true, recordFrag{}, nil
}

// noteFragments records the warning of a page that ends inside a record
// delivered as fragments (the page that completes it needs none): row is its row index, size its raw bytes, count its
// fragments, cost its whole row's cost (tool.RowCost).
func (p *pager) noteFragments(row int64, size, count int, cost int64) {
	whole := "no server delivers it whole (a result is at most 4 MiB)"
	if cost <= hardPageBytes {
		// RowBudget = budget/2 - 4 KiB (tool.RowBudget).
		need := 2 * (cost + 4<<10)
		if need <= tool.HardResultBytes {
			whole = fmt.Sprintf("a server started with --max-result-bytes %d or more (inquest mcp) delivers it whole as one row", need)
		}
	}
	p.notes = append(p.notes, fmt.Sprintf("row %d (%d bytes) alone passes the page's byte budget and is delivered as %d ordered fragments of its exact bytes (rows with fragment, fragments, text, bytes_total, sha256; concatenate the text of fragments 0..%d, following next_action); %s", row, size, count, count-1, whole))
}

// rowBudget is the page's row byte budget (hardPageBytes when unset).
func (p *pager) rowBudget() int64 {
	if p.budget <= 0 {
		return hardPageBytes
	}
	return p.budget
}

// clipRow returns row with the strings that make it pass budget clipped
// (tool.ClipString): every string of an object (nested objects and objects
// in arrays included) whose cost passes a share of the budget holds its
// first bytes, and the object gains <key>_truncated, <key>_bytes and
// <key>_sha256. The share starts at half the budget and halves (down to
// 256 bytes) until the row fits. It returns the clipped row (a decoded
// copy; row itself is unchanged) and the clipped keys, or row and nil
// when nothing was clipped.
func clipRow(row any, budget int64) (any, []string) {
	enc, err := json.Marshal(row)
	if err != nil {
		return row, nil
	}
	var out any
	var keys []string
	for share := budget / 2; ; share /= 2 {
		if share < 256 {
			share = 256
		}
		dec := json.NewDecoder(bytes.NewReader(enc))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return row, nil
		}
		seen := map[string]bool{}
		keys = keys[:0]
		clipValue(v, int(share), func(k string) {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		})
		out = v
		n, err := rowCost(v)
		if err != nil || n <= budget || share == 256 {
			break
		}
	}
	if len(keys) == 0 {
		return row, nil
	}
	sort.Strings(keys)
	return out, keys
}

// clipValue clips the long strings of the objects in v (see clipRow),
// calling clipped with the key of each.
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
}
