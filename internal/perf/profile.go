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
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// sampleType is one value dimension of a profile (pprof ValueType).
type sampleType struct {
	Type string `json:"type"`
	Unit string `json:"unit"`
}

// Granularities of profile rows: go tool pprof's default (functions) and
// -addresses.
const (
	granFunctions = 0
	granAddresses = 1
)

// stackProfile is the decoded form both pprof and folded stacks reduce to:
// locations (each one or more frames, inlined frames first), node names per
// granularity, and samples as leaf-first location stacks with one value per
// sample type.
type stackProfile struct {
	types []sampleType
	// nodes[g] are the row names at granularity g, as go tool pprof
	// prints them (functions: "main.f", "[binary]" or "<unknown>";
	// addresses: "%016x main.f file.go:12").
	nodes [2][]string
	// nodeObj[g][i] is the mapping file of node i when its name is only
	// the file's base name ("[libx.so]", an unsymbolized frame), else "".
	// Like pprof (whose node key holds the object file), two mappings
	// with the same base name are two nodes.
	nodeObj [2][]string
	locs    []stackLoc
	samples []stackSample
	meta    map[string]any
	// diffBase is true when some sample carries the label
	// pprof::base=true (what go tool pprof -diff_base writes): the
	// percentage denominator is then the base samples' total.
	diffBase bool
	// warnings and coverage report input rows that were not used
	// (folded lines that are not stacks).
	warnings []string
	coverage map[string]any
}

// stackLoc is one location (a program counter with its frames).
type stackLoc struct {
	nodes [2][]int32 // node ids per granularity, innermost frame first
	// names are what pprof's focus/ignore match: function names, file
	// names and the mapping's file (profile.Location.matchesName).
	names []string
}

type stackSample struct {
	locs   []int32 // leaf first
	values []int64
	base   bool // labelled pprof::base=true
}

// interner assigns node ids per granularity.
type interner struct {
	sp  *stackProfile
	idx [2]map[string]int32
}

func newInterner(sp *stackProfile) *interner {
	return &interner{sp: sp, idx: [2]map[string]int32{{}, {}}}
}

func (in *interner) id(g int, name string) int32 { return in.idObj(g, name, "") }

// idObj is id for a node named after the mapping file obj (an
// unsymbolized frame): nodes of different files are different nodes
// even when their names are equal.
func (in *interner) idObj(g int, name, obj string) int32 {
	key := name
	if obj != "" {
		key = name + "\x00" + obj
	}
	if i, ok := in.idx[g][key]; ok {
		return i
	}
	i := int32(len(in.sp.nodes[g]))
	in.sp.nodes[g] = append(in.sp.nodes[g], name)
	in.sp.nodeObj[g] = append(in.sp.nodeObj[g], obj)
	in.idx[g][key] = i
	return i
}

// nodeKey is the identity of node i at granularity g across profiles:
// its name, and for an unsymbolized frame its mapping file.
func (sp *stackProfile) nodeKey(g, i int) string {
	if o := sp.nodeObj[g][i]; o != "" {
		return sp.nodes[g][i] + "\x00" + o
	}
	return sp.nodes[g][i]
}

// profileFields are the own arguments of summarize_profile and
// compare_profiles (go tool pprof's -sample_index, -top/-cum, -addresses,
// -focus and -ignore).
type profileFields struct {
	SampleType  string `json:"sample_type,omitempty"`
	Sort        string `json:"sort,omitempty"`
	Granularity string `json:"granularity,omitempty"`
	Focus       string `json:"focus,omitempty"`
	Ignore      string `json:"ignore,omitempty"`
}

type profileArgs struct {
	operationArgs
	profileFields
}

func profileFieldSchemas() []Field {
	return []Field{
		{"sample_type", js{"type": "string", "minLength": 1, "maxLength": 128, "description": "Only this sample type."}},
		{"sort", js{"enum": []string{"flat", "cum"}, "description": "pprof -top or -top -cum order."}},
		{"granularity", js{"enum": []string{"functions", "addresses"}, "description": "addresses as pprof -addresses."}},
		{"focus", js{"type": "string", "maxLength": 1024, "description": "Keep samples through a match (pprof -focus, RE2)."}},
		{"ignore", js{"type": "string", "maxLength": 1024, "description": "Drop samples through a match (pprof -ignore, RE2)."}},
	}
}

