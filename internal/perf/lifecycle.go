package perf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/inquest-dev/inquest/internal/fsguard"
	"os"
	"path/filepath"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Operations returns the analysis operations in catalog order.
func Operations() []*Operation {
	return []*Operation{
		previewOperation(), summarizeProfileOperation(), compareProfilesOperation(),
		summarizeBenchmarksOperation(), compareBenchmarksOperation(), traceWindowOperation(),
		executionsOperation(),
	}
}

// OperationByName returns the named analysis operation (its tool name),
// or nil.
func OperationByName(name string) *Operation {
	for _, op := range Operations() {
		if op.Name == name {
			return op
		}
	}
	return nil
}

// Tools returns the perf toolset: one analysis tool per operation and the
// evidence lifecycle tools preserve_evidence, query_evidence,
// inspect_evidence and rescue_evidence.
func Tools(rt *Runtime) []tool.Tool {
	var out []tool.Tool
	for _, op := range Operations() {
		out = append(out, rt.analysisTool(op))
	}
	return append(out, rt.preserveTool(), rt.queryTool(), rt.inspectTool(), rt.rescueTool())
}

func producerModules() []string {
	return []string{"github.com/google/pprof", "golang.org/x/perf", "modernc.org/sqlite"}
}

// record builds the evidence record of a session analysis.
func (s *session) record() evidence.Record {
	rec := evidence.Record{
		Toolset: tool.Perf, Operation: s.tool, Status: s.status,
		Arguments: s.args, Limits: s.limits, Coverage: s.coverage,
		Producers:  evidence.ProducerVersions(producerModules()...),
		Provenance: evidence.Provenance{HostPaths: map[string]string{}},
	}
	for _, in := range s.inputs {
		name := "source-" + itoa(in.index)
		rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{
			Name: name, Role: evidence.RoleAnalysisSource, Format: in.format, Producer: in.producer,
			Path: in.file, ExpectedSHA256: in.sha256,
		})
		if in.arg.Kind == "path" {
			rec.Provenance.HostPaths[name] = in.arg.Path
		} else {
			rec.Provenance.HostPaths[name] = "evidence:" + in.evidenceID + "/" + in.artifact
		}
	}
	return rec
}

// evidenceNextPage rewrites a live next_page to read the preserved record's
// sources; the continuation token stays valid because it binds digests, not
// paths.
func evidenceNextPage(tool string, live map[string]any, m *evidence.Manifest) *contract.Action {
	if live == nil {
		return nil
	}
	args := map[string]any{}
	for k, v := range live {
		args[k] = v
	}
	var srcs []any
	for _, a := range m.AnalysisSources() {
		srcs = append(srcs, map[string]any{"kind": "evidence", "evidence_id": m.EvidenceID, "artifact_selector": a.Name})
	}
	args["sources"] = srcs
	return &contract.Action{Tool: tool, Arguments: args}
}

// preserve publishes a session analysis into st (the configured store, or
// a rescue store) and returns its manifest.
func (rt *Runtime) preserve(ctx context.Context, s *session, st *evidence.Store) (*evidence.Manifest, error) {
	if s.publish != nil {
		return s.publish(ctx, st)
	}
	rt.sessMu.Lock()
	capture := s.capture
	rt.sessMu.Unlock()
	if capture != nil {
		return st.Publish(ctx, *capture)
	}
	return st.Publish(ctx, s.record())
}

// PreserveLast preserves the most recent analysis of this Runtime (the
// one-shot CLI's --preserve) and returns the preserve_evidence result.
func (rt *Runtime) PreserveLast(ctx context.Context) (*contract.Result, error) {
	rt.sessMu.Lock()
	s := rt.last
	rt.sessMu.Unlock()
	if s == nil {
		return nil, contract.Errorf(contract.CodeStateConflict, "no analysis to preserve")
	}
	return rt.preserveSession(ctx, s)
}

