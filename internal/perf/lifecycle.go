package perf

import (
	"context"
	"encoding/json"
	"fmt"
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
	data := map[string]any{"evidence_id": m.EvidenceID, "manifest": m.Redacted(), "analysis_sources": analysisSources(m), "next_page": next}
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

func (rt *Runtime) preserveTool() tool.Tool {
	return tool.Tool{
		Name: "preserve_evidence", Toolset: tool.Perf, Title: "Preserve a session analysis as evidence",
		Description: "Publish a live session analysis (its native input artifacts, arguments, limits and coverage) as an immutable evidence record in the configured store, and return its evidence_id, redacted manifest, and a refreshed evidence-backed next_page that supersedes the live-path one. Repeating the call returns the same record. Required: analysis_id (from an analysis result's data.analysis_id).",
		Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["analysis_id"],"properties":{"analysis_id":{"type":"string","pattern":"^an-[0-9a-f]{24}$","description":"data.analysis_id of a live analysis result in this session."}}}`),
		Annotations: tool.Annotations{Idempotent: true},
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			var a struct {
				AnalysisID string `json:"analysis_id"`
			}
			_ = json.Unmarshal(args, &a)
			s, err := rt.lookup(a.AnalysisID)
			if err != nil {
				return nil, err
			}
			return rt.preserveSession(ctx, s)
		},
	}
}

func (rt *Runtime) inspectTool() tool.Tool {
	return tool.Tool{
		Name: "inspect_evidence", Toolset: tool.Perf, Title: "Inspect an evidence record",
		Description: "Return the validated, redacted projection of one evidence record's manifest: ordered analysis_sources (pass them unchanged as sources to the named analysis tool to replay the native artifacts), artifact identities (name, role, format, sha256, size), arguments, limits, coverage, status and producer versions. Argv, environment, working directories and host paths are omitted (the local CLI `inquest evidence show` is the full view). Every artifact's SHA-256 is verified. Required: evidence_id.",
		Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["evidence_id"],"properties":{"evidence_id":{"type":"string","pattern":"^ev-[a-z2-7]{26}$"}}}`),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			var a struct {
				EvidenceID string `json:"evidence_id"`
			}
			_ = json.Unmarshal(args, &a)
			st, err := rt.Store()
			if err != nil {
				return nil, err
			}
			m, err := st.Get(a.EvidenceID)
			if err != nil {
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
				args := map[string]any{}
				for k, v := range m.Arguments {
					if k != "continuation" {
						args[k] = v
					}
				}
				args["sources"] = analysisSources(m)
				res.NextAction = &contract.Action{Tool: m.Operation, Arguments: args}
			} else if next := rt.replay(st, m); next != nil {
				res.NextAction = next
			}
			return res, nil
		},
	}
}

func filepathOf(st *evidence.Store, m *evidence.Manifest, name string) string {
	p, _, err := st.ArtifactPath(m, name)
	if err != nil {
		return ""
	}
	return p
}

