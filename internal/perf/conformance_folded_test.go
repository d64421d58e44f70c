package perf

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// foldedValid are stack lines every variant builds on: shared prefixes, a
// non-ASCII frame (read through each encoding) and a leaf that is also an
// inner frame elsewhere.
const foldedValid = "main;a;b 10\nmain;c 5\nmain;a;café 7\nmain;a 2\n"

// foldedVariant is one folded file of the conformance test.
type foldedVariant struct {
	name string
	doc  string
	// speedscope and ours: whether each accepts the file; ourCode is our
	// error when we do not.
	speedscope, ours bool
	ourCode          contract.Code
	// refDoc, when set, is the file as we read it, written the way
	// speedscope reads it the same way (a deliberate difference, see
	// docs/perf.md): our numbers on doc are compared with speedscope's on
	// refDoc, and speedscope's numbers on doc must differ from those on
	// refDoc (the difference is real, not assumed).
	refDoc string
	// invalid and first are our coverage.invalid_lines and
	// coverage.first_invalid_lines.
	invalid int64
	first   []int64
}

// foldedVariants are the files TestFoldedConformance writes.
func foldedVariants() []foldedVariant {
	v := foldedValid
	return []foldedVariant{
		{name: "plain", doc: v, speedscope: true, ours: true},
		{name: "no_final_newline", doc: strings.TrimSuffix(v, "\n"), speedscope: true, ours: true},
		{name: "utf8_bom", doc: "\ufeff" + v, speedscope: true, ours: true},
		{name: "crlf", doc: strings.ReplaceAll(v, "\n", "\r\n"), speedscope: true, ours: true},
		{name: "utf16le_bom", doc: utf16(v, false), speedscope: true, ours: true},
		{name: "utf16be_bom", doc: utf16(v, true), speedscope: true, ours: true},
		{name: "utf16le_bom_crlf", doc: utf16(strings.ReplaceAll(v, "\n", "\r\n"), false), speedscope: true, ours: true},
		// Lines both references skip: a comment, no count, a
		// non-numeric, fractional, negative or signed count, whitespace
		// after the count.
		{name: "comments_and_invalid", doc: "# collapsed by stackcollapse-perf.pl\n" + v + "garbage\nmain;d x\nmain;d 1.5\nmain;d -3\nmain;d +3\nmain;e 4 \n",
			speedscope: true, ours: true, invalid: 7, first: []int64{1, 6, 7, 8, 9}},
		// A comment that ends in a number is a stack to both references.
		{name: "comment_with_count", doc: "# total 3\n" + v, speedscope: true, ours: true},
		{name: "blank_lines", doc: "\n" + "main;a;b 10\n\n   \n\t\nmain;c 5\n\nmain;a;café 7\nmain;a 2\n\n", speedscope: true, ours: true},
		{name: "duplicate_stacks", doc: v + "main;a;b 3\nmain;c 1\nmain;a;b 10\n", speedscope: true, ours: true},
		{name: "recursion", doc: v + "main;f;g;f 3\nmain;f;f;f 2\n", speedscope: true, ours: true},
		// Only the last space separates the count: "a  4" is frame "a ".
		{name: "double_space", doc: v + "main;a  4\n  lead;x 1\n", speedscope: true, ours: true},
		// Exact in float64 (speedscope's numbers), sum below 2^53.
		{name: "huge_counts", doc: v + "main;h 4000000000000000\nmain;a;h 3000000000000000\nmain;h 1000000000000000\n", speedscope: true, ours: true},
		{name: "zero_count", doc: v + "main;z 0\n", speedscope: true, ours: true},

		// Deliberate differences (docs/perf.md).
		// A tab before the count: flamegraph.pl's \s reads it, so do we;
		// speedscope's " (\d+)$" skips the line.
		{name: "tab_separated_count", doc: "main;a;b\t10\nmain;c 5\nmain;a;café\t7\nmain;a 2\n", refDoc: v, speedscope: true, ours: true},
		// An empty frame: speedscope keeps a frame named ""; here the line
		// is skipped and counted.
		{name: "ends_in_empty_frame", doc: v + "main;a; 4\n", refDoc: v, speedscope: true, ours: true, invalid: 1, first: []int64{5}},
		{name: "empty_inner_frame", doc: v + "main;;x 2\n" + ";main 1\n", refDoc: v, speedscope: true, ours: true, invalid: 2, first: []int64{5, 6}},
		// A count beyond int64: speedscope reads it as a float
		// (inexactly); here the line is skipped and counted.
		{name: "count_beyond_int64", doc: "main;a 99999999999999999999\n" + v, refDoc: v, speedscope: true, ours: true, invalid: 1, first: []int64{1}},
		// Counts whose sum exceeds int64 cannot be totalled exactly:
		// LIMIT_EXCEEDED here, speedscope sums floats.
		{name: "sum_beyond_int64", doc: "main;a 9223372036854775807\nmain;b 1\n", speedscope: true, ours: false, ourCode: contract.CodeLimitExceeded},

		// Files with no stack line: neither reads a profile.
		{name: "comments_only", doc: "# folded\n\n# nothing here\n", speedscope: false, ours: false, ourCode: contract.CodeDecodeFailed},
		{name: "counts_missing", doc: "main;a;b\nmain;c\n", speedscope: false, ours: false, ourCode: contract.CodeDecodeFailed},
	}
}

