package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one inbound JSON-RPC line (the 4 MiB argument limit,
// with room for framing; docs/errors.md, "Protocol limits"). A longer line is answered
// with -32600 (with its id when the id precedes the first 5 MiB).
const MaxLineBytes = 5 << 20

// MaxNestingDepth bounds the array/object nesting of one inbound message,
// the envelope included (a tools/call's arguments start at depth 3). A
// deeper message is answered with an error and never decoded.
const MaxNestingDepth = 64

// lockedWriter serializes whole-message writes to stdout: the SDK writes
// each message with one Write, and the line filter writes its error
// responses through the same lock.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	// pending counts requests passed to the server and not yet answered,
	// so stdin EOF can wait for in-flight calls before ending the session.
	pending int
	idle    *sync.Cond
	// inflight holds the ids (compact JSON) of requests passed to the
	// server and not yet answered; cancelled those of them the client
	// cancelled (notifications/cancelled), whose responses are not sent:
	// the MCP cancellation rule says the receiver should not respond.
	inflight  map[string]bool
	cancelled map[string]bool
}

func newLockedWriter(w io.Writer) *lockedWriter {
	l := &lockedWriter{w: w, inflight: map[string]bool{}, cancelled: map[string]bool{}}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// responsePrefix starts every response the server writes (it sends no
// requests of its own; notifications have no id).
var responsePrefix = []byte(`{"jsonrpc":"2.0","id":`)

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !bytes.HasPrefix(p, responsePrefix) {
		return l.w.Write(p)
	}
	if l.pending > 0 {
		l.pending--
		l.idle.Broadcast()
	}
	var id json.RawMessage
	if json.NewDecoder(bytes.NewReader(p[len(responsePrefix):])).Decode(&id) == nil {
		k := idKey(id)
		delete(l.inflight, k)
		if l.cancelled[k] {
			// The client cancelled this request: it gets no response.
			delete(l.cancelled, k)
			return len(p), nil
		}
	}
	return l.w.Write(p)
}

// idKey is the map key of a JSON-RPC id: the same for every spelling of
// one id. A string id is its decoded text (a client may send "\u00ff"
// where the response spells ÿ, or "\/" for "/"), a number its compact
// JSON text; anything else its bytes.
func idKey(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return "s" + s
	}
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return "n" + b.String()
}

// cancel marks the in-flight request id as cancelled by the client; an id
// not in flight (unknown, or already answered) is ignored.
func (l *lockedWriter) cancel(id json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := idKey(id); l.inflight[k] {
		l.cancelled[k] = true
	}
}

// reply writes a response of the filter's own (not the server's), which
// answers no passed request.
func (l *lockedWriter) reply(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(p)
}

func (l *lockedWriter) request(id json.RawMessage) {
	l.mu.Lock()
	l.pending++
	l.inflight[idKey(id)] = true
	l.mu.Unlock()
}

// drain waits until every passed request was answered, or d passed.
func (l *lockedWriter) drain(d time.Duration) {
	t := time.AfterFunc(d, func() {
		l.mu.Lock()
		l.pending = 0
		l.idle.Broadcast()
		l.mu.Unlock()
	})
	defer t.Stop()
	l.mu.Lock()
	for l.pending > 0 {
		l.idle.Wait()
	}
	l.mu.Unlock()
}

func (l *lockedWriter) Close() error { return nil }

// readAheadBytes bounds the lines the filter has read and checked but the
// server has not yet taken (lineQueue): the filter keeps reading stdin
// while the server is busy, so a notifications/cancelled line is seen as
// soon as it arrives, not after every request before it was handed over.
// One line longer than the bound is still queued alone.
const readAheadBytes = 8 << 20

// lineQueue is the read-ahead between filterLines, which reads and checks
// stdin, and feedLines, which hands the lines to the SDK through a pipe
// (a pipe write blocks until the SDK reads). Memory is bounded by
// readAheadBytes (plus one line).
type lineQueue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	lines [][]byte
	bytes int
	// ended is set when stdin ended (err: its error, nil at EOF); dead
	// when the SDK's side of the pipe is closed (nothing more is taken).
	ended, dead bool
	err         error
}

func newLineQueue() *lineQueue {
	q := &lineQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues one whole line (newline included), waiting while the
// read-ahead is full; false when the SDK takes no more lines.
func (q *lineQueue) push(line []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.bytes > 0 && q.bytes+len(line) > readAheadBytes && !q.dead {
		q.cond.Wait()
	}
	if q.dead {
		return false
	}
	q.lines = append(q.lines, line)
	q.bytes += len(line)
	q.cond.Broadcast()
	return true
}

// finish records that stdin ended with err (io.EOF at its end).
func (q *lineQueue) finish(err error) {
	q.mu.Lock()
	q.ended, q.err = true, err
	q.cond.Broadcast()
	q.mu.Unlock()
}

// pop returns the next line, or ok false with stdin's error once it ended
// and every line was taken.
func (q *lineQueue) pop() (line []byte, err error, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.lines) == 0 && !q.ended {
		q.cond.Wait()
	}
	if len(q.lines) == 0 {
		return nil, q.err, false
	}
	line = q.lines[0]
	q.lines[0] = nil
	q.lines = q.lines[1:]
	q.bytes -= len(line)
	q.cond.Broadcast()
	return line, nil, true
}

