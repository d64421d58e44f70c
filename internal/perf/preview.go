package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/jsontext"
)

// maxLine bounds one text line, JSONL record or CSV record held in memory
// (further bounded by limits.max_memory_bytes).
const maxLine = 1 << 20

func previewOperation() *Operation {
	return &Operation{
		Name:  "preview_artifact",
		Title: "Preview an artifact",
		Description: "Preview one artifact as bounded pages of logical rows: text lines (or text_fragment_chars fragments of long lines), JSON entries, JSONL records or CSV data records. " +
			"Required: sources (exactly one). Optional: offset (first row, zero-based; at or beyond the end is INVALID_ARGUMENT), text_fragment_chars (1-4096 decoded characters per fragment, text only), page_size, limits, continuation. " +
			"JSON: a root array yields its elements; a root scalar one value row; at a root object arrays yield section rows, scalar fields key/value rows, nested objects key/type summaries. CSV rejects duplicate headers and ragged records. Integral numbers beyond ±2^53-1 become exact decimal strings. Invalid UTF-8 in text is replaced. " +
			"Bounds: a line, CSV record or JSON string over 1 MiB, or JSON nested over 512 levels, is LIMIT_EXCEEDED; a page stops early (with next_page) before its rows pass about 1.8 MiB encoded, and a single larger row is RESULT_TOO_LARGE.",
		MinSources: 1, MaxSources: 1,
		Formats: []string{FormatText, FormatJSON, FormatJSONL, FormatCSV},
		Fields: []Field{
			{"offset", map[string]any{"type": "integer", "minimum": 0, "description": "Zero-based index of the first logical row of the first page."}},
			{"text_fragment_chars", map[string]any{"type": "integer", "minimum": 1, "maximum": 4096, "description": "Split text lines into fragments of at most this many decoded characters; rows then count fragments. Text sources only."}},
		},
		Run: runPreview,
	}
}

type textState struct {
	Byte     int64 `json:"b"`
	Line     int64 `json:"l"`
	Fragment int64 `json:"f,omitempty"`
}

func runPreview(ctx context.Context, req *Request) (*Output, error) {
	in := req.Inputs[0]
	frag, hasFrag, err := intField(req.Fields, "text_fragment_chars")
	if err != nil {
		return nil, err
	}
	if hasFrag && in.format != FormatText {
		return nil, fieldErr(contract.CodeInvalidArgument, "/text_fragment_chars", "text_fragment_chars requires a text source; this source is %s", in.format)
	}
	offset, _, err := intField(req.Fields, "offset")
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fieldErr(contract.CodeInvalidArgument, "/offset", "offset must not be negative")
	}
	f, err := os.Open(in.file)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "the source can no longer be read")
	}
	defer f.Close()
	lineCap := int64(maxLine)
	if req.Limits.MaxMemoryBytes < lineCap {
		lineCap = req.Limits.MaxMemoryBytes
	}
	p := newPager(req, req.Start.Row)
	if !req.Resuming {
		p.start = offset
	}
	var out *Output
	switch in.format {
	case FormatText:
		out, err = previewText(ctx, f, req, p, int(frag), lineCap)
	case FormatJSONL:
		out, err = previewJSONL(ctx, f, req, p, lineCap)
	case FormatCSV:
		out, err = previewCSV(ctx, f, req, p)
	case FormatJSON:
		out, err = previewJSON(ctx, f, req, p, req.Limits.MaxMemoryBytes)
	default:
		return nil, contract.Errorf(contract.CodeUnsupportedFormat, "preview_artifact does not read %s", in.format).WithDetail("accepted_formats", []string{FormatText, FormatJSON, FormatJSONL, FormatCSV})
	}
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	if !req.Resuming && offset > 0 && len(out.Rows) == 0 {
		return nil, fieldErr(contract.CodeInvalidArgument, "/offset", "offset %d is at or beyond the end of the source", offset).WithDetail("rows_available", contract.Int(p.seen))
	}
	if out.Summary == nil {
		out.Summary = map[string]any{}
	}
	p.noteBudget(out)
	out.Summary["format"] = in.format
	if hasFrag {
		out.Summary["text_fragment_chars"] = frag
		out.Summary["row_unit"] = "fragment"
	} else {
		out.Summary["row_unit"] = map[string]string{FormatText: "line", FormatJSON: "entry", FormatJSONL: "record", FormatCSV: "record"}[in.format]
	}
	return out, nil
}