// foldedFacts are per frame name the self (flat) and total (cum) weights.
type foldedFacts map[string][2]int64

func (f foldedFacts) names() []string {
	var ks []string
	for k := range f {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// speedscopeFolded reads the one profile speedscope built from a folded
// file; weights must be whole numbers.
func speedscopeFolded(t *testing.T, r *refTrace) (foldedFacts, int64) {
	t.Helper()
	if len(r.Speedscope.Profiles) != 1 {
		t.Fatalf("speedscope built %d profiles from a folded file", len(r.Speedscope.Profiles))
	}
	p := r.Speedscope.Profiles[0]
	whole := func(w float64) int64 {
		if w != math.Trunc(w) || math.Abs(w) > 1<<53 {
			t.Fatalf("speedscope weight %v is not an exact whole number", w)
		}
		return int64(w)
	}
	f := foldedFacts{}
	var total int64
	for name, cum := range p.Frames {
		self := whole(p.Self[name])
		f[name] = [2]int64{self, whole(cum)}
		total += self
	}
	return f, total
}

// TestFoldedConformance writes folded ("collapsed stack") variants —
// plain, without a final newline, UTF-8 BOM, CRLF, UTF-16LE/BE with a BOM,
// comments and invalid lines, blank lines, duplicate stacks, recursion,
// huge counts, a tab before the count, empty frames, counts beyond int64,
// files without a stack — and compares summarize_profile with speedscope's
// own importer run on the same files in the same run: which files each
// accepts, and per frame name the self (flat) and total (cum) weight and
// the profile total. Brendan Gregg's flamegraph.pl is not packaged in
// Debian, so it is not run; docs/perf.md names where it reads otherwise.
func TestFoldedConformance(t *testing.T) {
	ref := traceReference(t)
	e := newEnv(t)
	variants := foldedVariants()
	args := []string{"--only=speedscope"}
	var files []string
	for _, v := range variants {
		p := e.write(v.name+".folded", v.doc)
		files = append(files, p)
		args = append(args, p)
		if v.refDoc != "" {
			args = append(args, e.write(v.name+".ref.folded", v.refDoc))
		}
	}
	refs := runTraceReference(t, ref, args...)
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			r := refs[v.name+".folded"]
			if r == nil {
				t.Fatal("no reference result")
			}
			if r.Speedscope.Accepted != v.speedscope {
				t.Fatalf("speedscope accepted=%v (%s), the test expects %v", r.Speedscope.Accepted, r.Speedscope.Error, v.speedscope)
			}
			m, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(files[i], "folded")}})
			if !v.ours {
				if code != v.ourCode {
					t.Fatalf("ours: %s %v, want %s", code, m["error"], v.ourCode)
				}
				return
			}
			if code != "" {
				t.Fatalf("ours: %s %v", code, m["error"])
			}
			cov := m["coverage"].(map[string]any)
			if got := atoi(t, cov["invalid_lines"]); got != v.invalid {
				t.Errorf("coverage.invalid_lines %d, want %d (%v)", got, v.invalid, cov)
			}
			var first []int64
			if fl, ok := cov["first_invalid_lines"].([]any); ok {
				for _, x := range fl {
					first = append(first, int64(x.(float64)))
				}
			}
			if mustJSON(first) != mustJSON(v.first) {
				t.Errorf("coverage.first_invalid_lines %v, want %v", first, v.first)
			}
			if (v.invalid != 0) != (m["status"] == "partial") {
				t.Errorf("status %v with %d invalid lines", m["status"], v.invalid)
			}
			rows, _ := e.follow(m)
			ours := foldedFacts{}
			for _, row := range rows {
				row := row.(map[string]any)
				ours[row["function"].(string)] = [2]int64{atoi(t, row["flat"]), atoi(t, row["cum"])}
			}
			oursTotal := atoi(t, data(m)["summary"].(map[string]any)["sample_types"].([]any)[0].(map[string]any)["total"])

			read := r
			if v.refDoc != "" {
				read = refs[v.name+".ref.folded"]
				if read == nil || !read.Speedscope.Accepted || len(read.Speedscope.Profiles) != 1 || len(r.Speedscope.Profiles) != 1 {
					t.Fatalf("speedscope did not read the file and its reference form as one profile each: %+v %+v", r.Speedscope, read)
				}
				a, b := r.Speedscope.Profiles[0], read.Speedscope.Profiles[0]
				if mustJSON(a.Frames) == mustJSON(b.Frames) && mustJSON(a.Self) == mustJSON(b.Self) {
					t.Fatalf("speedscope reads %s as its reference form; the documented difference is gone", v.name)
				}
			}
			ss, ssTotal := speedscopeFolded(t, read)
			if got, want := ours.names(), ss.names(); !equalStrings(got, want) {
				t.Errorf("functions: ours %q, speedscope %q", got, want)
			}
			for name, w := range ss {
				if o := ours[name]; o != w {
					t.Errorf("%q: flat %d cum %d, speedscope self %d total %d", name, o[0], o[1], w[0], w[1])
				}
			}
			if oursTotal != ssTotal {
				t.Errorf("total %d, speedscope %d", oursTotal, ssTotal)
			}
		})
	}
}
