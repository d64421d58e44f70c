package perf

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// sampleType is one value dimension of a profile (pprof ValueType).
type sampleType struct {
	Type string `json:"type"`
	Unit string `json:"unit"`
}

// stackProfile is the decoded form both pprof and folded stacks reduce to:
// function names, and samples as leaf-first function-index stacks with one
// value per sample type.
type stackProfile struct {
	types   []sampleType
	funcs   []string
	samples []stackSample
	meta    map[string]any
}

type stackSample struct {
	stack  []int32 // leaf first
	values []int64
}

func profileFields() []Field {
	return []Field{
		{"sample_type", map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "description": "Restrict rows to this sample type (e.g. cpu, alloc_space); default every sample type."}},
		{"sort", map[string]any{"enum": []string{"flat", "cum"}, "description": "Order functions by flat (self) or cum (inclusive) value, descending; default flat."}},
		{"focus", map[string]any{"type": "string", "maxLength": 1024, "description": "RE2 regular expression: keep only samples with a frame whose function name matches."}},
		{"ignore", map[string]any{"type": "string", "maxLength": 1024, "description": "RE2 regular expression: drop samples with a frame whose function name matches."}},
	}
}

func summarizeProfileOperation() *Operation {
	return &Operation{
		Name:  "summarize_profile",
		Title: "Summarize a profile",
		Description: "Summarize one CPU/heap/other profile: for every sample type, its total and the top functions by flat (self) and cum (inclusive) value with exact integer values, units and percentages of the profile total (as go tool pprof -top computes them, also under focus/ignore). " +
			"Required: sources (exactly one; pprof protobuf, gzipped or not, or folded/collapsed stack text \"a;b;c 123\"). Optional: sample_type, sort (flat|cum), focus and ignore regexes (pprof semantics on function names), page_size, limits, continuation.",
		MinSources: 1, MaxSources: 1,
		Formats: []string{FormatPprof, FormatFolded},
		Fields:  profileFields(),
		Run:     runSummarizeProfile,
	}
}

func compareProfilesOperation() *Operation {
	return &Operation{
		Name:  "compare_profiles",
		Title: "Compare profiles",
		Description: "Compare a base profile (first source) against one or more candidates: per function and sample type, flat and cum values of both, signed absolute deltas, and normalized deltas (change of share of the total, in percentage points) so profiles of different length compare. " +
			"Required: sources (2-16; pprof or folded). Optional: sample_type, sort (flat|cum: by absolute delta), focus, ignore, page_size, limits, continuation.",
		MinSources: 2, MaxSources: 16,
		Formats: []string{FormatPprof, FormatFolded},
		Fields:  profileFields(),
		Run:     runCompareProfiles,
	}
}

// loadProfile decodes in. pprof input is decompressed with a bound of
// limits.max_memory_bytes.
func loadProfile(ctx context.Context, in *input, lim Limits) (*stackProfile, error) {
	f, err := os.Open(in.file)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "source %d can no longer be read", in.index)
	}
	defer f.Close()
	var sp *stackProfile
	switch in.format {
	case FormatPprof:
		sp, err = loadPprof(ctxReader{ctx, f}, in.index, lim.MaxMemoryBytes)
	case FormatFolded:
		sp, err = decodeFolded(ctx, f, in.index, lim.MaxMemoryBytes)
	default:
		return nil, contract.Errorf(contract.CodeUnsupportedFormat, "profiles are pprof or folded").WithDetail("accepted_formats", []string{FormatPprof, FormatFolded})
	}
	if err != nil {
		return nil, err
	}
	if err := sp.checkSums(in.index); err != nil {
		return nil, err
	}
	return sp, nil
}

