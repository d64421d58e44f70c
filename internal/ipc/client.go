package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// ResponseTimeout is the default deadline of one request after it was sent
// (docs/host.md: unanswered for 10 s after dispatch is OUTCOME_UNKNOWN).
const ResponseTimeout = 10 * time.Second

// Client is one authenticated connection to a host. Call is safe for
// concurrent use (at most MaxInFlight pending calls; the host answers BUSY
// beyond). A lost connection fails every pending and later call with
// OUTCOME_UNKNOWN; a Client never reconnects or replays (the bridge's
// Backend opens a new Client for the next call).
type Client struct {
	// Welcome is the host's handshake answer (instance id, version).
	Welcome Welcome
	// Peer is the verified listening process (pid, uid).
	Peer Peer
	// Timeout is the per-call response deadline (default ResponseTimeout).
	Timeout time.Duration

	c   net.Conn
	wmu sync.Mutex

	mu      sync.Mutex
	nextID  uint64
	pending map[string]chan json.RawMessage
	err     error // set once the connection is lost
	done    chan struct{}
}

// Handshake sends hello on an authenticated connection c, waits (until
// timeout) for welcome and starts the reader. A reject or a major version
// mismatch is BACKEND_UNAVAILABLE (or the host's code, BUSY at capacity);
// c is closed on failure.
func Handshake(c net.Conn, peer Peer, bridgeVersion string, timeout time.Duration) (*Client, error) {
	return HandshakeAs(c, peer, bridgeVersion, "", timeout)
}

// HandshakeAs is Handshake announcing client (Hello.Client).
func HandshakeAs(c net.Conn, peer Peer, bridgeVersion, client string, timeout time.Duration) (*Client, error) {
	fail := func(code contract.Code, msg string) (*Client, error) {
		c.Close()
		return nil, contract.Errorf(code, "%s", msg)
	}
	c.SetDeadline(time.Now().Add(timeout))
	if err := WriteFrame(c, encode(Hello{Kind: KindHello, IPCMajor: Major, IPCMinor: Minor, BridgeVersion: bridgeVersion, Client: client})); err != nil {
		return fail(contract.CodeBackendUnavailable, "the host closed the connection during the handshake")
	}
	p, err := ReadFrame(c)
	if err != nil {
		return fail(contract.CodeBackendUnavailable, "the host did not complete the handshake (it may be at its connection limit or shutting down)")
	}
	m, err := Decode(p)
	if err != nil {
		return fail(contract.CodeBackendUnavailable, "the host sent an invalid handshake")
	}
	switch m := m.(type) {
	case *Reject:
		code := m.Code
		if code == "" {
			code = contract.CodeBackendUnavailable
		}
		cl, err := fail(code, "the host refused the connection: "+m.Message)
		if code == contract.CodeBackendUnavailable {
			// The host's only BACKEND_UNAVAILABLE refusal is an IPC
			// version mismatch: the same call meets the same host.
			contract.AsError(err).Permanent()
		}
		return cl, err
	case *Welcome:
		if m.IPCMajor != Major {
			cl, err := fail(contract.CodeBackendUnavailable, "the running host speaks another IPC major version ("+strconv.Itoa(m.IPCMajor)+"); stop it (it may predate an upgrade) and retry")
			contract.AsError(err).Permanent()
			return cl, err
		}
		c.SetDeadline(time.Time{})
		cl := &Client{Welcome: *m, Peer: peer, Timeout: ResponseTimeout, c: c, pending: map[string]chan json.RawMessage{}, done: make(chan struct{})}
		go cl.read()
		return cl, nil
	}
	return fail(contract.CodeBackendUnavailable, "the host sent an unexpected handshake message")
}