// pager counts logical rows: rows before start are skipped, max are kept,
// and the page also stops before its rows' encoded bytes pass budget
// (pageBudget, lowered by limits.max_memory_bytes; 0 means pageBudget).
type pager struct {
	max   int
	start int64
	seen  int64 // logical rows visited so far (absolute index of the next)
	rows  []any

	budget  int64
	bytes   int64
	stopped bool  // the byte budget ended the page before max rows
	err     error // RESULT_TOO_LARGE: one row alone passes the budget
}

func (p *pager) full() bool { return p.stopped || p.err != nil || len(p.rows) >= p.max }

// offer visits row index p.seen; it keeps it when in the page. It returns
// false when the row was not consumed because the page's byte budget
// ended the page before it: the caller must not advance past it (p.seen
// is not advanced), so next_page starts at that row.
func (p *pager) offer(row func() any) bool {
	if p.seen >= p.start && !p.full() {
		r := row()
		n, err := rowBytes(r)
		budget := p.budget
		if budget <= 0 {
			budget = pageBudget
		}
		// Count the rows as the encoded array: "[]" plus a separator per row.
		if p.bytes == 0 {
			p.bytes = 2
		}
		n++
		if err == nil && p.bytes+n > budget {
			if len(p.rows) == 0 {
				err = contract.Errorf(contract.CodeResultTooLarge, "row %d alone encodes to %d bytes, more than the %d-byte page budget; narrow it (text_fragment_chars for long text lines)", p.seen, n, budget).WithDetail("row", p.seen).WithDetail("row_bytes", n).WithDetail("budget_bytes", budget)
			} else {
				p.stopped = true
				return false
			}
		}
		if err != nil {
			p.err = err
			return false
		}
		p.bytes += n
		p.rows = append(p.rows, r)
	}
	p.seen++
	return true
}

// noteBudget records in out's coverage and warnings that the byte budget,
// not page_size, ended the page.
func (p *pager) noteBudget(out *Output) {
	if !p.stopped {
		return
	}
	if out.Coverage == nil {
		out.Coverage = map[string]any{}
	}
	out.Coverage["page_ended_by"] = "byte_budget"
	out.Coverage["page_budget_bytes"] = p.budget
	out.Warnings = append(out.Warnings, fmt.Sprintf("the page ended after %d rows because the next row would pass the %d-byte page budget (about 4 MiB per response; limits.max_memory_bytes lowers it); next_page continues", len(p.rows), p.budget))
}

// newPager returns the pager of one call.
func newPager(req *Request, start int64) *pager {
	b := int64(pageBudget)
	if req.Limits.MaxMemoryBytes > 0 && req.Limits.MaxMemoryBytes < b {
		b = req.Limits.MaxMemoryBytes
	}
	return &pager{max: req.Limits.MaxRows, start: start, budget: b}
}

func decodeFail(format string, args ...any) *contract.Error {
	return contract.Errorf(contract.CodeDecodeFailed, format, args...)
}

// readLine reads one line (with its LF) up to cap bytes; longer lines are
// LIMIT_EXCEEDED. It returns io.EOF only when nothing was read.
func readLine(r *bufio.Reader, cap int64, lineNo int64) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if err == nil && buf == nil && int64(len(chunk)) <= cap {
			return chunk, nil // valid until the next read: callers copy
		}
		if int64(len(buf)+len(chunk)) > cap {
			return nil, contract.Errorf(contract.CodeLimitExceeded, "line %d is longer than %d bytes; use text_fragment_chars to page through it", lineNo, cap).WithDetail("line", lineNo)
		}
		buf = append(buf, chunk...)
		if err == nil {
			return buf, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(buf) == 0 {
				return nil, io.EOF
			}
			return buf, nil
		}
		return nil, contract.Errorf(contract.CodeInputChanged, "the source could not be read")
	}
}