// kill records that the SDK takes no more lines: push returns false.
func (q *lineQueue) kill() {
	q.mu.Lock()
	q.dead = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// feedLines writes the queued lines into out, the pipe the SDK reads, in
// order; when stdin has ended and every line was written it waits for the
// requests in flight to be answered (bounded by DrainTimeout: the bridge
// exits on client EOF) and closes out with stdin's error (none at EOF).
func feedLines(q *lineQueue, out *io.PipeWriter, w *lockedWriter) {
	for {
		line, err, ok := q.pop()
		if !ok {
			w.drain(DrainTimeout)
			out.CloseWithError(eofOr(err))
			return
		}
		if _, werr := out.Write(line); werr != nil {
			q.kill()
			return
		}
	}
}

// filterLines reads newline-delimited messages from in and queues them for
// the SDK (q, fed by feedLines). Before any JSON decoder sees a line it
// checks the limits (MaxLineBytes, valid UTF-8, MaxNestingDepth) and that
// the line is one JSON-RPC 2.0 message; a line that fails is answered
// here, with the request's id whenever it can be read from the line
// (recoverID), and is not passed on, so one bad line never ends the
// session (JSON-RPC 2.0 section 5.1). Blank lines are skipped. A request
// is marked in flight and a notifications/cancelled line marks its
// request cancelled as the line is read, ahead of the server (its
// response, if it comes, is then not written).
func filterLines(in io.Reader, q *lineQueue, w *lockedWriter) {
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > MaxLineBytes {
				// Answer from the head of the line, then drop the rest.
				w.reply(rejection(line, limitTooLong))
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = r.ReadSlice('\n')
				}
				line = line[:0]
				if err != nil {
					q.finish(err)
					return
				}
			}
			continue
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if resp := checkLine(t); resp != nil {
				w.reply(resp)
			} else {
				if id, ok := requestID(t); ok {
					w.request(id)
				} else if id, ok := cancelledID(t); ok {
					w.cancel(id)
				}
				if !q.push(append(append(make([]byte, 0, len(t)+1), t...), '\n')) {
					return
				}
			}
		}
		line = line[:0]
		if err != nil {
			q.finish(err)
			return
		}
	}
}

// checkLine returns the response to a line that must not reach the SDK, or
// nil when it may pass. Checks run cheapest and most fatal first: size,
// UTF-8, then one scan for depth, array length and string length
// (admission) before any decoder (the SDK's decoder ends the session on
// nesting beyond its own limit), then JSON syntax, then the JSON-RPC
// envelope.
func checkLine(t []byte) []byte {
	switch {
	case len(t) > MaxLineBytes:
		return rejection(t, limitTooLong)
	case !utf8.Valid(t):
		return rejection(t, limitUTF8)
	}
	if l := admission(t); l != limitSyntax {
		return rejection(t, l)
	}
	switch {
	case !json.Valid(t):
		return rejection(t, limitSyntax)
	}
	return invalidRequest(t)
}

// DrainTimeout bounds the wait for in-flight calls after stdin ends: the
// bridge's 10 s response deadline plus a margin.
const DrainTimeout = 12 * time.Second

// requestID returns the id of a JSON-RPC line that is a request (an id and
// a method), which the server answers exactly once unless it is cancelled.
func requestID(line []byte) (json.RawMessage, bool) {
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil, false
	}
	return m.ID, m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null"
}

// cancelledID returns params.requestId of a notifications/cancelled line.
func cancelledID(line []byte) (json.RawMessage, bool) {
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "notifications/cancelled" || len(m.ID) > 0 {
		return nil, false
	}
	return m.Params.RequestID, len(m.Params.RequestID) > 0
}