func (rt *Runtime) preserveSession(ctx context.Context, s *session) (*contract.Result, error) {
	st, err := rt.Store()
	if err != nil {
		return nil, err
	}
	rt.sessMu.Lock()
	m := s.preserved
	rt.sessMu.Unlock()
	if m != nil {
		if _, err := st.Get(m.EvidenceID); err != nil {
			m = nil // the earlier record vanished; publish again
		}
	}
	if m == nil {
		if m, err = rt.preserve(ctx, s, st); err != nil {
			return nil, err
		}
		rt.sessMu.Lock()
		s.preserved = m
		rt.sessMu.Unlock()
	}
	next := evidenceNextPage(s.tool, s.nextPage, m)
	if next == nil && s.publish != nil {
		next = rt.replay(st, m)
	}
	data := map[string]any{"evidence_id": m.EvidenceID, "manifest": m.Redacted(), "analysis_sources": analysisSources(m)}
	res := contract.NewResult("evidence", m.CreatedAt, data)
	res.NextAction = next
	return res, nil
}

func analysisSources(m *evidence.Manifest) []any {
	out := []any{}
	for _, a := range m.AnalysisSources() {
		out = append(out, map[string]any{"kind": "evidence", "evidence_id": m.EvidenceID, "artifact_selector": a.Name})
	}
	return out
}

// analysisIDArgs names a live analysis of this session.
type analysisIDArgs struct {
	AnalysisID string `json:"analysis_id"`
}

// analysisIDSchema is an analysis_id argument.
var analysisIDSchema = js{"type": "string", "pattern": "^an-[0-9a-f]{24}$", "description": "data.analysis_id of an analysis in this session."}

func (rt *Runtime) preserveTool() tool.Tool {
	return tool.Define(tool.Tool{
		Name: "preserve_evidence", Toolset: tool.Perf, Title: "Preserve a session analysis as evidence",
		Description: "Publish a live session analysis as an immutable evidence record; returns its evidence_id and next_action: the call that reads the analysis from the record, or null when it has nothing more to read. Required: analysis_id.",
		Input: object(js{
			"analysis_id": analysisIDSchema,
		}, "analysis_id").json(),
		Annotations: tool.Annotations{Idempotent: true},
	}, func(ctx context.Context, a analysisIDArgs) (*contract.Result, error) {
		s, err := rt.lookup(a.AnalysisID)
		if err != nil {
			return nil, err
		}
		return rt.preserveSession(ctx, s)
	})
}

// evidenceIDArgs names one evidence record.
type evidenceIDArgs struct {
	EvidenceID string `json:"evidence_id"`
}

func (rt *Runtime) inspectTool() tool.Tool {
	return tool.Define(tool.Tool{
		Name: "inspect_evidence", Toolset: tool.Perf, Title: "Inspect an evidence record",
		Description: "Return the verified, redacted manifest of one evidence record and its analysis_sources (pass them as sources to the analysis tool to replay it). Required: evidence_id.",
		Input: object(js{
			"evidence_id": js{"type": "string", "pattern": "^ev-[a-z2-7]{26}$"},
		}, "evidence_id").json(),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
	}, rt.inspect)
}

// inspect runs inspect_evidence.
func (rt *Runtime) inspect(ctx context.Context, a evidenceIDArgs) (*contract.Result, error) {
	st, err := rt.Store()
	if err != nil {
		return nil, err
	}
	m, err := st.Get(a.EvidenceID)
	if err != nil {
		if ce := contract.AsError(err); ce.Field == "" && (ce.Code == contract.CodeEvidenceNotFound || ce.Code == contract.CodeInvalidArgument) {
			ce.Field = "/evidence_id"
			return nil, ce
		}
		return nil, err
	}
	for _, art := range m.Artifacts {
		sum, _, err := rt.hashFile(ctx, filepathOf(st, m, art.Name))
		if err != nil || sum != art.SHA256 {
			return nil, contract.Errorf(contract.CodeRepositoryCorrupt, "artifact %q of %s does not match its recorded sha256", art.Name, m.EvidenceID).WithDetail("evidence_id", m.EvidenceID)
		}
	}
	data := map[string]any{"evidence_id": m.EvidenceID, "tool": m.Operation, "manifest": m.Redacted(), "analysis_sources": analysisSources(m)}
	res := contract.NewResult("evidence", m.CreatedAt, data)
	if len(m.AnalysisSources()) > 0 && OperationByName(m.Operation) != nil {
		res.NextAction = &contract.Action{Tool: m.Operation, Arguments: replayArguments(OperationByName(m.Operation), m)}
	} else if next := rt.replay(st, m); next != nil {
		res.NextAction = next
	}
	return res, nil
}