// read dispatches responses to their callers until the connection ends.
func (cl *Client) read() {
	var err error
	for {
		var p []byte
		if p, err = ReadFrame(cl.c); err != nil {
			break
		}
		// A response in the host's own shape is read without a second
		// scan of its result; any other frame is decoded strictly.
		r, ok := validatedResponse(p)
		if !ok {
			var m any
			if m, err = Decode(p); err != nil {
				break
			}
			if r, ok = m.(*Response); !ok {
				err = ErrProtocol
				break
			}
		}
		cl.mu.Lock()
		ch := cl.pending[r.RequestID]
		delete(cl.pending, r.RequestID)
		cl.mu.Unlock()
		if ch != nil {
			ch <- r.Result
		}
	}
	cl.fail(err)
}

func (cl *Client) fail(err error) {
	cl.mu.Lock()
	if cl.err == nil {
		if err == nil {
			err = net.ErrClosed
		}
		cl.err = err
		close(cl.done)
	}
	cl.mu.Unlock()
	cl.c.Close()
}

// Alive reports whether the connection is still up as far as the reader knows.
func (cl *Client) Alive() bool {
	select {
	case <-cl.done:
		return false
	default:
		return true
	}
}

// Done is closed when the connection is lost or closed.
func (cl *Client) Done() <-chan struct{} { return cl.done }

// Close closes the connection; pending calls fail with OUTCOME_UNKNOWN.
func (cl *Client) Close() error {
	cl.fail(net.ErrClosed)
	return nil
}

// lost is the error of a call whose connection went away after the request
// may have been sent: OUTCOME_UNKNOWN, never replayed.
func lost() *contract.Error {
	return contract.Errorf(contract.CodeOutcomeUnknown, "the connection to the host was lost before a reply arrived; the request may or may not have taken effect and was not repeated. The next call reconnects (a restarted host has a new backend_instance_id: list processes again for fresh references)")
}

// notSent is the error of a Call that never reached the host: the
// connection was already lost before the request was written, or writing
// its frame failed (an incomplete frame is never dispatched). It unwraps to
// a retryable BACKEND_UNAVAILABLE, not OUTCOME_UNKNOWN: the request had no
// effect and may be sent again on a new connection.
type notSent struct{ err *contract.Error }

func (e notSent) Error() string { return e.err.Error() }
func (e notSent) Unwrap() error { return e.err }

// NotSent reports whether err is a Call error whose request was never sent
// to the host (see notSent), so a caller may reconnect and send it.
func NotSent(err error) bool {
	var n notSent
	return errors.As(err, &n)
}

func unsent() error {
	return notSent{contract.Errorf(contract.CodeBackendUnavailable, "the connection to the host was lost before the request was sent; nothing was sent, and a new connection may send it")}
}

