package perf

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// Ceilings are the server's analysis limits; requests may only lower them
// (docs/perf.md, "Bounds"). Sizes are bytes.
type Ceilings struct {
	// MaxRows bounds page_size / limits.max_rows.
	MaxRows int
	// DefaultRows is the page size when neither page_size nor
	// limits.max_rows is given.
	DefaultRows int
	// MaxInputBytes bounds the size of each source.
	MaxInputBytes int64
	// TimeoutSeconds bounds one analysis call.
	TimeoutSeconds int
	// MaxMemoryBytes bounds the decoded bytes a call holds in memory at
	// once: a decompressed pprof profile and its stacks, one JSON element
	// (root array element, root member, section element) or trace event,
	// one text line or JSONL record, and the encoded rows of one page (it
	// lowers the page byte budget). It is not a process RSS limit.
	MaxMemoryBytes int64
	// DefaultMemoryBytes is limits.max_memory_bytes when a request does
	// not give it (MaxMemoryBytes when zero or larger): a call on a shared
	// server holds at most this much decoded input unless it asks for
	// more, up to MaxMemoryBytes. A gzip bomb stops inflating here.
	DefaultMemoryBytes int64
}

// DefaultCeilings are the built-in server limits.
var DefaultCeilings = Ceilings{
	MaxRows:        10000,
	DefaultRows:    100,
	MaxInputBytes:  16 << 30,
	TimeoutSeconds: 600,
	MaxMemoryBytes: 2 << 30,
	// 256 MiB holds the largest real pprof profiles (tens of MiB
	// decompressed) many times over while one call's decoded input
	// stays a fraction of a shared machine's memory.
	DefaultMemoryBytes: 256 << 20,
}

// Config configures a Runtime.
type Config struct {
	// OpenStore opens the evidence store on first use (evidence.OpenDefault
	// when nil), so tools that never touch evidence create no directory.
	OpenStore func() (*evidence.Store, error)
	// Ceilings are the server limits (DefaultCeilings when zero).
	Ceilings Ceilings
	// Sessions enables live session analyses: analysis results carry an
	// analysis_id that preserve_evidence and rescue_evidence accept. The
	// MCP server enables it; one-shot CLI calls leave it off and preserve
	// through Runtime.PreserveLast instead.
	Sessions bool
	// MaxSessions bounds retained session analyses (oldest evicted first;
	// default 256).
	MaxSessions int
}

// Runtime is the shared analysis runtime behind the perf tools and CLI.
type Runtime struct {
	cfg     Config
	mu      sync.Mutex
	store   *evidence.Store
	local   *evidence.Continuations
	digests digestCache

	sessMu   sync.Mutex
	sessions map[string]*session
	order    []string
	last     *session
	// expired remembers the ids of evicted session analyses (the newest
	// maxExpired of them, oldest first in expiredOrder), so a call naming
	// one is ANALYSIS_EXPIRED rather than an unknown reference.
	expired      map[string]bool
	expiredOrder []string
	// replayers name the replay of other toolsets' records (SetReplayer).
	replayers map[string]Replayer
	// namer names capture workloads for the proc tools
	// (SetProcessNamer); nil with noNamer saying why.
	namer   ProcessNamer
	noNamer string
}

// New returns a Runtime.
func New(cfg Config) *Runtime {
	if cfg.Ceilings == (Ceilings{}) {
		cfg.Ceilings = DefaultCeilings
	}
	if cfg.OpenStore == nil {
		cfg.OpenStore = evidence.OpenDefault
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 256
	}
	return &Runtime{cfg: cfg, sessions: map[string]*session{}, digests: digestCache{m: map[digestKey]string{}}}
}

// Store opens the evidence store on first use.
func (rt *Runtime) Store() (*evidence.Store, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.store != nil {
		return rt.store, nil
	}
	s, err := rt.cfg.OpenStore()
	if err != nil {
		return nil, contract.AsError(err)
	}
	rt.store = s
	return s, nil
}

