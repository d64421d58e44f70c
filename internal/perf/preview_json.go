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

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/jsontext"
)

// preview_artifact over one JSON document: root array elements, root
// object sections and fields, or one scalar.

// jsonState is the resume state of a root-array JSON preview: the byte
// offset just after the last returned element and the next element index.
// With recordFrag set the page stopped inside the entry at the next row,
// delivered as fragments; Byte is then 0 when the next page re-traverses
// the document to that row (the first root-array element, root object
// entries).
type jsonState struct {
	Byte  int64 `json:"b"`
	Index int64 `json:"i"`
	recordFrag
}

func previewJSON(ctx context.Context, f *os.File, req *Request, p *pager, memCap int64) (*Output, error) {
	sk := &jsonSeek{end: -1, maxElem: memCap, src: f}
	var r io.Reader = bufio.NewReaderSize(f, 64<<10)
	if req.Resuming {
		p.start = req.Start.Row
		var st jsonState
		if len(req.Start.State) > 0 {
			if err := json.Unmarshal(req.Start.State, &st); err != nil || st.Byte < 0 || (st.Byte == 0 && st.Limit == 0) || st.Byte > req.Inputs[0].size || st.Index < 0 || st.Fragment < 0 || st.Limit < 0 {
				return nil, contract.Errorf(contract.CodeCursorInvalid, "the continuation is malformed")
			}
			sk.at, sk.atRow = st.recordFrag, p.start
		}
		if st.Byte > 0 {
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
			sk.delta, sk.base, sk.resumed = st.Byte+k-1, st.Index, st.Byte
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
	if sk.stop.Limit > 0 {
		next.State, _ = json.Marshal(jsonState{Byte: sk.stopByte, Index: sk.stopIndex, recordFrag: sk.stop})
	} else if sk.end > 0 {
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

	// src reads the document's bytes (decoder offset x is byte
	// delta+x), for an entry delivered as fragments (nil: never).
	src io.ReaderAt
	// resumed is the file offset a resumed root-array page started at
	// (the end of the element before sk.base), 0 when not resumed.
	resumed int64
	// at is where the entry at row atRow resumes inside its fragments.
	at    recordFrag
	atRow int64
	// stop, stopByte and stopIndex are where this page ended inside an
	// entry delivered as fragments (jsonState).
	stop                recordFrag
	stopByte, stopIndex int64
}

// takeAt returns where the entry at row resumes (zero when it starts).
func (sk *jsonSeek) takeAt(row int64) recordFrag {
	if sk.at.Limit > 0 && row == sk.atRow {
		a := sk.at
		sk.at = recordFrag{}
		return a
	}
	return recordFrag{}
}

// raw returns a function reading the bytes of the value that the
// decoder read between offsets before and after (the leading
// whitespace, ',' and ':' trimmed).
func (sk *jsonSeek) raw(before, after int64) func() ([]byte, error) {
	return func() ([]byte, error) {
		if sk.src == nil || after < before {
			return nil, contract.Errorf(contract.CodeInternalError, "the JSON entry's bytes are not available")
		}
		b := make([]byte, after-before)
		if _, err := sk.src.ReadAt(b, sk.delta+before); err != nil {
			return nil, contract.Errorf(contract.CodeInputChanged, "the source could not be read")
		}
		return bytes.TrimLeft(b, " \t\r\n,:"), nil
	}
}

// traverseJSON walks one JSON document in document order (the JSON entries
// of docs/perf.md, "Analysis tools") and offers its projected entries to p. It stops early when the
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
			// Where a page that ends inside this element resumes: after
			// the previous element of the root array (0: re-traverse).
			prevEnd := int64(0)
			if root && i > start {
				prevEnd = sk.delta + dec.InputOffset()
			} else if root {
				prevEnd = sk.resumed
			}
			if p.seen < p.start {
				if err := skip(); err != nil {
					return false, err
				}
				p.seen++
				continue
			}
			before := dec.InputOffset()
			v, err := value()
			if err != nil {
				return false, err
			}
			idx := i
			done, stop, err := p.offerRecord(func() any { return row(idx, v) }, sk.raw(before, dec.InputOffset()), func() map[string]any {
				m := row(idx, nil)
				delete(m, "value")
				return m
			}, sk.takeAt(p.seen))
			if err != nil {
				return false, err
			}
			if !done {
				if stop.Limit > 0 {
					sk.stop, sk.stopByte, sk.stopIndex = stop, prevEnd, idx
				}
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
				before := dec.InputOffset()
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
					done, stop, err := p.offerRecord(func() any { return map[string]any{"kind": "field", "key": key, "value": v} }, sk.raw(before, dec.InputOffset()),
						func() map[string]any { return map[string]any{"kind": "field", "key": key} }, sk.takeAt(p.seen))
					if err != nil {
						return false, err
					}
					if !done {
						if stop.Limit > 0 {
							sk.stop = stop
						}
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
		done, stop, err := p.offerRecord(func() any { return map[string]any{"kind": "value", "value": v} }, sk.raw(0, dec.InputOffset()),
			func() map[string]any { return map[string]any{"kind": "value"} }, sk.takeAt(p.seen))
		if err != nil {
			return false, err
		}
		if !done {
			if stop.Limit > 0 {
				sk.stop = stop
			}
			return false, nil
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, decodeFail("the JSON document has data after its root value")
	}
	return true, nil
}