// addChecked returns a+b and whether it did not overflow int64.
func addChecked(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// subChecked returns a-b and whether it did not overflow int64.
func subChecked(a, b int64) (int64, bool) {
	if b == math.MinInt64 {
		return 0, false
	}
	return addChecked(a, -b)
}

// checkSums rejects (LIMIT_EXCEEDED) a profile whose sample values of any
// type cannot be summed exactly in int64: the sum of absolute values bounds
// every flat, cum and total computed from them, so passing this check
// means no aggregate overflows.
func (sp *stackProfile) checkSums(index int) error {
	for ti, t := range sp.types {
		var pos, neg int64
		for si, s := range sp.samples {
			v := s.values[ti]
			var ok bool
			if v >= 0 {
				pos, ok = addChecked(pos, v)
			} else {
				neg, ok = addChecked(neg, v)
			}
			if ok {
				_, ok = subChecked(pos, neg)
			}
			if !ok {
				return contract.Errorf(contract.CodeLimitExceeded, "source %d: the %s/%s values sum beyond the int64 range at sample %d, so totals cannot be computed exactly", index, t.Type, t.Unit, si).WithDetail("source", index).WithDetail("sample", si)
			}
		}
	}
	return nil
}

func loadPprof(r io.Reader, index int, memCap int64) (*stackProfile, error) {
	br := bufio.NewReader(r)
	var data []byte
	head, _ := br.Peek(2)
	var src io.Reader = br
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, decodeFail("source %d is not a valid gzip stream", index)
		}
		src = gz
	}
	data, err := io.ReadAll(io.LimitReader(src, memCap+1))
	if err != nil {
		return nil, decodeFail("source %d could not be decompressed: %v", index, sanitize(err))
	}
	if int64(len(data)) > memCap {
		return nil, contract.Errorf(contract.CodeLimitExceeded, "source %d decompresses to more than limits.max_memory_bytes (%d)", index, memCap).WithDetail("max_memory_bytes", contract.Int(memCap))
	}
	p, err := profile.ParseUncompressed(data)
	if err != nil {
		return nil, decodeFail("source %d is not a pprof profile: %v", index, sanitize(err))
	}
	if err := p.CheckValid(); err != nil {
		return nil, decodeFail("source %d is an inconsistent pprof profile: %v", index, sanitize(err))
	}
	return fromPprof(p), nil
}

// sanitize keeps decoder messages but bounds their length.
func sanitize(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func fromPprof(p *profile.Profile) *stackProfile {
	sp := &stackProfile{meta: map[string]any{}}
	for _, st := range p.SampleType {
		sp.types = append(sp.types, sampleType{st.Type, st.Unit})
	}
	if p.DurationNanos > 0 {
		sp.meta["duration_ns"] = contract.Int(p.DurationNanos)
	}
	if p.PeriodType != nil {
		sp.meta["period"] = contract.Int(p.Period)
		sp.meta["period_type"] = sampleType{p.PeriodType.Type, p.PeriodType.Unit}
	}
	if p.DefaultSampleType != "" {
		sp.meta["default_sample_type"] = p.DefaultSampleType
	}
	funcIdx := map[string]int32{}
	intern := func(name string) int32 {
		if i, ok := funcIdx[name]; ok {
			return i
		}
		i := int32(len(sp.funcs))
		sp.funcs = append(sp.funcs, name)
		funcIdx[name] = i
		return i
	}
	locFuncs := make(map[*profile.Location][]int32, len(p.Location))
	for _, loc := range p.Location {
		var fs []int32
		for _, ln := range loc.Line {
			// Line[0] is the innermost frame; every line but the last was
			// inlined into the next. Like go tool pprof's function
			// granularity, inlined and called frames of one function
			// merge into one node (pprof only labels them "(inline)").
			name := ""
			if ln.Function != nil {
				name = ln.Function.Name
			}
			if name == "" {
				name = fmt.Sprintf("0x%x", loc.Address)
			}
			fs = append(fs, intern(name))
		}
		if len(fs) == 0 {
			fs = append(fs, intern(fmt.Sprintf("0x%x", loc.Address)))
		}
		locFuncs[loc] = fs
	}
	sp.samples = make([]stackSample, len(p.Sample))
	for i, s := range p.Sample {
		n := 0
		for _, loc := range s.Location {
			n += len(locFuncs[loc])
		}
		stack := make([]int32, 0, n)
		for _, loc := range s.Location {
			stack = append(stack, locFuncs[loc]...)
		}
		sp.samples[i] = stackSample{stack: stack, values: s.Value}
	}
	return sp
}

// decodeFolded reads folded (collapsed) stacks, one "frame;frame;leaf COUNT"
// per line, root first (Brendan Gregg's stackcollapse format). Blank lines
// are skipped; a line without a trailing non-negative integer count is
// DECODE_FAILED with its line number.
func decodeFolded(ctx context.Context, r io.Reader, index int, memCap int64) (*stackProfile, error) {
	sp := &stackProfile{types: []sampleType{{"samples", "count"}}, meta: map[string]any{}}
	funcIdx := map[string]int32{}
	br := bufio.NewReaderSize(r, 64<<10)
	var held, foldedSum int64
	for line := int64(1); ; line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b, err := readLine(br, maxLine, line)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		b = bytes.TrimRight(b, "\r\n")
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		sp2 := bytes.LastIndexByte(b, ' ')
		if sp2 <= 0 {
			return nil, decodeFail("source %d line %d: a folded stack line is \"frames COUNT\"", index, line).WithDetail("line", line)
		}
		n, err := strconv.ParseInt(string(b[sp2+1:]), 10, 64)
		if err != nil || n < 0 {
			return nil, decodeFail("source %d line %d: the count is not a non-negative integer", index, line).WithDetail("line", line)
		}
		frames := bytes.Split(bytes.TrimRight(b[:sp2], " "), []byte(";"))
		stack := make([]int32, len(frames))
		for i, fr := range frames {
			if len(fr) == 0 {
				return nil, decodeFail("source %d line %d: empty frame name", index, line).WithDetail("line", line)
			}
			name := string(bytes.ToValidUTF8(fr, []byte("\uFFFD")))
			id, ok := funcIdx[name]
			if !ok {
				id = int32(len(sp.funcs))
				sp.funcs = append(sp.funcs, name)
				funcIdx[name] = id
				held += int64(len(name)) + 32
			}
			stack[len(frames)-1-i] = id // leaf first
		}
		held += int64(len(stack))*4 + 48
		if held > memCap {
			return nil, contract.Errorf(contract.CodeLimitExceeded, "source %d holds more stacks than limits.max_memory_bytes allows", index)
		}
		if sum, ok := addChecked(foldedSum, n); ok {
			foldedSum = sum
		} else {
			return nil, contract.Errorf(contract.CodeLimitExceeded, "source %d line %d: the sample counts sum beyond 9223372036854775807, which cannot be totalled exactly", index, line).WithDetail("line", line)
		}
		sp.samples = append(sp.samples, stackSample{stack: stack, values: []int64{n}})
	}
	if len(sp.samples) == 0 {
		return nil, decodeFail("source %d has no folded stack lines", index)
	}
	return sp, nil
}

