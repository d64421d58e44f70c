// Package host is the inquest host: the one process per user that owns live
// state for the proc toolset (docs/host.md). It runs the sampler,
// issues process references bound to its instance, keeps per-session
// (per-connection) objects, and answers proc methods through Dispatch. The
// in-process backend, `inquest serve` and the TUI are faces of this package.
package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// Method answers one proc tool for a session. args are schema-valid (the
// bridge validated them); semantic checks are the method's job.
type Method func(ctx context.Context, s *Session, args json.RawMessage) (*contract.Result, error)

// Options configure New.
type Options struct {
	// Version is the application version (get_status, IPC welcome).
	Version string
	// Collector overrides the platform collector (tests).
	Collector sample.Collector
	// Interval overrides the sampling period (0 = sample.Interval).
	Interval time.Duration
}

// Host owns sampling and the objects sessions create.
type Host struct {
	// InstanceID identifies this host run; refs and cursors of another
	// instance are REFERENCE_INVALID / CURSOR_INVALID here.
	InstanceID string
	Version    string
	Started    time.Time

	sampler *sample.Sampler
	refs    *refCodec
	cursors *contract.CursorCodec

	mu      sync.Mutex
	methods map[string]Method
	// toolNames are the methods registered from Tools (get_status
	// data.methods); set once by New, read-only after.
	toolNames map[string]bool
	sessions  map[string]*Session
	nextSess  int
	status    []func(map[string]any)
	retained  RetainedFunc
	onStop    []func()
	cancel    context.CancelFunc
	done      chan struct{}
	// rates is closed once the sampler has its second sample (Start).
	rates chan struct{}
	// ownCollector is the collector New opened (nil when Options gave
	// one): Stop closes the files it keeps open.
	ownCollector io.Closer
}

// New builds a host; Start begins sampling.
func New(opts Options) (*Host, error) {
	c := opts.Collector
	var own io.Closer
	if c == nil {
		var err error
		if c, err = sample.NewCollector(); err != nil {
			return nil, fmt.Errorf("open process collector: %w", err)
		}
		if cl, ok := c.(io.Closer); ok {
			own = cl // the files it keeps open are closed by Stop
		}
	}
	// runtime.go: the JVM metrics of authorized lifetimes join each
	// snapshot before it is published.
	rc := newRuntimeCollector(c)
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	h := &Host{
		InstanceID: hex.EncodeToString(id),
		Version:    opts.Version,
		Started:    time.Now(),
		sampler:    sample.NewSampler(rc, opts.Interval),
		cursors:    contract.NewCursorCodec(nil),
		methods:    map[string]Method{},
		sessions:   map[string]*Session{},
	}
	h.refs = newRefCodec(h.InstanceID)
	h.ownCollector = own
	// Feature state (job manager, retained history, recorder) and its
	// get_status sections, then every proc tool of Tools and the host
	// methods that are not tools.
	installCaptures(h)
	installInvestigation(h)
	installRecording(h)
	installRuntime(h, rc)
	h.toolNames = map[string]bool{}
	for _, d := range Tools() {
		h.toolNames[d.Name] = true
		run := d.Run
		h.Handle(d.Name, func(ctx context.Context, s *Session, args json.RawMessage) (*contract.Result, error) {
			return run(ctx, h, s, args)
		})
	}
	h.registerTUI() // activity.go: the TUI's local methods (agent activity, graph display, Log view)
	h.Handle(ResolvePIDMethod, h.resolvePID)
	h.Handle(MappedByMethod, h.mappedBy)
	h.Handle(ConfirmMethod, investigationOf(h).confirmOperation)
	h.Handle(PendingConfirmationsMethod, investigationOf(h).pendingConfirmations)
	return h, nil
}

// FirstInterval separates the first two samples: the second, taken this
// long after Start, gives interval rates (cpu_percent) as top's first
// refresh does.
const FirstInterval = 200 * time.Millisecond

// Start takes the first sample synchronously (so the first call sees data),
// takes the second FirstInterval later in the background and then samples
// every interval until Stop. Start does not wait for the second sample:
// only calls that name a CPU-rate metric wait for it (see needsRates).
func (h *Host) Start(ctx context.Context) error {
	if _, err := h.sampler.Step(); err != nil {
		return fmt.Errorf("first sample: %w", err)
	}
	rates := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	h.mu.Lock()
	h.cancel, h.done, h.rates = cancel, done, rates
	h.mu.Unlock()
	go func() {
		defer close(done)
		first := time.NewTimer(FirstInterval)
		defer first.Stop()
		select {
		case <-ctx.Done():
			return
		case <-first.C:
			h.sampler.Step()
			close(rates)
		}
		t := time.NewTicker(h.sampler.Interval())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				h.sampler.Step()
			}
		}
	}()
	return nil
}

// needsRates reports whether a call reads an interval rate: it names
// cpu_percent or system_cpu_percent in its arguments, or it is
// get_system_info (core_cpu_percent).
func needsRates(method string, args json.RawMessage) bool {
	return method == "get_system_info" || bytes.Contains(args, []byte("cpu_percent"))
}

// awaitRates waits until the sampler has taken its second sample (at most
// FirstInterval after Start), ctx ends or the host stops. A host that was
// never started does not wait.
func (h *Host) awaitRates(ctx context.Context) {
	h.mu.Lock()
	rates, done := h.rates, h.done
	h.mu.Unlock()
	if rates == nil {
		return
	}
	select {
	case <-rates:
	case <-done:
	case <-ctx.Done():
	}
}

// OnStop registers fn to run when Stop begins, before sampling ends
// (features finish host-owned work: a recording writes its end record).
func (h *Host) OnStop(fn func()) {
	h.mu.Lock()
	h.onStop = append(h.onStop, fn)
	h.mu.Unlock()
}