func summarizeProfileOperation() *Operation {
	return bindOperation(&Operation{
		Name:        "summarize_profile",
		Title:       "Summarize a profile",
		Description: "Summarize one profile (pprof protobuf, legacy pprof or folded stacks) as go tool pprof -top does: per sample type, the total and the functions by flat and cum value with percentages. Required: sources (exactly one).",
		MinSources:  1, MaxSources: 1,
		Formats: []string{FormatPprof, FormatFolded},
		Fields:  profileFieldSchemas(),
	}, func(ctx context.Context, req *Request, a *profileArgs) (*Output, error) {
		return runSummarizeProfile(ctx, req, &a.profileFields)
	})
}

func compareProfilesOperation() *Operation {
	return bindOperation(&Operation{
		Name:        "compare_profiles",
		Title:       "Compare profiles",
		Description: "Compare a base profile (first source) with candidates as go tool pprof -diff_base does: per function and sample type, flat and cum values, deltas, and normalized deltas in percentage points. Required: sources (2-16).",
		MinSources:  2, MaxSources: 16,
		Formats: []string{FormatPprof, FormatFolded},
		Fields:  profileFieldSchemas(),
	}, func(ctx context.Context, req *Request, a *profileArgs) (*Output, error) {
		return runCompareProfiles(ctx, req, &a.profileFields)
	})
}

// loadProfile decodes in. pprof input is decompressed with a bound of
// limits.max_memory_bytes.
func loadProfile(ctx context.Context, in *input, lim Limits) (*stackProfile, error) {
	f, err := os.Open(in.file)
	if err != nil {
		return nil, fieldErr(contract.CodeInputChanged, "/sources/"+itoa(in.index), "source %d can no longer be read", in.index)
	}
	defer f.Close()
	var sp *stackProfile
	switch in.format {
	case FormatPprof:
		var hint int64
		if fi, err := f.Stat(); err == nil {
			hint = gzipSizeHint(f, fi.Size())
		}
		sp, err = loadPprof(ctxReader{ctx, f}, in.index, lim.MaxMemoryBytes, hint)
	case FormatFolded:
		sp, err = decodeFolded(ctx, f, in.index, lim.MaxMemoryBytes)
	default:
		return nil, contract.Errorf(contract.CodeUnsupportedFormat, "profiles are pprof or folded").WithDetail("accepted_formats", []string{FormatPprof, FormatFolded})
	}
	if err != nil {
		return nil, sourceError(err, in.index)
	}
	if err := sp.checkSums(in.index); err != nil {
		return nil, sourceError(err, in.index)
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
		var abs int64
		for si, s := range sp.samples {
			v := s.values[ti]
			ok := v != math.MinInt64
			if ok {
				abs, ok = addChecked(abs, abs64(v))
			}
			if !ok {
				return contract.Errorf(contract.CodeLimitExceeded, "source %d: the %s/%s values sum beyond the int64 range at sample %d, so totals cannot be computed exactly", index, t.Type, t.Unit, si).WithDetail("source", index).WithDetail("sample", si)
			}
		}
	}
	return nil
}

// legacyHeaders are the first-line prefixes of the legacy text profiles
// profile.Parse reads (heap, growth, contention, mutex, thread, cpuz).
var legacyHeaders = []string{"heap profile:", "heap_v2/", "heap:", "--- heapz", "--- contention", "--- mutex", "--- delay", "growth profile:", "heapz", "threadz", "--- threadz", "--- cpuz", "cycles/second="}

func loadPprof(r io.Reader, index int, memCap, sizeHint int64) (*stackProfile, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(2)
	var src io.Reader = br
	gzipped := len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b
	if gzipped {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, decodeFail("source %d is not a valid gzip stream", index)
		}
		src = gz
	}
	data, err := readBounded(src, memCap, sizeHint)
	if err != nil {
		if ce, ok := err.(*contract.Error); ok {
			return nil, ce
		}
		return nil, decodeFail("source %d could not be decompressed: %v", index, sanitize(err))
	}
	if int64(len(data)) > memCap {
		verb := "holds"
		if gzipped {
			verb = "decompresses to"
		}
		return nil, contract.Errorf(contract.CodeLimitExceeded, "source %d %s more than limits.max_memory_bytes (%d bytes); reading stopped there (raise limits.max_memory_bytes for a larger profile)", index, verb, memCap).
			WithDetail("max_memory_bytes", contract.Int(memCap)).WithDetail("bytes_read", contract.Int(int64(len(data))))
	}
	if gzipped && len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		// go tool pprof removes one gzip layer; profile.ParseData would
		// inflate a second one without any bound.
		return nil, decodeFail("source %d is gzip inside gzip; go tool pprof reads one gzip layer (gunzip it once first)", index).WithDetail("recognized", "gzip inside gzip")
	}
	// profile.ParseData reads the protobuf format and every legacy format
	// go tool pprof reads (legacy CPU binary, heap/growth/contention/
	// mutex text, Java profiles). Its legacy text parsers scan lines of at
	// most bufio.MaxScanTokenSize, so when the bytes are neither a legacy
	// CPU profile nor start with such a line no legacy parser can accept
	// them: the protobuf decoder alone gives the same answer without
	// scanning the data six more times.
	var p *profile.Profile
	if mayBeLegacy(data) {
		p, err = profile.ParseData(data)
	} else {
		p, err = profile.ParseUncompressed(data)
		if err != nil {
			err = fmt.Errorf("parsing profile: %v", err)
		}
	}
	if err != nil {
		return nil, decodeFail("source %d is not a profile go tool pprof reads (%s): %v", index, recognizedProfile(data), sanitize(err)).WithDetail("recognized", recognizedProfile(data))
	}
	if err := p.CheckValid(); err != nil {
		return nil, decodeFail("source %d is an inconsistent pprof profile: %v", index, sanitize(err))
	}
	return fromPprof(p), nil
}