// replayArguments are the arguments of the first-page replay of m through
// op's analysis tool: the recorded arguments op's tool takes (its fields,
// limits, page_size; never continuation, nor what a capture record adds,
// such as its capture outcome) over m's analysis_sources.
func replayArguments(op *Operation, m *evidence.Manifest) map[string]any {
	own := map[string]bool{"limits": true, "page_size": true}
	for _, f := range op.Fields {
		own[f.Name] = true
	}
	args := map[string]any{}
	for k, v := range m.Arguments {
		if own[k] {
			args[k] = v
		}
	}
	args["sources"] = analysisSources(m)
	return args
}

func filepathOf(st *evidence.Store, m *evidence.Manifest, name string) string {
	p, _, err := st.ArtifactPath(m, name)
	if err != nil {
		return ""
	}
	return p
}

// queryPaging is query_evidence's paging descriptor: its arguments are
// named cursor and page_size (docs/perf.md, "Evidence").
var queryPaging = &tool.Paging{Token: "cursor", Limit: "page_size"}

// queryArgs are query_evidence's arguments.
type queryArgs struct {
	CreatedFrom string   `json:"created_from,omitempty"`
	CreatedTo   string   `json:"created_to,omitempty"`
	Operation   string   `json:"operation,omitempty"`
	Toolset     string   `json:"toolset,omitempty"`
	Format      string   `json:"format,omitempty"`
	PageSize    *integer `json:"page_size,omitempty"`
	Cursor      string   `json:"cursor,omitempty"`
}

func (rt *Runtime) queryTool() tool.Tool {
	return tool.Define(tool.Tool{
		Name: "query_evidence", Toolset: tool.Perf, Title: "Query evidence records",
		Description: "List evidence manifests newest first, filtered by creation time, operation, toolset and format; resume with next_action unchanged. No argument is required.",
		Input: object(js{
			"created_from": js{"type": "string", "format": "date-time", "description": "Inclusive, RFC 3339."},
			"created_to":   js{"type": "string", "format": "date-time", "description": "Inclusive, RFC 3339."},
			"operation":    js{"type": "string", "minLength": 1, "maxLength": 128},
			"toolset":      js{"enum": evidence.Toolsets},
			"format":       js{"type": "string", "minLength": 1, "maxLength": 64},
			"page_size":    js{"type": "integer", "minimum": 1, "maximum": 200, "description": "Default 50."},
			"cursor":       js{"type": "string", "minLength": 1, "maxLength": 4096},
		}).json(),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
		Paging:      queryPaging,
	}, rt.query)
}

// query runs query_evidence.
func (rt *Runtime) query(ctx context.Context, a queryArgs) (*contract.Result, error) {
	var f evidence.Filter
	for _, k := range []struct {
		key, val string
		dst      *time.Time
	}{{"created_from", a.CreatedFrom, &f.CreatedFrom}, {"created_to", a.CreatedTo, &f.CreatedTo}} {
		if k.val != "" {
			t, err := time.Parse(time.RFC3339Nano, k.val)
			if err != nil {
				return nil, fieldErr(contract.CodeInvalidArgument, "/"+k.key, "%s must be an RFC 3339 timestamp with a timezone offset", k.key)
			}
			*k.dst = t
		}
	}
	if !f.CreatedFrom.IsZero() && !f.CreatedTo.IsZero() && f.CreatedTo.Before(f.CreatedFrom) {
		return nil, fieldErr(contract.CodeInvalidArgument, "/created_to", "created_to must not precede created_from")
	}
	f.Operation, f.Toolset, f.Format = a.Operation, a.Toolset, a.Format
	n := 50
	if a.PageSize != nil {
		n = int(*a.PageSize)
	}
	st, err := rt.Store()
	if err != nil {
		return nil, err
	}
	p, err := st.Query(ctx, f, n, a.Cursor)
	if err != nil {
		if ce := contract.AsError(err); ce.Code == contract.CodeCursorInvalid {
			ce.Field = "/cursor"
		}
		return nil, err
	}
	var next *contract.Action
	var nextCursor any // null when the listing ended
	if p.NextCursor != "" {
		na := a
		ps := integer(n)
		na.PageSize = &ps
		nb, _ := json.Marshal(na)
		next = queryPaging.NextCall("query_evidence", nb, p.NextCursor)
		nextCursor = p.NextCursor
	}
	cov := map[string]any{"complete": next == nil && p.Unreadable == 0, "rows_returned": len(p.Rows), "unreadable_manifests": p.Unreadable}
	pg := tool.Page{Offset: p.Offset, Returned: len(p.Rows), Size: int(n), More: next != nil}
	data := map[string]any{"rows": p.Rows, "page": pg, "next_cursor": nextCursor, "snapshot": contract.Int(p.Snapshot)}
	res := contract.NewResult("evidence", time.Now(), data)
	res.Coverage = cov
	if p.Warning != "" {
		res.Warn(p.Warning)
	}
	if p.Unreadable > 0 {
		res.Warn(fmt.Sprintf("%d listed record(s) have a manifest that can no longer be read or verified (see each row's problem); their indexed facts are unverified and inspect_evidence reports them as REPOSITORY_CORRUPT", p.Unreadable))
	}
	if next != nil {
		// Paging is not missing evidence: the page stays complete.
		res.Warnings = append(res.Warnings, "more manifests remain: submit next_action unchanged")
		res.NextAction = next
	}
	return res, nil
}