type funcStat struct {
	flat, cum int64
}

// aggregate returns per-function flat and cum values of sample type ti over
// the samples kept by focus/ignore, and the total. cum counts a function
// once per sample even when it recurs (pprof semantics).
func (sp *stackProfile) aggregate(ti int, keep []bool) ([]funcStat, int64) {
	stats := make([]funcStat, len(sp.funcs))
	mark := make([]int32, len(sp.funcs))
	for i := range mark {
		mark[i] = -1
	}
	var total int64
	for si, s := range sp.samples {
		if keep != nil && !keep[si] {
			continue
		}
		v := s.values[ti]
		total += v
		if len(s.stack) == 0 {
			continue
		}
		stats[s.stack[0]].flat += v
		for _, f := range s.stack {
			if mark[f] != int32(si) {
				mark[f] = int32(si)
				stats[f].cum += v
			}
		}
	}
	return stats, total
}

// total sums sample type ti over every sample (pprof's percentage
// denominator, also under focus/ignore).
func (sp *stackProfile) total(ti int) int64 {
	var t int64
	for _, s := range sp.samples {
		t += s.values[ti]
	}
	return t
}

// filter evaluates focus and ignore once per function and returns the
// sample mask (nil when neither is set).
func (sp *stackProfile) filter(focus, ignore *regexp.Regexp) []bool {
	if focus == nil && ignore == nil {
		return nil
	}
	fm := make([]bool, len(sp.funcs))
	im := make([]bool, len(sp.funcs))
	for i, n := range sp.funcs {
		fm[i] = focus != nil && focus.MatchString(n)
		im[i] = ignore != nil && ignore.MatchString(n)
	}
	keep := make([]bool, len(sp.samples))
	for si, s := range sp.samples {
		f := focus == nil
		ig := false
		for _, id := range s.stack {
			f = f || fm[id]
			ig = ig || im[id]
		}
		keep[si] = f && !ig
	}
	return keep
}

func compileFilters(fields map[string]any) (*regexp.Regexp, *regexp.Regexp, error) {
	var focus, ignore *regexp.Regexp
	var err error
	if s := strField(fields, "focus"); s != "" {
		if focus, err = regexp.Compile(s); err != nil {
			return nil, nil, fieldErr(contract.CodeInvalidArgument, "/focus", "focus is not a valid RE2 regular expression")
		}
	}
	if s := strField(fields, "ignore"); s != "" {
		if ignore, err = regexp.Compile(s); err != nil {
			return nil, nil, fieldErr(contract.CodeInvalidArgument, "/ignore", "ignore is not a valid RE2 regular expression")
		}
	}
	return focus, ignore, nil
}