// readBounded reads r to its end or until it has read more than limit
// bytes (then it returns limit+1 bytes and stops reading: a decompression
// bomb inflates no further). sizeHint, when positive, is the expected
// length (the gzip trailer's ISIZE), allocated once so the buffer does
// not pass through the doublings of io.ReadAll.
func readBounded(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	lr := io.LimitReader(r, limit+1)
	if sizeHint <= 0 {
		return io.ReadAll(lr)
	}
	buf := make([]byte, 0, min(sizeHint, limit)+1)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// gzipSizeHint is the uncompressed size a gzip file f of size bytes
// declares in its trailer (ISIZE, RFC 1952: the length modulo 2^32 of
// the last member), bounded by deflate's largest ratio (1032:1); 0 when
// f is not gzip or the trailer cannot be read.
func gzipSizeHint(f io.ReaderAt, size int64) int64 {
	var b [4]byte
	if size < 18 {
		return 0
	}
	if _, err := f.ReadAt(b[:2], 0); err != nil || b[0] != 0x1f || b[1] != 0x8b {
		return 0
	}
	if _, err := f.ReadAt(b[:], size-4); err != nil {
		return 0
	}
	isize := int64(b[0]) | int64(b[1])<<8 | int64(b[2])<<16 | int64(b[3])<<24
	return min(isize, size*1032)
}

// mayBeLegacy reports whether a legacy parser of profile.ParseData could
// accept data: a legacy CPU profile header (words 0, 3 in 32- or 64-bit,
// either byte order) or a first line short enough for their
// bufio.Scanner (the text formats' header is on the first line that is
// not blank or a comment, and each line before it must also scan).
func mayBeLegacy(data []byte) bool {
	for _, w := range []int{4, 8} {
		if len(data) < 2*w {
			continue
		}
		le, be := true, true
		for i := 0; i < 2*w; i++ {
			want := byte(0)
			if i == w {
				want = 3
			}
			if data[i] != want {
				le = false
			}
			wantBE := byte(0)
			if i == 2*w-1 {
				wantBE = 3
			}
			if data[i] != wantBE {
				be = false
			}
		}
		if le || be {
			return true
		}
	}
	line := data
	if i := bytes.IndexByte(data[:min(len(data), bufio.MaxScanTokenSize+1)], '\n'); i >= 0 {
		line = data[:i]
	}
	return len(line) <= bufio.MaxScanTokenSize
}

// recognizedProfile names what the bytes look like, for error messages.
func recognizedProfile(data []byte) string {
	t := bytes.TrimLeft(data, " \t\r\n")
	for _, h := range legacyHeaders {
		if bytes.HasPrefix(t, []byte(h)) {
			return "legacy text profile starting " + strconv.Quote(h)
		}
	}
	// A count profile's header (profile.parseGoCount: goroutine,
	// threadcreate, ...): "NAME profile: total N".
	if line, _, _ := bytes.Cut(t, []byte("\n")); legacyCountHeader(bytes.TrimRight(line, "\r")) {
		return "legacy text profile starting " + strconv.Quote(string(line[:bytes.IndexByte(line, ' ')])+" profile: total")
	}
	// The binary CPU profiles profile.parseCPU reads: words 0, 3, then 0
	// (C++ CPU) or 1 (Java CPU), in 32- or 64-bit words of either order.
	for _, w := range []int{8, 4} {
		for _, be := range []bool{false, true} {
			if len(data) < 3*w {
				continue
			}
			word := func(i int) uint64 {
				var v uint64
				for j := 0; j < w; j++ {
					b := data[i*w+j]
					if be {
						v = v<<8 | uint64(b)
					} else {
						v |= uint64(b) << (8 * j)
					}
				}
				return v
			}
			if word(0) == 0 && word(1) == 3 && word(2) <= 1 {
				kind := map[uint64]string{0: "CPU", 1: "Java CPU"}[word(2)]
				order := map[bool]string{false: "little", true: "big"}[be]
				return fmt.Sprintf("legacy %s profile (%d-bit %s-endian words)", kind, 8*w, order)
			}
		}
	}
	if bytes.HasPrefix(data, []byte("PERFILE2")) {
		return "Linux perf.data (convert with perf script | stackcollapse-perf.pl to folded stacks, or perf_data_converter to pprof)"
	}
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return "a JSON document (Chrome traces are read by inspect_trace_window)"
	}
	if len(data) > 0 && data[0] == 0x0a {
		return "protobuf-like bytes"
	}
	return "no known profile header"
}