func seekState(f *os.File, req *Request) (textState, error) {
	var st textState
	if req.Resuming && len(req.Start.State) > 0 {
		if err := json.Unmarshal(req.Start.State, &st); err != nil || st.Byte < 0 || st.Byte > req.Inputs[0].size {
			return st, contract.Errorf(contract.CodeCursorInvalid, "the continuation is malformed")
		}
		if _, err := f.Seek(st.Byte, io.SeekStart); err != nil {
			return st, contract.Errorf(contract.CodeInputChanged, "the source could not be read")
		}
	}
	return st, nil
}

func previewText(ctx context.Context, f *os.File, req *Request, p *pager, frag int, lineCap int64) (*Output, error) {
	st, err := seekState(f, req)
	if err != nil {
		return nil, err
	}
	if req.Resuming {
		p.seen = req.Start.Row
	}
	r := bufio.NewReaderSize(f, 64<<10)
	off := st.Byte
	line := st.Line
	if frag > 0 {
		return previewFragments(ctx, r, req, p, frag, st)
	}
	for !p.full() {
		if p.seen%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b, err := readLine(r, lineCap, line+1)
		if err == io.EOF {
			return &Output{Rows: p.rows, Total: p.seen}, nil
		}
		if err != nil {
			return nil, err
		}
		off += int64(len(b))
		line++
		ln := line
		if !p.offer(func() any {
			term := bytes.HasSuffix(b, []byte("\n"))
			body := bytes.TrimSuffix(b, []byte("\n"))
			var text string
			if utf8.Valid(body) {
				text = string(body)
			} else {
				text = strings.ToValidUTF8(string(body), "\uFFFD")
			}
			return map[string]any{"line": ln, "text": text, "line_terminated": term}
		}) {
			off -= int64(len(b))
			line--
			break
		}
	}
	if _, err := r.Peek(1); err == io.EOF && !p.stopped {
		return &Output{Rows: p.rows, Total: p.seen}, nil
	}
	st = textState{Byte: off, Line: line}
	sb, _ := json.Marshal(st)
	return &Output{Rows: p.rows, Total: -1, Next: &evidence.Position{Row: p.seen, State: sb}}, nil
}

func previewFragments(ctx context.Context, r *bufio.Reader, req *Request, p *pager, n int, st textState) (*Output, error) {
	off, line, fragIdx := st.Byte, st.Line, st.Fragment
	if line == 0 {
		line = 1
	}
	var sb strings.Builder
	for !p.full() {
		if p.seen%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sb.Reset()
		fragStart := off
		chars, term := 0, false
		for chars < n {
			c, size, err := r.ReadRune()
			if err != nil {
				break
			}
			off += int64(size)
			sb.WriteRune(c) // invalid bytes decode as U+FFFD
			chars++
			if c == '\n' {
				term = true
				break
			}
		}
		if chars == 0 {
			return &Output{Rows: p.rows, Total: p.seen}, nil
		}
		ln, fi, text := line, fragIdx, sb.String()
		if !p.offer(func() any {
			return map[string]any{"line": ln, "fragment": fi, "text": text, "line_terminated": term}
		}) {
			off = fragStart
			break
		}
		if term {
			line++
			fragIdx = 0
		} else {
			fragIdx++
		}
	}
	if _, err := r.Peek(1); err == io.EOF && !p.stopped {
		return &Output{Rows: p.rows, Total: p.seen}, nil
	}
	b, _ := json.Marshal(textState{Byte: off, Line: line, Fragment: fragIdx})
	return &Output{Rows: p.rows, Total: -1, Next: &evidence.Position{Row: p.seen, State: b}}, nil
}