// rescueArgs are rescue_evidence's arguments.
type rescueArgs struct {
	AnalysisID  string `json:"analysis_id"`
	Destination string `json:"destination"`
}

func (rt *Runtime) rescueTool() tool.Tool {
	return tool.Define(tool.Tool{
		Name: "rescue_evidence", Toolset: tool.Perf, Title: "Rescue a session analysis to a new evidence store",
		Description: "Publish a live session analysis to a new evidence store at destination, leaving the active store unchanged; the result gives the INQUEST_DATA_DIR handoff to read it. Required: analysis_id, destination.",
		Input: object(js{
			"analysis_id": js{"type": "string", "pattern": "^an-[0-9a-f]{24}$"},
			"destination": js{"type": "string", "minLength": 2, "maxLength": 4096, "description": "Absolute path that does not exist; its parent must."},
		}, "analysis_id", "destination").json(),
		Annotations: tool.Annotations{Idempotent: true},
	}, func(ctx context.Context, a rescueArgs) (*contract.Result, error) {
		s, err := rt.lookup(a.AnalysisID)
		if err != nil {
			return nil, err
		}
		return rt.rescue(ctx, s, a.Destination)
	})
}

// PreflightRescue checks a rescue destination before any analysis runs or
// any byte is copied (fsguard.CheckDestination): an absolute path without
// a NUL byte, no component over 255 bytes (INVALID_ARGUMENT), that does
// not exist (STATE_CONFLICT), whose parent is an existing directory
// (INVALID_ARGUMENT) this user may create entries in (PERMISSION_DENIED).
// Every refusal has field /destination and details path, reason and,
// when a system call failed, cause (its errno name).
func PreflightRescue(dest string) error {
	return DestinationError(fsguard.CheckDestination(dest), "/destination", "destination")
}

// DestinationError is the typed error of a destination refusal from
// fsguard (nil for nil) for the argument at field (a JSON Pointer) named
// name in the message: Syntax and Missing are INVALID_ARGUMENT, Exists
// STATE_CONFLICT, Denied and Unsafe PERMISSION_DENIED, anything else
// INTERNAL_ERROR; details path, reason and cause (errno name) when known.
func DestinationError(err error, field, name string) error {
	var e *fsguard.Error
	if err == nil {
		return nil
	}
	if !errors.As(err, &e) {
		return fieldErr(contract.CodeInternalError, field, "%s cannot be checked: %v", name, err)
	}
	code, hint := contract.CodeInternalError, ""
	switch e.Kind {
	case fsguard.Syntax:
		code = contract.CodeInvalidArgument
	case fsguard.Missing:
		code, hint = contract.CodeInvalidArgument, "; the parent of "+name+" must be an existing directory"
	case fsguard.Exists:
		code, hint = contract.CodeStateConflict, "; choose a new path"
	case fsguard.Denied, fsguard.Unsafe:
		code = contract.CodePermissionDenied
	}
	ce := fieldErr(code, field, "%s is refused: %s (%s)%s; nothing was written", name, e.Reason, e.Path, hint).
		WithDetail("path", e.Path).WithDetail("reason", e.Reason)
	if e.Cause != "" {
		ce = ce.WithDetail("cause", e.Cause)
	}
	return ce
}