// selectTypes returns the indices of the requested sample type (all when
// empty); an unknown name is INVALID_ARGUMENT listing the available ones.
func (sp *stackProfile) selectTypes(name string) ([]int, error) {
	var out []int
	var names []string
	for i, t := range sp.types {
		names = append(names, t.Type)
		if name == "" || t.Type == name {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return nil, fieldErr(contract.CodeInvalidArgument, "/sample_type", "the profile has no sample type with that name").WithDetail("sample_types", names)
	}
	return out, nil
}

func pct(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return round6(float64(v) / float64(total) * 100)
}

func round6(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1e6) / 1e6
}

// page slices rows for the request's start position and max rows.
func page(rows []any, req *Request) (*Output, error) {
	start := req.Start.Row
	if start > int64(len(rows)) {
		start = int64(len(rows))
	}
	p := newPager(req, start)
	p.seen = start
	for i := start; i < int64(len(rows)) && !p.full(); i++ {
		p.offer(func() any { return rows[i] })
	}
	if p.err != nil {
		return nil, p.err
	}
	out := &Output{Total: int64(len(rows)), Rows: p.rows}
	if p.seen < int64(len(rows)) {
		out.Next = &evidence.Position{Row: p.seen}
	}
	p.noteBudget(out)
	return out, nil
}

func runSummarizeProfile(ctx context.Context, req *Request) (*Output, error) {
	focus, ignore, err := compileFilters(req.Fields)
	if err != nil {
		return nil, err
	}
	sp, err := loadProfile(ctx, req.Inputs[0], req.Limits)
	if err != nil {
		return nil, err
	}
	tis, err := sp.selectTypes(strField(req.Fields, "sample_type"))
	if err != nil {
		return nil, err
	}
	byCum := strField(req.Fields, "sort") == "cum"
	keep := sp.filter(focus, ignore)
	var rows []any
	var types []any
	for _, ti := range tis {
		stats, keptTotal := sp.aggregate(ti, keep)
		total := sp.total(ti)
		idx := make([]int, 0, len(stats))
		for i, s := range stats {
			if s.flat != 0 || s.cum != 0 {
				idx = append(idx, i)
			}
		}
		sortFuncs(idx, sp.funcs, func(i int) int64 {
			if byCum {
				return stats[i].cum
			}
			return stats[i].flat
		}, func(i int) int64 {
			if byCum {
				return stats[i].flat
			}
			return stats[i].cum
		})
		t := sp.types[ti]
		types = append(types, map[string]any{"type": t.Type, "unit": t.Unit, "total": contract.Int(total), "total_kept": contract.Int(keptTotal), "functions": len(idx)})
		for rank, i := range idx {
			s := stats[i]
			rows = append(rows, map[string]any{
				"sample_type": t.Type, "unit": t.Unit, "rank": rank + 1, "function": sp.funcs[i],
				"flat": contract.Int(s.flat), "flat_percent": pct(s.flat, total),
				"cum": contract.Int(s.cum), "cum_percent": pct(s.cum, total),
			})
		}
	}
	out, err := page(rows, req)
	if err != nil {
		return nil, err
	}
	kept := len(sp.samples)
	if keep != nil {
		kept = 0
		for _, k := range keep {
			if k {
				kept++
			}
		}
	}
	out.Summary = map[string]any{"format": req.Inputs[0].format, "sample_types": types, "samples": len(sp.samples), "samples_kept": kept, "functions": len(sp.funcs), "sort": map[bool]string{true: "cum", false: "flat"}[byCum]}
	for k, v := range sp.meta {
		out.Summary[k] = v
	}
	return out, nil
}

// sortFuncs orders function indices by primary desc, secondary desc, name.
func sortFuncs(idx []int, names []string, primary, secondary func(int) int64) {
	sort.Slice(idx, func(a, b int) bool {
		x, y := idx[a], idx[b]
		if p, q := primary(x), primary(y); p != q {
			return p > q
		}
		if p, q := secondary(x), secondary(y); p != q {
			return p > q
		}
		return names[x] < names[y]
	})
}

