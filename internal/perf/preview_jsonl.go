package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/jsontext"
)

// preview_artifact over JSON Lines: one record per line.

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
	at := st.recordFrag // where the first record resumes
	var stop recordFrag
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
		done, s, err := p.offerRecord(func() any { return map[string]any{"record": rec, "line": ln, "value": canon(v)} },
			func() ([]byte, error) { return body, nil },
			func() map[string]any { return map[string]any{"record": rec, "line": ln} }, at)
		at = recordFrag{}
		if err != nil {
			return nil, nil, 0, err
		}
		if !done {
			off -= int64(len(b))
			line--
			stop = s
			break
		}
	}
	if _, err := r.Peek(1); err == io.EOF && !p.stopped {
		return p.rows, nil, p.seen, nil
	}
	sb, _ := json.Marshal(textState{Byte: off, Line: line, recordFrag: stop})
	return p.rows, &evidence.Position{Row: p.seen, State: sb}, -1, nil
}
