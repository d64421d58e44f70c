package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// preview_artifact over text: lines, or fragments of long lines.

type textState struct {
	Byte     int64 `json:"b"`
	Line     int64 `json:"l"`
	Fragment int64 `json:"f,omitempty"`
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