// canon is the canonical value projection: integers beyond the
// interoperable JSON range (±2^53-1) and non-finite numbers become strings.
func canon(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			if i > 1<<53-1 || i < -(1<<53-1) {
				return string(t)
			}
			if i == 0 && strings.HasPrefix(string(t), "-") {
				return math.Copysign(0, -1) // -0 stays negative zero
			}
			return i
		}
		if !strings.ContainsAny(string(t), ".eE") {
			return string(t) // integer beyond int64
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return string(t)
		}
		if math.Abs(f) > 1<<53-1 {
			// Beyond ±(2^53-1) a float64 no longer holds every integer:
			// an integral literal (1e20) becomes its exact decimal string,
			// any other literal is kept verbatim.
			if boundedExponent(string(t)) {
				if r, ok := new(big.Rat).SetString(string(t)); ok && r.IsInt() {
					return r.Num().String()
				}
			}
			return string(t)
		}
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = canon(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = canon(e)
		}
		return t
	}
	return v
}

func previewJSONL(ctx context.Context, f *os.File, req *Request, p *pager, lineCap int64) (*Output, error) {
	st, err := seekState(f, req)
	if err != nil {
		return nil, err
	}
	if req.Resuming {
		p.seen = req.Start.Row
	}
	rows, next, total, err := decodeJSONL(ctx, bufio.NewReaderSize(f, 64<<10), p, st, lineCap)
	if err != nil {
		return nil, err
	}
	return &Output{Rows: rows, Next: next, Total: total}, nil
}

// decodeJSONL reads JSON Lines records (RFC 8259 values, one per LF-ended
// line; a CR before LF is allowed; invalid UTF-8 and blank lines are
// DECODE_FAILED) into p.
func decodeJSONL(ctx context.Context, r *bufio.Reader, p *pager, st textState, lineCap int64) ([]any, *evidence.Position, int64, error) {
	off, line := st.Byte, st.Line
	for !p.full() {
		if p.seen%1024 == 0 && ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		b, err := readLine(r, lineCap, line+1)
		if err == io.EOF {
			return p.rows, nil, p.seen, nil
		}
		if err != nil {
			return nil, nil, 0, err
		}
		off += int64(len(b))
		line++
		body := bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
		if line == 1 {
			// A UTF-8 byte-order mark before the first record is skipped;
			// UTF-16/32 text is named (not "invalid UTF-8").
			body, _ = jsontext.StripBOM(body)
			if prob := jsontext.Encoding(body); prob != nil {
				return nil, nil, 0, decodeFail("%s", prob.Message("the JSONL file")).WithDetail("problem", prob.Kind)
			}
		}
		if !utf8.Valid(body) {
			return nil, nil, 0, decodeFail("JSONL line %d is not valid UTF-8", line).WithDetail("line", line)
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, nil, 0, decodeFail("JSONL line %d is blank", line).WithDetail("line", line)
		}
		if err := checkJSONBytes(body, "JSONL line "+strconv.FormatInt(line, 10)); err != nil {
			return nil, nil, 0, err
		}
		if p.seen < p.start {
			if !json.Valid(body) {
				return nil, nil, 0, decodeFail("JSONL line %d is not a JSON value", line).WithDetail("line", line)
			}
			p.seen++
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, 0, decodeFail("JSONL line %d is not a JSON value", line).WithDetail("line", line)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, nil, 0, decodeFail("JSONL line %d holds more than one JSON value", line).WithDetail("line", line)
		}
		ln := line
		rec := p.seen
		if !p.offer(func() any { return map[string]any{"record": rec, "line": ln, "value": canon(v)} }) {
			off -= int64(len(b))
			line--
			break
		}
	}
	if _, err := r.Peek(1); err == io.EOF && !p.stopped {
		return p.rows, nil, p.seen, nil
	}
	sb, _ := json.Marshal(textState{Byte: off, Line: line})
	return p.rows, &evidence.Position{Row: p.seen, State: sb}, -1, nil
}