func runCompareProfiles(ctx context.Context, req *Request) (*Output, error) {
	focus, ignore, err := compileFilters(req.Fields)
	if err != nil {
		return nil, err
	}
	var profs []*stackProfile
	for _, in := range req.Inputs {
		sp, err := loadProfile(ctx, in, req.Limits)
		if err != nil {
			return nil, err
		}
		profs = append(profs, sp)
	}
	base := profs[0]
	tis, err := base.selectTypes(strField(req.Fields, "sample_type"))
	if err != nil {
		return nil, err
	}
	byCum := strField(req.Fields, "sort") == "cum"
	baseKeep := base.filter(focus, ignore)
	var rows []any
	var comps []any
	for ci := 1; ci < len(profs); ci++ {
		cand := profs[ci]
		candKeep := cand.filter(focus, ignore)
		for _, ti := range tis {
			t := base.types[ti]
			cti := -1
			for j, ct := range cand.types {
				if ct == t {
					cti = j
				}
			}
			if cti < 0 {
				return nil, contract.Errorf(contract.CodeInvalidArgument, "source %d has no sample type %s/%s to compare with the base", ci, t.Type, t.Unit).WithDetail("source", ci)
			}
			bs, _ := base.aggregate(ti, baseKeep)
			cs, _ := cand.aggregate(cti, candKeep)
			btot, ctot := base.total(ti), cand.total(cti)
			type pair struct{ b, c funcStat }
			byName := map[string]*pair{}
			var names []string
			for i, s := range bs {
				if s.flat != 0 || s.cum != 0 {
					byName[base.funcs[i]] = &pair{b: s}
					names = append(names, base.funcs[i])
				}
			}
			for i, s := range cs {
				if s.flat == 0 && s.cum == 0 {
					continue
				}
				if p, ok := byName[cand.funcs[i]]; ok {
					p.c = s
				} else {
					byName[cand.funcs[i]] = &pair{c: s}
					names = append(names, cand.funcs[i])
				}
			}
			key := func(n string) int64 {
				p := byName[n]
				if byCum {
					return abs64(p.c.cum - p.b.cum)
				}
				return abs64(p.c.flat - p.b.flat)
			}
			sort.Slice(names, func(a, b int) bool {
				if x, y := key(names[a]), key(names[b]); x != y {
					return x > y
				}
				return names[a] < names[b]
			})
			if _, ok := subChecked(ctot, btot); !ok {
				return nil, contract.Errorf(contract.CodeLimitExceeded, "the %s/%s totals of source 0 and source %d differ beyond the int64 range", t.Type, t.Unit, ci)
			}
			for _, n := range names {
				p := byName[n]
				_, ok1 := subChecked(p.c.flat, p.b.flat)
				_, ok2 := subChecked(p.c.cum, p.b.cum)
				if !ok1 || !ok2 {
					return nil, contract.Errorf(contract.CodeLimitExceeded, "the %s/%s values of %q in source 0 and source %d differ beyond the int64 range", t.Type, t.Unit, n, ci)
				}
			}
			comps = append(comps, map[string]any{"candidate": ci, "sample_type": t.Type, "unit": t.Unit, "base_total": contract.Int(btot), "candidate_total": contract.Int(ctot), "delta_total": contract.Int(ctot - btot), "functions": len(names)})
			for rank, n := range names {
				p := byName[n]
				row := map[string]any{
					"candidate": ci, "sample_type": t.Type, "unit": t.Unit, "rank": rank + 1, "function": n,
					"base_flat": contract.Int(p.b.flat), "candidate_flat": contract.Int(p.c.flat), "delta_flat": contract.Int(p.c.flat - p.b.flat),
					"base_cum": contract.Int(p.b.cum), "candidate_cum": contract.Int(p.c.cum), "delta_cum": contract.Int(p.c.cum - p.b.cum),
					"delta_flat_share_points": round6(pct(p.c.flat, ctot) - pct(p.b.flat, btot)),
					"delta_cum_share_points":  round6(pct(p.c.cum, ctot) - pct(p.b.cum, btot)),
				}
				if p.b.flat != 0 {
					row["delta_flat_percent"] = round6(float64(p.c.flat-p.b.flat) / math.Abs(float64(p.b.flat)) * 100)
				} else {
					row["delta_flat_percent"] = nil
				}
				rows = append(rows, row)
			}
		}
	}
	out, err := page(rows, req)
	if err != nil {
		return nil, err
	}
	out.Summary = map[string]any{"comparisons": comps, "base": 0, "sort": map[bool]string{true: "cum", false: "flat"}[byCum],
		"normalization": "share points: candidate value / candidate total - base value / base total, in percentage points of each profile's total"}
	return out, nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