// Call sends method(args) and waits for the response, at most Timeout. The
// outcome is the host's result or *contract.Error. If the connection is
// lost, or ctx ends or the deadline passes after the request was sent, the
// error is OUTCOME_UNKNOWN (on ctx end a cancel message is sent first); a
// connection found lost before the request was written gives a retryable
// BACKEND_UNAVAILABLE for which NotSent is true.
// args must be a JSON object (nil means {}).
// The caller's delivered-result byte budget (tool.ResultBudget(ctx)) goes
// with the request when it is not the default, so the host pages by it.
func (cl *Client) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if ctx.Err() != nil {
		return nil, contract.Errorf(contract.CodeCancelled, "the call was cancelled before it was sent to the host")
	}
	ch := make(chan json.RawMessage, 1)
	cl.mu.Lock()
	if cl.err != nil {
		cl.mu.Unlock()
		return nil, unsent()
	}
	cl.nextID++
	id := strconv.FormatUint(cl.nextID, 10)
	cl.pending[id] = ch
	cl.mu.Unlock()
	drop := func() {
		cl.mu.Lock()
		delete(cl.pending, id)
		cl.mu.Unlock()
	}
	r := Request{Kind: KindRequest, RequestID: id, Method: method, Arguments: args}
	if b := tool.ResultBudget(ctx); b != tool.DefaultResultBytes && cl.Welcome.IPCMinor >= 1 {
		r.ResultBudget = b // an older host would refuse the unknown field
	}
	req := encode(r)
	if len(req) > MaxFrame {
		drop()
		return nil, contract.Errorf(contract.CodeResultTooLarge, "the request exceeds the 4 MiB message limit")
	}
	if !utf8.Valid(req) {
		// The host closes a connection on an invalid-UTF-8 frame (a protocol
		// violation), which would release this client's captures and jobs;
		// refuse the call here instead, with the connection untouched.
		drop()
		return nil, contract.Errorf(contract.CodeInvalidArgument, "the arguments of %s contain bytes that are not valid UTF-8; send text as UTF-8 (JSON \\u escapes for other code points)", method)
	}
	cl.wmu.Lock()
	if peerClosed(cl.c) {
		// The host already closed this connection (it exited): nothing
		// written now could be dispatched, so the request is not sent.
		cl.wmu.Unlock()
		drop()
		cl.fail(io.EOF)
		return nil, unsent()
	}
	cl.c.SetWriteDeadline(time.Now().Add(cl.Timeout))
	err := WriteFrame(cl.c, req)
	cl.wmu.Unlock()
	if err != nil {
		// The frame was not written whole, so the host never dispatches it.
		drop()
		cl.fail(err)
		return nil, unsent()
	}
	timer := time.NewTimer(cl.Timeout)
	defer timer.Stop()
	select {
	case raw := <-ch:
		return resultOf(raw)
	case <-cl.done:
		return nil, lost()
	case <-timer.C:
		drop()
		cl.sendCancel(id)
		return nil, contract.Errorf(contract.CodeOutcomeUnknown, "the host did not answer within %s; the request may or may not have taken effect and was not repeated", cl.Timeout)
	case <-ctx.Done():
		if replyOnCancel(ctx) {
			// The host ends the request on cancel and answers it: wait
			// for that answer (the outcome is then known), at most
			// CancelReplyWait.
			cl.sendCancel(id)
			grace := time.NewTimer(CancelReplyWait)
			defer grace.Stop()
			select {
			case raw := <-ch:
				return resultOf(raw)
			case <-cl.done:
				return nil, lost()
			case <-grace.C:
				drop()
				return nil, contract.Errorf(contract.CodeOutcomeUnknown, "the call was cancelled and the host did not answer the cancellation within %s; its outcome is unknown and it was not repeated", CancelReplyWait)
			}
		}
		drop()
		cl.sendCancel(id)
		if ctx.Err() == context.DeadlineExceeded {
			return nil, contract.Errorf(contract.CodeOutcomeUnknown, "the call's deadline passed after it reached the host; its outcome is unknown and it was not repeated")
		}
		return nil, contract.Errorf(contract.CodeOutcomeUnknown, "the call was cancelled after it reached the host; its outcome is unknown and it was not repeated")
	}
}

type replyOnCancelKey struct{}

// CancelReplyWait bounds how long Call waits for the host's answer to a
// cancelled call made with WithReplyOnCancel.
const CancelReplyWait = 3 * time.Second

// WithReplyOnCancel marks ctx for Call: when ctx ends after the request
// was sent, Call sends cancel and waits for the host's reply (at most
// CancelReplyWait) and returns it, instead of giving up at once with
// OUTCOME_UNKNOWN. It is meant for read-only methods that end promptly on
// cancellation, such as get_job's bounded wait: the caller learns the
// outcome and the connection (with its captures and jobs) is kept. The
// reply is returned as the host sent it; the caller checks ctx itself.
// If the connection is lost or the host does not answer in time, the
// error is OUTCOME_UNKNOWN as for any call.
func WithReplyOnCancel(ctx context.Context) context.Context {
	return context.WithValue(ctx, replyOnCancelKey{}, true)
}

func replyOnCancel(ctx context.Context) bool {
	v, _ := ctx.Value(replyOnCancelKey{}).(bool)
	return v
}

func (cl *Client) sendCancel(id string) {
	cl.wmu.Lock()
	defer cl.wmu.Unlock()
	cl.c.SetWriteDeadline(time.Now().Add(time.Second))
	WriteFrame(cl.c, encode(Cancel{Kind: KindCancel, RequestID: id}))
}
