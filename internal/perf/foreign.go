package perf

import (
	"context"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// Publisher publishes one live analysis of another toolset (bin) to an
// evidence store: it re-reads the analysis's inputs, checks they are the
// files the live result described (else INPUT_CHANGED), and returns the
// published manifest.
type Publisher func(ctx context.Context, st *evidence.Store) (*evidence.Manifest, error)

// Replayer returns the exact call that replays a preserved record of
// another toolset on its stored artifacts, or nil when the record cannot
// be replayed. artifactPath returns the store path of the named artifact
// ("" when the store does not hold it).
type Replayer func(m *evidence.Manifest, artifactPath func(name string) string) *contract.Action

// Adopt retains a live analysis of another toolset (bin) so that
// preserve_evidence and rescue_evidence accept it by analysis_id, like a
// perf analysis; it returns that analysis_id ("an-" and 24 hex digits).
// The one-shot CLI's PreserveLast preserves it when it is the most recent.
func (rt *Runtime) Adopt(tool string, publish func(ctx context.Context, st *evidence.Store) (*evidence.Manifest, error)) string {
	s := &session{id: newSessionID(), tool: tool, publish: publish}
	rt.remember(s)
	return s.id
}

// SetReplayer sets how inspect_evidence names the replay of a record of
// toolset (bin): its next_action.
func (rt *Runtime) SetReplayer(toolset string, r Replayer) {
	rt.sessMu.Lock()
	defer rt.sessMu.Unlock()
	if rt.replayers == nil {
		rt.replayers = map[string]Replayer{}
	}
	rt.replayers[toolset] = r
}

// replay is the next_action of inspect_evidence on a record of another
// toolset, or nil.
func (rt *Runtime) replay(st *evidence.Store, m *evidence.Manifest) *contract.Action {
	rt.sessMu.Lock()
	r := rt.replayers[m.Toolset]
	rt.sessMu.Unlock()
	if r == nil {
		return nil
	}
	return r(m, func(name string) string { return filepathOf(st, m, name) })
}