// legacyCountHeader reports whether line is the header of a legacy count
// profile as profile.parseGoCount matches it (`\A(\S+) profile: total
// \d+\z`).
func legacyCountHeader(line []byte) bool {
	name, rest, ok := bytes.Cut(line, []byte(" profile: total "))
	if !ok || len(name) == 0 || len(rest) == 0 || bytes.ContainsAny(name, " \t\r\n\f\v") {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// sanitize keeps decoder messages but bounds their length.
func sanitize(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// pprofObjOf is the mapping file a node named by pprofFuncName or
// pprofAddrName is distinguished by: the mapping's file when the frame
// has no function name (the name then holds only its base name).
func pprofObjOf(fn *profile.Function, m *profile.Mapping) string {
	if (fn == nil || fn.Name == "") && m != nil {
		return m.File
	}
	return ""
}

// pprofFuncName is go tool pprof's node name at function granularity
// (graph.NodeInfo.NameComponents after Profile.Aggregate with function
// only): the function name, else the mapping file's base name in
// brackets, else <unknown>.
func pprofFuncName(fn *profile.Function, m *profile.Mapping) string {
	if fn != nil && fn.Name != "" {
		return fn.Name
	}
	if m != nil && m.File != "" {
		return "[" + filepath.Base(m.File) + "]"
	}
	return "<unknown>"
}

// pprofAddrName is go tool pprof's node name at -addresses granularity:
// the zero-padded address, the function name, then file:line[:column],
// the file, or the binary.
func pprofAddrName(loc *profile.Location, ln *profile.Line) string {
	var parts []string
	if loc.Address != 0 {
		parts = append(parts, fmt.Sprintf("%016x", loc.Address))
	}
	var name, file string
	var line, col int64
	if ln != nil && ln.Function != nil {
		name, line, col = ln.Function.Name, ln.Line, ln.Column
		if ln.Function.Filename != "" {
			file = filepath.Clean(ln.Function.Filename)
		}
	}
	if name != "" {
		parts = append(parts, name)
	}
	objfile := ""
	if loc.Mapping != nil && (ln == nil || ln.Function == nil || name == "") {
		objfile = loc.Mapping.File
	}
	switch {
	case line != 0:
		s := fmt.Sprintf("%s:%d", file, line)
		if col != 0 {
			s += fmt.Sprintf(":%d", col)
		}
		parts = append(parts, s)
	case file != "":
		parts = append(parts, file)
	case name != "":
	case objfile != "":
		parts = append(parts, "["+filepath.Base(objfile)+"]")
	default:
		parts = append(parts, "<unknown>")
	}
	return strings.Join(parts, " ")
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
	in := newInterner(sp)
	locIdx := make(map[*profile.Location]int32, len(p.Location))
	unsymbolized := 0
	for _, loc := range p.Location {
		var sl stackLoc
		// Line[0] is the innermost frame; every line but the last was
		// inlined into the next. Like go tool pprof, inlined and called
		// frames of one function merge into one node.
		for i := range loc.Line {
			ln := &loc.Line[i]
			obj := pprofObjOf(ln.Function, loc.Mapping)
			sl.nodes[granFunctions] = append(sl.nodes[granFunctions], in.idObj(granFunctions, pprofFuncName(ln.Function, loc.Mapping), obj))
			sl.nodes[granAddresses] = append(sl.nodes[granAddresses], in.idObj(granAddresses, pprofAddrName(loc, ln), obj))
			if ln.Function != nil {
				sl.names = append(sl.names, ln.Function.Name, ln.Function.Filename)
			}
		}
		if len(loc.Line) == 0 {
			unsymbolized++
			obj := pprofObjOf(nil, loc.Mapping)
			sl.nodes[granFunctions] = []int32{in.idObj(granFunctions, pprofFuncName(nil, loc.Mapping), obj)}
			sl.nodes[granAddresses] = []int32{in.idObj(granAddresses, pprofAddrName(loc, nil), obj)}
		}
		if loc.Mapping != nil {
			sl.names = append(sl.names, loc.Mapping.File)
		}
		locIdx[loc] = int32(len(sp.locs))
		sp.locs = append(sp.locs, sl)
	}
	if unsymbolized > 0 {
		sp.meta["unsymbolized_locations"] = unsymbolized
	}
	sp.samples = make([]stackSample, len(p.Sample))
	for i, s := range p.Sample {
		ls := make([]int32, len(s.Location))
		for j, loc := range s.Location {
			ls[j] = locIdx[loc]
		}
		base := s.DiffBaseSample()
		sp.diffBase = sp.diffBase || base
		sp.samples[i] = stackSample{locs: ls, values: s.Value, base: base}
	}
	return sp
}

// foldedDecoder turns UTF-8 (with or without BOM) and UTF-16 with a
// byte-order mark into UTF-8; invalid bytes become U+FFFD.
func foldedDecoder(r io.Reader) io.Reader {
	return transform.NewReader(r, unicode.BOMOverride(unicode.UTF8.NewDecoder()))
}

// maxReportedLines bounds the line numbers listed for skipped folded lines.
const maxReportedLines = 5

// splitFoldedLine splits one non-blank folded line (line terminator
// removed) into its stack and count the way flamegraph.pl and speedscope
// do: the count is the run of ASCII digits ending the line, preceded by one
// space or tab; everything before that separator, other whitespace
// included, is the stack ("a  5" is frame "a " with count 5). why is
// non-empty, naming the reason, when the line is not a stack: no such
// count (a comment, a signed, fractional or missing count, whitespace
// after the count) or a count beyond int64.
func splitFoldedLine(b []byte) (stack []byte, n int64, why string) {
	i := len(b)
	for i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
		i--
	}
	switch {
	case i == len(b) && (b[i-1] == ' ' || b[i-1] == '\t'):
		return nil, 0, "whitespace after the count"
	case i == len(b):
		return nil, 0, "no count at the end of the line (\"frames COUNT\")"
	case i == 0 || (b[i-1] != ' ' && b[i-1] != '\t'):
		return nil, 0, "the count is not a non-negative integer after a space or tab"
	}
	n, err := strconv.ParseInt(string(b[i:]), 10, 64)
	if err != nil {
		return nil, 0, "the count exceeds 9223372036854775807"
	}
	return b[:i-1], n, ""
}

// decodeFolded reads folded (collapsed) stacks, one "frame;frame;leaf COUNT"
// per line, root first (Brendan Gregg's stackcollapse format), in UTF-8 or
// UTF-16 with a byte-order mark; LF or CRLF line ends. Blank lines
// are skipped. Like flamegraph.pl and speedscope, lines that are not a
// stack (see splitFoldedLine) are skipped; so are lines with an empty
// frame (which speedscope keeps as a frame named ""). Both are counted in
// coverage.invalid_lines with the first line numbers, and make the result
// partial; a file with no stack line is DECODE_FAILED.
func decodeFolded(ctx context.Context, r io.Reader, index int, memCap int64) (*stackProfile, error) {
	sp := &stackProfile{types: []sampleType{{"samples", "count"}}, meta: map[string]any{}}
	in := newInterner(sp)
	locIdx := map[int32]int32{}
	br := bufio.NewReaderSize(foldedDecoder(r), 64<<10)
	var held, foldedSum, invalid int64
	var firstInvalid []int64
	var reasons []string
	bad := func(line int64, why string) {
		invalid++
		if len(firstInvalid) < maxReportedLines {
			firstInvalid = append(firstInvalid, line)
			reasons = append(reasons, fmt.Sprintf("line %d: %s", line, why))
		}
	}
	var lines int64
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
		lines = line
		b = bytes.TrimRight(b, "\r\n")
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		stackPart, n, why := splitFoldedLine(b)
		if why != "" {
			bad(line, why)
			continue
		}
		frames := bytes.Split(stackPart, []byte(";"))
		empty := false
		for _, fr := range frames {
			if len(fr) == 0 {
				empty = true
			}
		}
		if empty {
			bad(line, "empty frame name")
			continue
		}
		stack := make([]int32, len(frames))
		for i, fr := range frames {
			name := string(bytes.ToValidUTF8(fr, []byte("\uFFFD")))
			before := len(sp.nodes[granFunctions])
			id := in.id(granFunctions, name)
			if len(sp.nodes[granFunctions]) > before {
				held += int64(len(name)) + 32
			}
			li, ok := locIdx[id]
			if !ok {
				li = int32(len(sp.locs))
				// Folded frames have no addresses: both granularities
				// name the frame.
				sp.locs = append(sp.locs, stackLoc{nodes: [2][]int32{{id}, {in.id(granAddresses, name)}}, names: []string{name}})
				locIdx[id] = li
			}
			stack[len(frames)-1-i] = li // leaf first
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
		sp.samples = append(sp.samples, stackSample{locs: stack, values: []int64{n}})
	}
	if len(sp.samples) == 0 {
		e := decodeFail("source %d has no folded stack lines (\"frame;frame;leaf COUNT\")", index)
		if invalid > 0 {
			e = e.WithDetail("invalid_lines", contract.Int(invalid)).WithDetail("first_invalid", reasons)
		}
		return nil, e
	}
	sp.coverage = map[string]any{"lines": contract.Int(lines), "invalid_lines": contract.Int(invalid)}
	if invalid > 0 {
		sp.coverage["first_invalid_lines"] = firstInvalid
		sp.warnings = append(sp.warnings, fmt.Sprintf("source %d: %d line(s) are not folded stacks and were skipped (%s); see coverage.invalid_lines", index, invalid, strings.Join(reasons, "; ")))
	}
	return sp, nil
}

type funcStat struct {
	flat, cum int64
}

// aggregate returns per-node flat and cum values of sample type ti at
// granularity g over the samples kept by focus/ignore, and their sum. flat
// goes to the innermost frame of the leaf location; cum counts a node once
// per sample even when it recurs (go tool pprof's graph).
func (sp *stackProfile) aggregate(ti, g int, keep []bool) ([]funcStat, int64) {
	stats := make([]funcStat, len(sp.nodes[g]))
	mark := make([]int32, len(sp.nodes[g]))
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
		first := true
		for _, li := range s.locs {
			for _, f := range sp.locs[li].nodes[g] {
				if first {
					stats[f].flat += v
					first = false
				}
				if mark[f] != int32(si) {
					mark[f] = int32(si)
					stats[f].cum += v
				}
			}
		}
	}
	return stats, total
}

// total is go tool pprof's percentage denominator of sample type ti (also
// under focus/ignore): the sum of absolute sample values, or of the
// samples labelled pprof::base=true when there are any (report.computeTotal).
func (sp *stackProfile) total(ti int) int64 {
	var t, base int64
	for _, s := range sp.samples {
		v := abs64(s.values[ti])
		t += v
		if s.base {
			base += v
		}
	}
	if base > 0 {
		return base
	}
	return t
}

// filter applies focus and ignore like pprof's Profile.FilterSamplesByName:
// a location matches when a frame's function or file name, or its
// mapping's file, matches; a sample is kept when no location matches
// ignore and some location matches focus (or is not ignored, without
// focus). It returns the sample mask (nil when neither is set).
func (sp *stackProfile) filter(focus, ignore *regexp.Regexp) []bool {
	if focus == nil && ignore == nil {
		return nil
	}
	match := func(re *regexp.Regexp, names []string) bool {
		for _, n := range names {
			if re.MatchString(n) {
				return true
			}
		}
		return false
	}
	// state: 0 neither, 1 focused, 2 ignored
	state := make([]uint8, len(sp.locs))
	for i, l := range sp.locs {
		switch {
		case ignore != nil && match(ignore, l.names):
			state[i] = 2
		case focus == nil || match(focus, l.names):
			state[i] = 1
		}
	}
	keep := make([]bool, len(sp.samples))
	for si, s := range sp.samples {
		f := false
		for _, li := range s.locs {
			if state[li] == 2 {
				f = false
				break
			}
			f = f || state[li] == 1
		}
		keep[si] = f
	}
	return keep
}

func granularity(f *profileFields) int {
	if f.Granularity == "addresses" {
		return granAddresses
	}
	return granFunctions
}

func compileFilters(f *profileFields) (*regexp.Regexp, *regexp.Regexp, error) {
	var focus, ignore *regexp.Regexp
	var err error
	if s := f.Focus; s != "" {
		if focus, err = regexp.Compile(s); err != nil {
			return nil, nil, fieldErr(contract.CodeInvalidArgument, "/focus", "focus is not a valid RE2 regular expression")
		}
	}
	if s := f.Ignore; s != "" {
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

// pct is v as a percentage of total, unrounded (signed: go tool pprof
// prints its magnitude); 0 when total is 0.
func pct(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return float64(v) / float64(total) * 100
}

func round6(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1e6) / 1e6
}

// page slices rows for the request's start position and max rows.
func page(rows []any, req *Request) (*Output, error) {
	return pageFunc(int64(len(rows)), func(i int64) any { return rows[i] }, req)
}

// pageFunc is page over n rows that row(i) builds on demand: only the
// rows offered to the page are built.
func pageFunc(n int64, row func(i int64) any, req *Request) (*Output, error) {
	start := req.Start.Row
	if start > n {
		start = n
	}
	p := newPager(req, start)
	p.seen = start
	for i := start; i < n && !p.full(); i++ {
		p.offer(func() any { return row(i) })
	}
	if p.err != nil {
		return nil, p.err
	}
	out := &Output{Total: n, Rows: p.rows}
	if p.seen < n {
		out.Next = &evidence.Position{Row: p.seen}
	}
	p.noteBudget(out)
	return out, nil
}

func sortName(byCum bool) string {
	if byCum {
		return "cum"
	}
	return "flat"
}

func runSummarizeProfile(ctx context.Context, req *Request, f *profileFields) (*Output, error) {
	focus, ignore, err := compileFilters(f)
	if err != nil {
		return nil, err
	}
	sp, err := loadProfile(ctx, req.Inputs[0], req.Limits)
	if err != nil {
		return nil, err
	}
	tis, err := sp.selectTypes(f.SampleType)
	if err != nil {
		return nil, err
	}
	g := granularity(f)
	names := sp.nodes[g]
	byCum := f.Sort == "cum"
	keep := sp.filter(focus, ignore)
	var rows []any
	var types []any
	for _, ti := range tis {
		stats, keptTotal := sp.aggregate(ti, g, keep)
		total := sp.total(ti)
		idx := make([]int, 0, len(stats))
		for i, s := range stats {
			if s.flat != 0 || s.cum != 0 {
				idx = append(idx, i)
			}
		}
		sortNodes(idx, names, func(i int) string { return sp.nodeObj[g][i] }, byCum, func(i int) int64 { return stats[i].flat }, func(i int) int64 { return stats[i].cum })
		t := sp.types[ti]
		types = append(types, map[string]any{"type": t.Type, "unit": t.Unit, "total": contract.Int(total), "total_kept": contract.Int(keptTotal), "functions": len(idx)})
		for rank, i := range idx {
			s := stats[i]
			row := map[string]any{
				"sample_type": t.Type, "unit": t.Unit, "rank": rank + 1, "function": names[i],
				"flat": contract.Int(s.flat), "flat_percent": pct(s.flat, total),
				"cum": contract.Int(s.cum), "cum_percent": pct(s.cum, total),
			}
			if o := sp.nodeObj[g][i]; o != "" {
				row["mapping"] = o
			}
			rows = append(rows, row)
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
	out.Summary = map[string]any{"format": req.Inputs[0].format, "sample_types": types, "samples": len(sp.samples), "samples_kept": kept, "functions": len(names), "sort": sortName(byCum), "granularity": []string{"functions", "addresses"}[g],
		"total_definition": "sum of absolute sample values (of the pprof::base samples when present), as go tool pprof"}
	for k, v := range sp.meta {
		out.Summary[k] = v
	}
	sp.report(out)
	return out, nil
}

// report adds the profile's unused-input coverage and warnings to out.
func (sp *stackProfile) report(out *Output) {
	if len(sp.coverage) > 0 && out.Coverage == nil {
		out.Coverage = map[string]any{}
	}
	for k, v := range sp.coverage {
		out.Coverage[k] = v
	}
	out.Warnings = append(out.Warnings, sp.warnings...)
}

// sortNodes orders node indices like go tool pprof -top (FlatNameOrder)
// or -top -cum (CumNameOrder): absolute primary value descending, then
// name, then absolute secondary value descending.
func sortNodes(idx []int, names []string, obj func(int) string, byCum bool, flat, cum func(int) int64) {
	primary, secondary := flat, cum
	if byCum {
		primary, secondary = cum, flat
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := idx[a], idx[b]
		if p, q := abs64(primary(x)), abs64(primary(y)); p != q {
			return p > q
		}
		if names[x] != names[y] {
			return names[x] < names[y]
		}
		if obj != nil && obj(x) != obj(y) {
			// Two nodes printed alike (unsymbolized frames of two
			// mappings with one base name): pprof's order keeps them
			// as they were created, in location order.
			return false
		}
		return abs64(secondary(x)) > abs64(secondary(y))
	})
}

func runCompareProfiles(ctx context.Context, req *Request, f *profileFields) (*Output, error) {
	focus, ignore, err := compileFilters(f)
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
	tis, err := base.selectTypes(f.SampleType)
	if err != nil {
		return nil, err
	}
	g := granularity(f)
	byCum := f.Sort == "cum"
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
			bs, _ := base.aggregate(ti, g, baseKeep)
			cs, _ := cand.aggregate(cti, g, candKeep)
			btot, ctot := base.total(ti), cand.total(cti)
			// Nodes pair by name, and unsymbolized frames also by
			// mapping file (nodeKey), as pprof -diff_base pairs them.
			type pair struct {
				b, c      funcStat
				name, obj string
			}
			byName := map[string]*pair{}
			var names []string
			for i, s := range bs {
				if s.flat != 0 || s.cum != 0 {
					k := base.nodeKey(g, i)
					byName[k] = &pair{b: s, name: base.nodes[g][i], obj: base.nodeObj[g][i]}
					names = append(names, k)
				}
			}
			for i, s := range cs {
				if s.flat == 0 && s.cum == 0 {
					continue
				}
				k := cand.nodeKey(g, i)
				if p, ok := byName[k]; ok {
					p.c = s
				} else {
					byName[k] = &pair{c: s, name: cand.nodes[g][i], obj: cand.nodeObj[g][i]}
					names = append(names, k)
				}
			}
			if _, ok := subChecked(ctot, btot); !ok {
				return nil, contract.Errorf(contract.CodeLimitExceeded, "the %s/%s totals of source 0 and source %d differ beyond the int64 range", t.Type, t.Unit, ci)
			}
			for _, n := range names {
				p := byName[n]
				_, ok1 := subChecked(p.c.flat, p.b.flat)
				_, ok2 := subChecked(p.c.cum, p.b.cum)
				if !ok1 || !ok2 {
					return nil, contract.Errorf(contract.CodeLimitExceeded, "the %s/%s values of %q in source 0 and source %d differ beyond the int64 range", t.Type, t.Unit, p.name, ci)
				}
			}
			idx := make([]int, len(names))
			for i := range idx {
				idx[i] = i
			}
			shown := make([]string, len(names))
			for i, k := range names {
				shown[i] = byName[k].name
			}
			sortNodes(idx, shown, func(i int) string { return byName[names[i]].obj }, byCum, func(i int) int64 { p := byName[names[i]]; return p.c.flat - p.b.flat }, func(i int) int64 { p := byName[names[i]]; return p.c.cum - p.b.cum })
			comps = append(comps, map[string]any{"candidate": ci, "sample_type": t.Type, "unit": t.Unit, "base_total": contract.Int(btot), "candidate_total": contract.Int(ctot), "delta_total": contract.Int(ctot - btot), "functions": len(names)})
			for rank, i := range idx {
				p := byName[names[i]]
				df, dc := p.c.flat-p.b.flat, p.c.cum-p.b.cum
				row := map[string]any{
					"candidate": ci, "sample_type": t.Type, "unit": t.Unit, "rank": rank + 1, "function": p.name,
					"base_flat": contract.Int(p.b.flat), "candidate_flat": contract.Int(p.c.flat), "delta_flat": contract.Int(df),
					"base_cum": contract.Int(p.b.cum), "candidate_cum": contract.Int(p.c.cum), "delta_cum": contract.Int(dc),
					"diff_base_flat_percent":  pct(df, btot),
					"diff_base_cum_percent":   pct(dc, btot),
					"delta_flat_share_points": round6(pct(p.c.flat, ctot) - pct(p.b.flat, btot)),
					"delta_cum_share_points":  round6(pct(p.c.cum, ctot) - pct(p.b.cum, btot)),
				}
				if p.obj != "" {
					row["mapping"] = p.obj
				}
				// A percentage of a zero total is undefined (pprof
				// prints 0%): unknown, with the reason.
				if btot == 0 {
					row["diff_base_flat_percent"], row["diff_base_cum_percent"] = nil, nil
					row["delta_flat_share_points"], row["delta_cum_share_points"] = nil, nil
					row["percent_unknown_reason"] = "the base total is 0, so percentages of it are undefined"
				} else if ctot == 0 {
					row["delta_flat_share_points"], row["delta_cum_share_points"] = nil, nil
					row["percent_unknown_reason"] = "the candidate total is 0, so shares of it are undefined"
				}
				if p.b.flat != 0 {
					row["delta_flat_percent"] = round6(float64(df) / math.Abs(float64(p.b.flat)) * 100)
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
	out.Summary = map[string]any{"comparisons": comps, "base": 0, "sort": sortName(byCum), "granularity": []string{"functions", "addresses"}[g],
		"normalization": "share points: candidate value / candidate total - base value / base total, in percentage points of each profile's total; diff_base_*_percent: delta / base total (go tool pprof -diff_base)"}
	for _, sp := range profs {
		sp.report(out)
	}
	return out, nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