func previewCSV(ctx context.Context, f *os.File, req *Request, p *pager) (*Output, error) {
	header, hdrEnd, err := readCSVHeader(f)
	if err != nil {
		return nil, err
	}
	st := textState{Byte: hdrEnd}
	if req.Resuming && len(req.Start.State) > 0 {
		if err := json.Unmarshal(req.Start.State, &st); err != nil || st.Byte < hdrEnd || st.Byte > req.Inputs[0].size {
			return nil, contract.Errorf(contract.CodeCursorInvalid, "the continuation is malformed")
		}
		p.seen = req.Start.Row
	}
	if _, err := f.Seek(st.Byte, io.SeekStart); err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "the source could not be read")
	}
	rows, next, total, err := decodeCSV(ctx, &recordLimiter{r: f, max: maxValueBytes + 64<<10}, header, p, st.Byte)
	if err != nil {
		return nil, err
	}
	return &Output{Rows: rows, Next: next, Total: total, Summary: map[string]any{"header": header}}, nil
}

// errRecordTooLong is recordLimiter's error.
var errRecordTooLong = errors.New("CSV record too long")

// recordLimiter bounds the bytes a CSV reader may pull for one record
// (reset by the caller after every record), so a huge cell is
// LIMIT_EXCEEDED instead of being held whole.
type recordLimiter struct {
	r      io.Reader
	n, max int64
}

func (l *recordLimiter) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, errRecordTooLong
	}
	k, err := l.r.Read(p)
	l.n += int64(k)
	return k, err
}

func readCSVHeader(r io.Reader) ([]string, int64, error) {
	cr := csv.NewReader(&recordLimiter{r: r, max: maxValueBytes + 64<<10})
	cr.FieldsPerRecord = -1
	h, err := cr.Read()
	if err == io.EOF {
		return []string{}, 0, nil
	}
	if err != nil {
		return nil, 0, csvErr(err)
	}
	seen := map[string]bool{}
	for i, name := range h {
		if !utf8.ValidString(name) {
			return nil, 0, decodeFail("CSV header field %d is not valid UTF-8", i+1)
		}
		if seen[name] {
			return nil, 0, decodeFail("CSV header repeats the column name at field %d; duplicate headers are rejected", i+1).WithDetail("field", i+1)
		}
		seen[name] = true
	}
	return h, cr.InputOffset(), nil
}

func csvErr(err error) *contract.Error {
	if errors.Is(err, errRecordTooLong) {
		return contract.Errorf(contract.CodeLimitExceeded, "a CSV record is longer than the per-record limit of %d bytes", maxValueBytes).WithDetail("limit_bytes", maxValueBytes)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := "CSV record starting at line %d is malformed (%s)"
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "CSV record starting at line %d is ragged (%s): every record must have the header's field count"
		}
		return decodeFail(msg, pe.StartLine, pe.Err.Error()).WithDetail("line", pe.StartLine)
	}
	return decodeFail("CSV could not be read")
}

// decodeCSV reads data records after the header (RFC 4180 via
// encoding/csv; records must have exactly len(header) fields) into p.
func decodeCSV(ctx context.Context, r io.Reader, header []string, p *pager, base int64) ([]any, *evidence.Position, int64, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(header)
	if len(header) == 0 {
		cr.FieldsPerRecord = -1
	}
	cr.ReuseRecord = true
	lim, _ := r.(*recordLimiter)
	before := base
	for !p.full() {
		if p.seen%1024 == 0 && ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		before = base + cr.InputOffset()
		if lim != nil {
			// The reader may hold up to its buffer of read-ahead bytes.
			lim.n = 0
		}
		rec, err := cr.Read()
		if err == io.EOF {
			return p.rows, nil, p.seen, nil
		}
		if errors.Is(err, errRecordTooLong) {
			return nil, nil, 0, csvErr(err).WithDetail("record", p.seen)
		}
		if err != nil {
			return nil, nil, 0, csvErr(err)
		}
		if len(header) == 0 {
			return nil, nil, 0, decodeFail("CSV has data records but an empty header")
		}
		idx := p.seen
		if !p.offer(func() any {
			v := make(map[string]any, len(rec))
			for i, h := range header {
				v[h] = strings.ToValidUTF8(rec[i], "\uFFFD")
			}
			return map[string]any{"record": idx, "value": v}
		}) {
			break
		}
	}
	end := base + cr.InputOffset()
	if p.stopped || p.err != nil {
		sb, _ := json.Marshal(textState{Byte: before})
		return p.rows, &evidence.Position{Row: p.seen, State: sb}, -1, nil
	}
	if lim != nil {
		lim.n = 0
	}
	if _, err := cr.Read(); err == io.EOF {
		return p.rows, nil, p.seen, nil
	} else if err != nil {
		return nil, nil, 0, csvErr(err)
	}
	sb, _ := json.Marshal(textState{Byte: end})
	return p.rows, &evidence.Position{Row: p.seen, State: sb}, -1, nil
}

