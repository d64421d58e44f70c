package perf

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// preview_artifact over CSV: RFC 4180 data records after the header.

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
	rows, next, total, err := decodeCSV(ctx, &recordLimiter{r: f, max: maxValueBytes + 64<<10}, header, p, st.Byte, f, st.recordFrag)
	if err != nil {
		return nil, err
	}
	return &Output{Rows: rows, Next: next, Total: total, Summary: map[string]any{"header": header}}, nil
}

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
		return nil, 0, csvErr(err, 0)
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

// csvErr is the typed error of a CSV read. lineBase is the count of
// lines before the byte where the csv.Reader started (it numbers lines
// from 1 at that byte): a ParseError's StartLine and Line plus lineBase
// are encoding/csv's line numbers over the whole file.
func csvErr(err error, lineBase int) *contract.Error {
	if errors.Is(err, errRecordTooLong) {
		return contract.Errorf(contract.CodeLimitExceeded, "a CSV record is longer than the per-record limit of %d bytes", maxValueBytes).WithDetail("limit_bytes", maxValueBytes)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		start, line := pe.StartLine+lineBase, pe.Line+lineBase
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return decodeFail("CSV record starting at line %d is ragged (%s): every record must have the header's field count", start, pe.Err.Error()).WithDetail("line", start)
		}
		e := decodeFail("CSV record starting at line %d is malformed (%s at line %d, column %d)", start, pe.Err.Error(), line, pe.Column).WithDetail("line", start)
		if line != start {
			e = e.WithDetail("error_line", line)
		}
		return e
	}
	return decodeFail("CSV could not be read")
}

// linesBefore counts the line ends ('\n'; encoding/csv reads "\r\n" as
// one and a lone '\r' as none) in the first n bytes of src.
func linesBefore(src io.ReaderAt, n int64) (int, error) {
	buf := make([]byte, 64<<10)
	lines := 0
	for off := int64(0); off < n; {
		k, err := src.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		lines += bytes.Count(buf[:k], []byte{'\n'})
		off += int64(k)
		if err != nil && off < n {
			return lines, err
		}
	}
	return lines, nil
}

// decodeCSV reads data records after the header (RFC 4180 via
// encoding/csv; records must have exactly len(header) fields) into p.
// r reads src from byte base; on a malformed record the lines of src
// before base are counted so the error names the file's line. A record
// whose row alone passes the page's byte budget is delivered as fragments
// of its bytes in src (without its line end); at is where the first
// record resumes.
func decodeCSV(ctx context.Context, r io.Reader, header []string, p *pager, base int64, src io.ReaderAt, at recordFrag) ([]any, *evidence.Position, int64, error) {
	fail := func(err error) *contract.Error {
		var pe *csv.ParseError
		if !errors.As(err, &pe) {
			return csvErr(err, 0)
		}
		n, lerr := linesBefore(src, base)
		if lerr != nil {
			return contract.Errorf(contract.CodeInputChanged, "the source could not be read")
		}
		return csvErr(err, n)
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(header)
	if len(header) == 0 {
		cr.FieldsPerRecord = -1
	}
	cr.ReuseRecord = true
	lim, _ := r.(*recordLimiter)
	before := base
	var stop recordFrag
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
			return nil, nil, 0, fail(err).WithDetail("record", p.seen)
		}
		if err != nil {
			return nil, nil, 0, fail(err)
		}
		if len(header) == 0 {
			return nil, nil, 0, decodeFail("CSV has data records but an empty header")
		}
		idx := p.seen
		from, to := before, base+cr.InputOffset()
		done, s, err := p.offerRecord(func() any {
			v := make(map[string]any, len(rec))
			for i, h := range header {
				v[h] = strings.ToValidUTF8(rec[i], "\uFFFD")
			}
			return map[string]any{"record": idx, "value": v}
		}, func() ([]byte, error) {
			b := make([]byte, to-from)
			if _, err := src.ReadAt(b, from); err != nil {
				return nil, contract.Errorf(contract.CodeInputChanged, "the source could not be read")
			}
			// The record's bytes without its line end.
			if bytes.HasSuffix(b, []byte("\r\n")) {
				b = b[:len(b)-2]
			} else if bytes.HasSuffix(b, []byte("\n")) {
				b = b[:len(b)-1]
			}
			return b, nil
		}, func() map[string]any { return map[string]any{"record": idx} }, at)
		at = recordFrag{}
		if err != nil {
			return nil, nil, 0, err
		}
		if !done {
			stop = s
			break
		}
	}
	end := base + cr.InputOffset()
	if p.stopped || p.err != nil {
		sb, _ := json.Marshal(textState{Byte: before, recordFrag: stop})
		return p.rows, &evidence.Position{Row: p.seen, State: sb}, -1, nil
	}
	if lim != nil {
		lim.n = 0
	}
	if _, err := cr.Read(); err == io.EOF {
		return p.rows, nil, p.seen, nil
	} else if err != nil {
		return nil, nil, 0, fail(err)
	}
	sb, _ := json.Marshal(textState{Byte: end})
	return p.rows, &evidence.Position{Row: p.seen, State: sb}, -1, nil
}