// RescueLast rescues the most recent analysis (CLI --rescue-to).
func (rt *Runtime) RescueLast(ctx context.Context, dest string) (*contract.Result, error) {
	rt.sessMu.Lock()
	s := rt.last
	rt.sessMu.Unlock()
	if s == nil {
		return nil, contract.Errorf(contract.CodeStateConflict, "no analysis to rescue")
	}
	return rt.rescue(ctx, s, dest)
}

// rescue publishes s to a new store at dest: staged in a sibling temp
// directory, published with one rename, parent directory fsynced.
func (rt *Runtime) rescue(ctx context.Context, s *session, dest string) (*contract.Result, error) {
	dest = filepath.Clean(dest)
	rt.sessMu.Lock()
	prev := s.rescues[dest]
	rt.sessMu.Unlock()
	if prev != nil {
		st, err := evidence.Open(dest)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		if _, err := st.Get(prev.data["evidence_id"].(string)); err != nil {
			return nil, err
		}
		res := contract.NewResult("evidence", time.Now(), prev.data)
		res.NextAction = prev.next
		return res, nil
	}
	if err := PreflightRescue(dest); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(filepath.Dir(dest), ".inquest-rescue-*")
	if err != nil {
		return nil, fieldErr(contract.CodeInvalidArgument, "/destination", "the parent of destination is not writable")
	}
	defer os.RemoveAll(stage)
	st, err := evidence.Open(stage)
	if err != nil {
		return nil, err
	}
	m, err := rt.preserve(ctx, s, st)
	var live map[string]any
	if err == nil {
		live, err = rt.reissue(s, st.Continuations())
	}
	st.Close()
	if err != nil {
		return nil, err
	}
	os.RemoveAll(filepath.Join(stage, "tmp"))
	os.MkdirAll(filepath.Join(stage, "tmp"), 0o700)
	if err := os.Rename(stage, dest); err != nil {
		return nil, fieldErr(contract.CodeStateConflict, "/destination", "destination could not be published (it may have appeared meanwhile)")
	}
	if d, err := os.Open(filepath.Dir(dest)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	next := evidenceNextPage(s.tool, live, m)
	env := map[string]string{evidence.EnvDataDir: dest}
	data := map[string]any{"evidence_id": m.EvidenceID, "destination": dest, "environment": env, "manifest": m.Redacted(), "analysis_sources": analysisSources(m),
		"handoff": "restart or reconnect inquest with INQUEST_DATA_DIR set to destination to read this evidence; the active store is unchanged", "next_page": next}
	if next != nil {
		data["next_page"] = map[string]any{"tool": next.Tool, "arguments": next.Arguments, "environment": env}
	}
	rt.sessMu.Lock()
	if s.rescues == nil {
		s.rescues = map[string]*rescued{}
	}
	s.rescues[dest] = &rescued{data: data, next: next}
	rt.sessMu.Unlock()
	res := contract.NewResult("evidence", m.CreatedAt, data)
	res.NextAction = next
	return res, nil
}

// reissue re-seals the session's live continuation with another store's
// key (a rescued store has its own key), keeping its position.
func (rt *Runtime) reissue(s *session, to *evidence.Continuations) (map[string]any, error) {
	if s.nextPage == nil {
		return nil, nil
	}
	ids := make([]evidence.InputIdentity, len(s.inputs))
	for i, in := range s.inputs {
		ids[i] = in.identity()
	}
	raw, _ := json.Marshal(s.nextPage)
	tok, _ := s.nextPage["continuation"].(string)
	pos, err := rt.continuations().Resume(tok, s.tool, ids, raw)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range s.nextPage {
		out[k] = v
	}
	out["continuation"] = to.Issue(s.tool, ids, raw, pos)
	return out, nil
}