// jsonState is the resume state of a root-array JSON preview: the byte
// offset just after the last returned element and the next element index.
type jsonState struct {
	Byte  int64 `json:"b"`
	Index int64 `json:"i"`
}

func previewJSON(ctx context.Context, f *os.File, req *Request, p *pager, memCap int64) (*Output, error) {
	sk := &jsonSeek{end: -1, maxElem: memCap}
	var r io.Reader = bufio.NewReaderSize(f, 64<<10)
	if req.Resuming {
		p.start = req.Start.Row
		var st jsonState
		if len(req.Start.State) > 0 {
			if err := json.Unmarshal(req.Start.State, &st); err != nil || st.Byte <= 0 || st.Byte > req.Inputs[0].size || st.Index < 0 {
				return nil, contract.Errorf(contract.CodeCursorInvalid, "the continuation is malformed")
			}
			// Root array: seek past the returned elements; the bytes before
			// were validated by earlier pages of the same digest.
			if _, err := f.Seek(st.Byte, io.SeekStart); err != nil {
				return nil, contract.Errorf(contract.CodeInputChanged, "the source could not be read")
			}
			br := bufio.NewReaderSize(f, 64<<10)
			k := int64(0)
			for {
				c, err := br.ReadByte()
				if err != nil {
					return nil, decodeFail("the JSON document ends inside its root array")
				}
				k++
				if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
					continue
				}
				if c != ',' {
					return nil, contract.Errorf(contract.CodeCursorInvalid, "the continuation does not point between array elements")
				}
				break
			}
			r = io.MultiReader(strings.NewReader("["), br)
			sk.delta, sk.base = st.Byte+k-1, st.Index
			p.seen = p.start
		}
	}
	complete, err := traverseJSON(ctx, r, p, sk)
	if err != nil {
		return nil, err
	}
	if complete {
		return &Output{Rows: p.rows, Total: p.seen, Summary: map[string]any{"validated_to_eof": true}}, nil
	}
	next := &evidence.Position{Row: p.seen}
	if sk.end > 0 {
		next.State, _ = json.Marshal(jsonState{Byte: sk.end, Index: sk.next})
	}
	return &Output{Rows: p.rows, Total: -1, Next: next, Summary: map[string]any{"validated_to_eof": false}}, nil
}

// jsonSeek maps a (possibly resumed) root-array stream to file offsets:
// file offset = delta + decoder offset; element indices start at base.
// traverseJSON reports in end/next where the next root-array page starts
// (end stays -1 for other roots, which resume by re-traversal).
type jsonSeek struct {
	delta, base int64
	end, next   int64
	maxElem     int64 // bound on one root element/member's bytes (0: none)
}