func eofOr(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// ServeIO runs s over newline-delimited JSON-RPC on in/out until in ends or
// ctx ends. Lines that are not JSON get a parse-error response.
func ServeIO(ctx context.Context, s *mcp.Server, in io.Reader, out io.Writer) error {
	pr, pw := io.Pipe()
	lw := newLockedWriter(out)
	q := newLineQueue()
	go filterLines(in, q, lw)
	go feedLines(q, pw, lw)
	raw := newRawResults()
	err := s.Run(withRawResults(ctx, raw), codedTransport{&mcp.IOTransport{Reader: pr, Writer: lw, MaxLineLength: MaxLineBytes}, raw, lw})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// invalidRequest checks the envelope of one JSON value against JSON-RPC 2.0
// section 4 before the SDK sees it (the SDK ends the session on a value it
// cannot read as a message): it must be an object with "jsonrpc":"2.0", an
// id that is a string, a number or null, and a string method when it has
// one. Batches (arrays) are not part of MCP 2025-11-25. It returns the
// -32600 response to write, or nil when the message may pass.
func invalidRequest(line []byte) []byte {
	respond := func(id json.RawMessage, msg string) []byte {
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": -32600, "message": "Invalid Request: " + msg}})
		return append(b, '\n')
	}
	if line[0] != '{' {
		return respond(nil, "a message must be a JSON object (batches are not supported)")
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return respond(nil, "a message must be a JSON object")
	}
	id, hasID := m["id"]
	if hasID {
		switch {
		case len(id) > 0 && id[0] == '"':
		case len(id) > 0 && (id[0] == '-' || (id[0] >= '0' && id[0] <= '9')):
			// The SDK reads a number id as a float64 and answers with its
			// int64 truncation: only exact integers round-trip.
			if n, err := strconv.ParseInt(string(id), 10, 64); err != nil || n > 1<<53 || n < -(1<<53) {
				echo := id
				if _, err := strconv.ParseFloat(string(id), 64); err != nil {
					echo = nil // beyond float64: most clients could not read it back
				}
				return respond(echo, "a number id must be an integer of at most 2^53 in magnitude")
			}
		case string(id) == "null":
		default:
			return respond(nil, "id must be a string, a number or null")
		}
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		// Whatever the SDK's own decoder refuses would end its session.
		return respond(id, "the message does not decode as JSON-RPC 2.0 (a member has the wrong type)")
	}
	var version string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return respond(id, `"jsonrpc" must be "2.0"`)
	}
	if raw, ok := m["method"]; ok {
		var method string
		if json.Unmarshal(raw, &method) != nil || method == "" {
			return respond(id, "method must be a non-empty string")
		}
		if hasID && string(id) == "null" {
			// JSON-RPC 2.0 section 4: a message with an id member is a
			// request, not a notification; MCP (basic/index) says a
			// request id MUST NOT be null. The SDK would take it for a
			// notification and never answer it.
			return respond(nil, "a request id must be a string or an integer, not null (a notification has no id member)")
		}
		return nil
	}
	if _, ok := m["result"]; ok && hasID {
		return nil
	}
	if _, ok := m["error"]; ok && hasID {
		return nil
	}
	return respond(id, "a message needs a method, or a result or error with an id")
}

// codedTransport wraps the SDK's transport so that every JSON-RPC error
// response carries a JSON-RPC error code (codedConn.Write), and so that a
// tool result encoded by its handler (raw) is written as encoded, to w.
type codedTransport struct {
	mcp.Transport
	raw *rawResults
	w   io.Writer
}

func (t codedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return codedConn{c, t.raw, t.w}, nil
}

// codedConn gives an error response without a JSON-RPC code its code
// before it is written (codedError), and writes the response of a
// placeholder result (rawResults) with the result it names, as the SDK
// would have encoded it, straight to w (the line the SDK's connection
// writes to the same writer).
type codedConn struct {
	mcp.Connection
	raw *rawResults
	w   io.Writer
}

func (c codedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	r, ok := msg.(*jsonrpc.Response)
	if ok && r.Error != nil {
		r.Error = codedError(r.Error)
	}
	if ok && r.Error == nil && c.raw != nil {
		if full, head, tail, placeholder, found := c.raw.take(r.Result); placeholder {
			if !found {
				r.Result = nil
				r.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the tool's encoded result is no longer held; repeat the call"}
				return c.Connection.Write(ctx, msg)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			line, err := encodeResponse(r.ID, head, full, tail)
			if err != nil {
				return err
			}
			_, err = c.w.Write(line)
			// The writer is done with the line (an io.Writer keeps no
			// slice of it), which is full's bytes.
			putResponseBuf(full)
			return err
		}
	}
	return c.Connection.Write(ctx, msg)
}

// codedError returns err as a *jsonrpc.Error with a JSON-RPC 2.0 code. The
// SDK answers some requests with a plain Go error, which it would send
// with code 0 (not a JSON-RPC code): a second initialize and a request
// other than ping before initialize (its lifecycle checks). Both are
// -32600 Invalid Request (the request is not valid in the session's
// state, as the MCP lifecycle says; the MCP TypeScript SDK answers a
// second initialize the same way). Any other uncoded error is -32603
// Internal error. An error that already has a code is returned unchanged.
func codedError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code != 0 {
		return err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, `duplicate "initialize"`):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: the session is already initialized (initialize is sent once per session)"}
	case strings.Contains(msg, "invalid during session initialization"):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: the session is not initialized; send initialize (and notifications/initialized) first, only ping may come before it"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: " + msg}
}