func (rt *Runtime) queryTool() tool.Tool {
	return tool.Tool{
		Name: "query_evidence", Toolset: tool.Perf, Title: "Query evidence records",
		Description: "List evidence manifests newest first, 1-200 per page, filtered by creation range (RFC 3339 with offset; inclusive), operation, toolset and artifact format. The cursor is bound to the inventory snapshot of the first page and to the filters and page size: resume by submitting next_action unchanged. No argument is required.",
		Input: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{
"created_from":{"type":"string","format":"date-time","description":"Inclusive lower bound, RFC 3339 with offset."},
"created_to":{"type":"string","format":"date-time","description":"Inclusive upper bound, RFC 3339 with offset; must not precede created_from."},
"operation":{"type":"string","minLength":1,"maxLength":128},
"toolset":{"enum":["perf","bin","proc"]},
"format":{"type":"string","minLength":1,"maxLength":64},
"page_size":{"type":"integer","minimum":1,"maximum":200,"description":"Manifests per page; default 50."},
"cursor":{"type":"string","minLength":1,"maxLength":4096}}}`),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			return rt.Query(ctx, args)
		},
	}
}

// Query runs query_evidence on validated arguments.
func (rt *Runtime) Query(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	fields, err := decodeArgs(args)
	if err != nil {
		return nil, err
	}
	var f evidence.Filter
	for _, k := range []struct {
		key string
		dst *time.Time
	}{{"created_from", &f.CreatedFrom}, {"created_to", &f.CreatedTo}} {
		if s := strField(fields, k.key); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fieldErr(contract.CodeInvalidArgument, "/"+k.key, "%s must be an RFC 3339 timestamp with a timezone offset", k.key)
			}
			*k.dst = t
		}
	}
	if !f.CreatedFrom.IsZero() && !f.CreatedTo.IsZero() && f.CreatedTo.Before(f.CreatedFrom) {
		return nil, fieldErr(contract.CodeInvalidArgument, "/created_to", "created_to must not precede created_from")
	}
	f.Operation, f.Toolset, f.Format = strField(fields, "operation"), strField(fields, "toolset"), strField(fields, "format")
	n, ok, err := intField(fields, "page_size")
	if err != nil {
		return nil, err
	}
	if !ok {
		n = 50
	}
	st, err := rt.Store()
	if err != nil {
		return nil, err
	}
	p, err := st.Query(ctx, f, int(n), strField(fields, "cursor"))
	if err != nil {
		if ce := contract.AsError(err); ce.Code == contract.CodeCursorInvalid {
			ce.Field = "/cursor"
		}
		return nil, err
	}
	var next *contract.Action
	if p.NextCursor != "" {
		na := map[string]any{}
		for k, v := range fields {
			na[k] = v
		}
		na["page_size"] = n
		na["cursor"] = p.NextCursor
		next = &contract.Action{Tool: "query_evidence", Arguments: na}
	}
	cov := map[string]any{"complete": next == nil && p.Unreadable == 0, "rows_returned": len(p.Rows), "unreadable_manifests": p.Unreadable}
	data := map[string]any{"rows": p.Rows, "next_cursor": p.NextCursor, "snapshot": contract.Int(p.Snapshot), "coverage": cov}
	res := contract.NewResult("evidence", time.Now(), data)
	res.Coverage = cov
	if p.Unreadable > 0 {
		res.Warn(fmt.Sprintf("%d listed record(s) have a manifest that can no longer be read or verified (see each row's problem); their indexed facts are unverified and inspect_evidence reports them as REPOSITORY_CORRUPT", p.Unreadable))
	}
	if next != nil {
		res.Warn("more manifests remain: submit next_action unchanged")
		res.NextAction = next
	}
	return res, nil
}

func (rt *Runtime) rescueTool() tool.Tool {
	return tool.Tool{
		Name: "rescue_evidence", Toolset: tool.Perf, Title: "Rescue a session analysis to a new evidence store",
		Description: "Publish one live session analysis to a new evidence store at destination (an absolute path that does not exist, below an existing parent directory): the normal immutable store is staged beside it and published with one rename. Returns the evidence_id and the restart/reconnect handoff: environment {INQUEST_DATA_DIR: destination} and a next_page reading the rescued evidence. It does not change the active store. Repeating the same request validates the published evidence and returns the original handoff. Required: analysis_id, destination.",
		Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["analysis_id","destination"],"properties":{"analysis_id":{"type":"string","pattern":"^an-[0-9a-f]{24}$"},"destination":{"type":"string","minLength":2,"maxLength":4096,"description":"Absolute path of the new store directory; it must not exist; its parent must."}}}`),
		Annotations: tool.Annotations{Idempotent: true},
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			var a struct {
				AnalysisID  string `json:"analysis_id"`
				Destination string `json:"destination"`
			}
			_ = json.Unmarshal(args, &a)
			s, err := rt.lookup(a.AnalysisID)
			if err != nil {
				return nil, err
			}
			return rt.rescue(ctx, s, a.Destination)
		},
	}
}

// PreflightRescue checks a rescue destination before any analysis runs:
// absolute, not existing, parent an existing directory.
func PreflightRescue(dest string) error {
	if !filepath.IsAbs(dest) {
		return fieldErr(contract.CodeInvalidArgument, "/destination", "destination must be an absolute path")
	}
	dest = filepath.Clean(dest)
	if _, err := os.Lstat(dest); err == nil {
		return fieldErr(contract.CodeStateConflict, "/destination", "destination already exists; choose a new directory")
	}
	fi, err := os.Stat(filepath.Dir(dest))
	if err != nil || !fi.IsDir() {
		return fieldErr(contract.CodeInvalidArgument, "/destination", "the parent of destination must be an existing directory")
	}
	return nil
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