// traverseJSON walks one JSON document in document order (seed 003 "JSON
// preview") and offers its projected entries to p. It stops early when the
// page is full and reports whether it reached and validated end-of-file.
func traverseJSON(ctx context.Context, r io.Reader, p *pager, sk *jsonSeek) (bool, error) {
	if sk == nil {
		sk = &jsonSeek{end: -1}
	}
	// A UTF-8 byte-order mark is skipped (RFC 8259 lets a parser ignore
	// it; file offsets then start 3 bytes later); empty, UTF-16 and UTF-32
	// input is named as such.
	br := bufio.NewReaderSize(r, 64<<10)
	bom, prob := jsontext.Sniff(br)
	if prob != nil {
		return false, decodeFail("%s", prob.Message("the JSON document")).WithDetail("problem", prob.Kind)
	}
	lead := int64(0)
	if bom {
		lead = int64(len(jsontext.UTF8BOM))
		sk.delta += lead
	}
	g := newJSONGuard(br, "the JSON document", sk.maxElem, 1)
	dec := json.NewDecoder(g)
	dec.UseNumber()
	bad := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ge := guardErr(g, err); ge != nil {
			return ge
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return decodeFail("the JSON document is truncated: it ends at byte %d inside a JSON value; it was cut short, so produce or copy it again in full", lead+dec.InputOffset()).WithDetail("problem", jsontext.KindTruncated)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return decodeFail("the JSON document is malformed near byte %d: %s", lead+dec.InputOffset(), se.Error()).WithDetail("problem", jsontext.KindMalformed)
		}
		return decodeFail("the JSON document is malformed near byte %d", lead+dec.InputOffset())
	}
	tok, err := dec.Token()
	if err != nil {
		return false, bad(err)
	}
	value := func() (any, error) {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, bad(err)
		}
		return canon(v), nil
	}
	skip := func() error {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return bad(err)
		}
		return nil
	}
	// elements offers the elements of the array whose '[' was just read,
	// built by row; it reports whether the page filled before the end.
	elements := func(root bool, row func(i int64, v any) map[string]any) (bool, error) {
		start := int64(0)
		if root {
			start = sk.base
		}
		for i := start; dec.More(); i++ {
			if p.full() {
				return true, nil
			}
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if p.seen < p.start {
				if err := skip(); err != nil {
					return false, err
				}
				p.seen++
				continue
			}
			v, err := value()
			if err != nil {
				return false, err
			}
			idx := i
			if !p.offer(func() any { return row(idx, v) }) {
				return true, nil
			}
			if root {
				sk.end, sk.next = sk.delta+dec.InputOffset(), i+1
			}
		}
		return false, nil
	}
	switch d := tok.(type) {
	case json.Delim:
		switch d {
		case '[':
			full, err := elements(true, func(i int64, v any) map[string]any {
				return map[string]any{"kind": "element", "index": i, "value": v}
			})
			if full || err != nil {
				return false, err
			}
			if _, err := dec.Token(); err != nil {
				return false, bad(err)
			}
		case '{':
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return false, bad(err)
				}
				key, _ := kt.(string)
				// Peek at the value's kind through the next token.
				vt, err := dec.Token()
				if err != nil {
					return false, bad(err)
				}
				switch vd := vt.(type) {
				case json.Delim:
					if vd == '[' {
						// A section's elements, not the section, are the
						// values held one at a time.
						g.elemDepth = 2
						full, err := elements(false, func(i int64, v any) map[string]any {
							return map[string]any{"kind": "section", "section": key, "index": i, "value": v}
						})
						g.elemDepth = 1
						if full || err != nil {
							return false, err
						}
					} else {
						if p.full() {
							return false, nil
						}
						n := 0
						for dec.More() {
							if _, err := dec.Token(); err != nil { // member key
								return false, bad(err)
							}
							if err := skip(); err != nil {
								return false, err
							}
							n++
						}
						if !p.offer(func() any { return map[string]any{"kind": "object", "key": key, "type": "object", "members": n} }) {
							return false, nil
						}
					}
					if _, err := dec.Token(); err != nil {
						return false, bad(err)
					}
				default:
					if p.full() {
						return false, nil
					}
					v := canon(vt)
					if vt == nil {
						v = nil
					}
					if !p.offer(func() any { return map[string]any{"kind": "field", "key": key, "value": v} }) {
						return false, nil
					}
				}
			}
			if _, err := dec.Token(); err != nil {
				return false, bad(err)
			}
		}
	default:
		v := canon(tok)
		p.offer(func() any { return map[string]any{"kind": "value", "value": v} })
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, decodeFail("the JSON document has data after its root value")
	}
	return true, nil
}
