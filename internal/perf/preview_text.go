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
	// Auto is the fragment size (characters) of a line fragmented
	// automatically because it alone passed the page's byte budget; the
	// state then points inside that line, at fragment Fragment.
	Auto int `json:"a,omitempty"`
	// recordFrag points inside the JSONL or CSV record that starts at
	// Byte, delivered as fragments (offerRecord).
	recordFrag
}

// autoFragmentChars is the fragment size of a line that alone passes the
// row budget: each character costs at most 7 budget bytes (a control
// character escaped as \u00XX, delivered twice), so a fragment of this
// many characters fits; it is at most 4096 (text_fragment_chars' maximum)
// and at least 64.
func autoFragmentChars(budget int64) int {
	c := (budget - 256) / 7
	if c > 4096 {
		c = 4096
	}
	if c < 64 {
		c = 64
	}
	return int(c)
}

// textFragments splits one line (with its LF, if any) into fragments of at
// most n characters exactly as previewFragments does (invalid bytes decode
// as U+FFFD; the LF ends the last fragment), returning each fragment's text
// and byte length.
func textFragments(b []byte, n int) (texts []string, sizes []int) {
	var sb strings.Builder
	for len(b) > 0 {
		sb.Reset()
		size, chars := 0, 0
		for chars < n && len(b) > 0 {
			c, w := utf8.DecodeRune(b)
			b = b[w:]
			size += w
			sb.WriteRune(c)
			chars++
			if c == '\n' {
				break
			}
		}
		texts = append(texts, sb.String())
		sizes = append(sizes, size)
	}
	return texts, sizes
}

// offerFragments offers the fragments of line ln (b, from fragment first
// on) to p as rows of the line's index p.seen. It returns the bytes
// consumed and whether the whole line went into the page; when not, the
// next page resumes at fragment next.
func offerFragments(p *pager, b []byte, ln int64, first int64, n int) (consumed int64, next int64, done bool) {
	row := p.seen
	texts, sizes := textFragments(b, n)
	term := bytes.HasSuffix(b, []byte("\n"))
	for i, text := range texts {
		fi, last := first+int64(i), i == len(texts)-1
		t := text
		p.seen = row
		if !p.offer(func() any {
			return map[string]any{"line": ln, "fragment": fi, "text": t, "line_terminated": last && term}
		}) {
			p.seen = row
			return consumed, fi, false
		}
		consumed += int64(sizes[i])
	}
	p.seen = row + 1
	return consumed, 0, true
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
	budget := p.budget
	if budget <= 0 {
		budget = hardPageBytes
	}
	auto := 0 // the fragment size of this page's automatically fragmented lines
	// partial stops the page inside an automatically fragmented line.
	partial := func(fi int64, chars int) (*Output, error) {
		sb, _ := json.Marshal(textState{Byte: off, Line: line, Fragment: fi, Auto: chars})
		return &Output{Rows: p.rows, Total: -1, Next: &evidence.Position{Row: p.seen, State: sb}, Summary: map[string]any{"auto_fragment_chars": chars}}, nil
	}
	if st.Auto > 0 && !p.full() {
		// Resume inside a line fragmented automatically, at its fragment
		// st.Fragment, with the fragment size the previous page chose.
		b, err := readLine(r, lineCap, line+1)
		if err == io.EOF {
			return nil, contract.Errorf(contract.CodeInputChanged, "the source ended inside the line the continuation points into")
		}
		if err != nil {
			return nil, err
		}
		auto = st.Auto
		used, fi, done := offerFragments(p, b, line+1, st.Fragment, st.Auto)
		off += used
		if !done {
			return partial(fi, st.Auto)
		}
		line++
	}
	for !p.full() {
		if p.seen%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b, err := readLine(r, lineCap, line+1)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if p.seen >= p.start && len(p.rows) == 0 {
			if n, err := rowCost(map[string]any{"line": line + 1, "text": strings.ToValidUTF8(string(b), "\uFFFD"), "line_terminated": true}); err == nil && n > budget {
				// This line alone passes the page's byte budget: it is
				// split into fragments of auto characters, as
				// text_fragment_chars would, and paging continues
				// inside it.
				auto = autoFragmentChars(budget)
				used, fi, done := offerFragments(p, b, line+1, 0, auto)
				off += used
				if !done {
					return partial(fi, auto)
				}
				line++
				continue
			}
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
	var sum map[string]any
	if auto > 0 {
		sum = map[string]any{"auto_fragment_chars": auto}
	}
	if _, err := r.Peek(1); err == io.EOF && !p.stopped {
		return &Output{Rows: p.rows, Total: p.seen, Summary: sum}, nil
	}
	st = textState{Byte: off, Line: line}
	sb, _ := json.Marshal(st)
	return &Output{Rows: p.rows, Total: -1, Next: &evidence.Position{Row: p.seen, State: sb}, Summary: sum}, nil
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