// continuations returns the store's continuation codec (its persisted key
// lets tokens cross restarts and CLI invocations) or, when the store cannot
// be opened, a process-local codec so paging still works in this process.
func (rt *Runtime) continuations() *evidence.Continuations {
	if st, err := rt.Store(); err == nil {
		return st.Continuations()
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.local == nil {
		rt.local = evidence.NewContinuations(nil)
	}
	return rt.local
}

// durableContinuations returns the codec for issuing a next_page token.
// Tokens must be resumable by a later process (continuations
// cross process boundaries; docs/perf.md, "Continuations"), so they are sealed with the store's persisted
// key: when the store cannot be opened (a corrupt cursor.key is
// REPOSITORY_CORRUPT with guidance) that error is returned instead of
// issuing a token sealed with a process-local key that no later process
// could resume.
func (rt *Runtime) durableContinuations() (*evidence.Continuations, error) {
	st, err := rt.Store()
	if err != nil {
		return nil, err
	}
	return st.Continuations(), nil
}

// Close closes the evidence store when it was opened.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.store != nil {
		err := rt.store.Close()
		rt.store = nil
		return err
	}
	return nil
}

// session is one live analysis result retained for preserve/rescue.
type session struct {
	id        string
	tool      string
	inputs    []*input
	args      map[string]any // operation fields + page_size + limits (no sources, no continuation)
	limits    map[string]any
	coverage  map[string]any
	status    string
	nextPage  map[string]any // next_page arguments (live), or nil
	created   time.Time
	preserved *evidence.Manifest
	rescues   map[string]*rescued
	// publish preserves an analysis of another toolset (Adopt); nil for
	// a perf analysis.
	publish Publisher
	// capture is the evidence record of a capture's analysis (its
	// sources, console and native artifacts, in scratch files that live
	// as long as the session), so preserve_evidence after a failed
	// preserve keeps the same artifacts; nil for other analyses.
	capture *evidence.Record
}

// rescued is the handoff of one completed rescue, returned again when the
// same request repeats.
type rescued struct {
	data map[string]any
	next *contract.Action
}

func newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "an-" + hex.EncodeToString(b[:])
}

func (rt *Runtime) remember(s *session) {
	rt.sessMu.Lock()
	defer rt.sessMu.Unlock()
	rt.last = s
	if !rt.cfg.Sessions {
		return
	}
	rt.sessions[s.id] = s
	rt.order = append(rt.order, s.id)
	for len(rt.order) > rt.cfg.MaxSessions {
		old := rt.order[0]
		delete(rt.sessions, old)
		rt.order = rt.order[1:]
		if rt.expired == nil {
			rt.expired = map[string]bool{}
		}
		rt.expired[old] = true
		rt.expiredOrder = append(rt.expiredOrder, old)
		for len(rt.expiredOrder) > maxExpired {
			delete(rt.expired, rt.expiredOrder[0])
			rt.expiredOrder = rt.expiredOrder[1:]
		}
	}
}

// maxExpired bounds the evicted analysis ids a Runtime remembers (27
// bytes each).
const maxExpired = 4096

func (rt *Runtime) lookup(id string) (*session, error) {
	rt.sessMu.Lock()
	defer rt.sessMu.Unlock()
	if s, ok := rt.sessions[id]; ok {
		return s, nil
	}
	if rt.expired[id] {
		return nil, contract.Errorf(contract.CodeAnalysisExpired, "analysis %s has expired: this session keeps its newest %d analyses and newer ones replaced it; rerun the analysis, and preserve_evidence it before %d more run", id, rt.cfg.MaxSessions, rt.cfg.MaxSessions).
			WithDetail("analysis_id", id).WithDetail("max_session_analyses", rt.cfg.MaxSessions)
	}
	return nil, contract.Errorf(contract.CodeReferenceInvalid, "analysis_id is not an analysis of this session (this process never issued it: it belongs to another process or an earlier host); rerun the analysis").WithDetail("analysis_id", id)
}

// defaultMemory is limits.max_memory_bytes when a request omits it:
// DefaultMemoryBytes, bounded by MaxMemoryBytes.
func (c Ceilings) defaultMemory() int64 {
	if c.DefaultMemoryBytes > 0 && c.DefaultMemoryBytes < c.MaxMemoryBytes {
		return c.DefaultMemoryBytes
	}
	return c.MaxMemoryBytes
}