// Stop ends sampling and closes every session.
func (h *Host) Stop() {
	h.mu.Lock()
	stops := h.onStop
	h.onStop = nil
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	for _, fn := range stops {
		fn()
	}
	if cancel != nil {
		cancel()
		<-done
	}
	if h.ownCollector != nil {
		h.ownCollector.Close()
	}
	h.mu.Lock()
	ss := make([]*Session, 0, len(h.sessions))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	h.mu.Unlock()
	for _, s := range ss {
		s.Close()
	}
}

// Sampler returns the host's sampler.
func (h *Host) Sampler() *sample.Sampler { return h.sampler }

// Cursors returns the host's cursor codec (cursors die with the instance).
func (h *Host) Cursors() *contract.CursorCodec { return h.cursors }

// Handle registers a host method under name. New registers every proc
// tool of Tools and the host methods that are not tools (resolve_pid and
// the local decision methods); tests add their own. Registering a name
// twice replaces the earlier method.
func (h *Host) Handle(name string, m Method) {
	h.mu.Lock()
	h.methods[name] = m
	h.mu.Unlock()
}

// Methods returns the registered method names, sorted.
func (h *Host) Methods() []string {
	tools, local := h.methodKinds()
	return append(tools, local...)
}

// methodKinds splits the registered methods, each sorted, into the proc
// tools (a name of Tools: what an MCP client calls through a bridge) and
// the local methods that no MCP tool exposes (resolve_pid, the TUI's and
// the confirmation methods, and those tests register).
func (h *Host) methodKinds() (tools, local []string) {
	h.mu.Lock()
	for n := range h.methods {
		if h.toolNames[n] {
			tools = append(tools, n)
		} else {
			local = append(local, n)
		}
	}
	h.mu.Unlock()
	sort.Strings(tools)
	sort.Strings(local)
	return tools, orEmptyStrings(local)
}

// orEmptyStrings returns s, or an empty (non-nil) slice for none, so JSON
// says [] rather than null.
func orEmptyStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// AddStatus registers fn to add fields to get_status data.
func (h *Host) AddStatus(fn func(map[string]any)) {
	h.mu.Lock()
	h.status = append(h.status, fn)
	h.mu.Unlock()
}

// Dispatch runs method for s. An unknown method is INVALID_ARGUMENT.
// Results get the host's backend_instance_id.
func (h *Host) Dispatch(ctx context.Context, s *Session, method string, args json.RawMessage) (*contract.Result, error) {
	h.mu.Lock()
	m, ok := h.methods[method]
	h.mu.Unlock()
	if !ok {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "unknown method")
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if h.sampler.Latest() == nil {
		return nil, contract.Errorf(contract.CodeBackendUnavailable, "the host has not taken its first sample yet; retry")
	}
	if needsRates(method, args) {
		h.awaitRates(ctx)
	}
	done := h.trackCall(s, method) // activity.go: the TUI's agent activity panel
	res, err := (*contract.Result)(nil), h.activityGate(method, args)
	if err == nil {
		res, err = safeRun(ctx, method, m, s, args)
	}
	if done != nil {
		done(err)
	}
	if err != nil {
		return nil, err
	}
	if res != nil && res.BackendInstanceID == "" {
		res.BackendInstanceID = h.InstanceID
	}
	return res, nil
}

// safeRun runs m and returns its failure typed. A panic becomes
// INTERNAL_ERROR and a plain error (not a *contract.Error, not a context
// error) becomes INTERNAL_ERROR too; both are logged once, with the tool
// name, through log/slog (the host log of `inquest serve`, stderr of an
// in-process host; never stdout). The typed error crosses IPC as it is, so
// the bridge's registry does not log it again.
func safeRun(ctx context.Context, method string, m Method, s *Session, args json.RawMessage) (res *contract.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("proc tool panicked in the host", "tool", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = nil, contract.Errorf(contract.CodeInternalError, "the tool failed unexpectedly; the failure was logged").Permanent()
		}
	}()
	res, err = m(ctx, s, args)
	if err != nil {
		var ce *contract.Error
		if !errors.As(err, &ce) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			slog.Error("proc tool failed with an untyped error in the host", "tool", method, "err", err.Error())
		}
		return nil, contract.AsError(err)
	}
	return res, nil
}

// Session is one connection's view of the host: it owns the frozen
// captures, cursors and jobs the connection creates, and releases them on
// Close. Sessions are safe for concurrent use.
type Session struct {
	ID   string
	host *Host

	mu      sync.Mutex
	values  map[any]any
	closers []func()
	closed  bool
}

// NewSession opens a session (one per IPC connection, or the in-process one).
func (h *Host) NewSession() *Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextSess++
	s := &Session{ID: fmt.Sprintf("s%d", h.nextSess), host: h, values: map[any]any{}}
	h.sessions[s.ID] = s
	return s
}

// Sessions returns the number of open sessions.
func (h *Host) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Host returns the session's host.
func (s *Session) Host() *Host { return s.host }

// Value returns the session-owned value under key, creating it with init on
// first use (features keep their per-connection state here).
func (s *Session) Value(key any, init func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	if !ok && init != nil {
		v = init()
		s.values[key] = v
	}
	return v
}

// OnClose registers fn to run when the session closes (connection-owned
// cleanup: cancel jobs, release captures).
func (s *Session) OnClose(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closers = append(s.closers, fn)
}

// Closed reports whether Close ran (the connection went away).
func (s *Session) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close releases everything the session owns; it is idempotent.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	fns := s.closers
	s.closers = nil
	s.values = map[any]any{}
	s.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
	s.host.mu.Lock()
	delete(s.host.sessions, s.ID)
	s.host.mu.Unlock()
}
