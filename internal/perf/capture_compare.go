//go:build linux

package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/perf/capture"
	"github.com/inquest-dev/inquest/internal/tool"
)

// compareCase is one compared target of capture_and_compare_*: its name,
// and the argv and environment overrides that differ from target.
type compareCase struct {
	Name string            `json:"name"`
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env"`
}

// compareOracle is the optional semantic check run after every capture.
type compareOracle struct {
	Argv           []string `json:"argv"`
	TimeoutSeconds int      `json:"timeout_seconds"`
}

// compareExperiment is the experiment of the capture comparison tools:
// the cases are the compared targets (the first is the baseline); every
// block captures each case once in an order shuffled from seed, and each
// case's included captures are combined into that case's source.
type compareExperiment struct {
	Cases  []compareCase  `json:"cases"`
	Blocks int            `json:"blocks"`
	Seed   uint64         `json:"seed"`
	Oracle *compareOracle `json:"oracle"`
}

// goTestProvider is the provider of capture_and_compare_benchmarks.
type goTestProvider struct {
	Kind      string `json:"kind"`
	Bench     string `json:"bench"`
	Count     int    `json:"count"`
	Benchtime string `json:"benchtime"`
}

// compareBenchmarksArgs are capture_and_compare_benchmarks' arguments.
type compareBenchmarksArgs struct {
	Target     Target            `json:"target"`
	Provider   goTestProvider    `json:"provider"`
	Experiment compareExperiment `json:"experiment"`
	Preserve   bool              `json:"preserve"`
	Limits     json.RawMessage   `json:"limits"`
	PageSize   *int              `json:"page_size"`
	Confidence *float64          `json:"confidence"`
	Alpha      *float64          `json:"alpha"`
	Col        *string           `json:"col"`
	Row        *string           `json:"row"`
	Ignore     *string           `json:"ignore"`
	Filter     *string           `json:"filter"`
}

// compareProfilesArgs are capture_and_compare_profiles' arguments.
type compareProfilesArgs struct {
	Target      Target            `json:"target"`
	Provider    providerArg       `json:"provider"`
	Experiment  compareExperiment `json:"experiment"`
	Preserve    bool              `json:"preserve"`
	Limits      json.RawMessage   `json:"limits"`
	PageSize    *int              `json:"page_size"`
	SampleType  *string           `json:"sample_type"`
	Sort        *string           `json:"sort"`
	Granularity *string           `json:"granularity"`
	Focus       *string           `json:"focus"`
	Ignore      *string           `json:"ignore"`
}

// compareCaptureTools returns capture_and_compare_benchmarks (go-test) and
// capture_and_compare_profiles (go-test, pprof-http, perf, py-spy): each
// captures every experiment case over the blocks and compares the cases'
// combined artifacts with compare_benchmarks or compare_profiles.
func compareCaptureTools(rt *Runtime) []tool.Tool {
	bench := captureKind{op: compareBenchmarksOperation(), providers: []string{"go-test"}}
	prof := captureKind{op: compareProfilesOperation(), providers: profileProviders}
	return []tool.Tool{
		tool.Define(tool.Tool{
			Name: "capture_and_compare_benchmarks", Toolset: tool.Perf, Title: "Capture and compare Go benchmark results",
			Description: compareCaptureDescription(bench), Input: compareInputSchema(bench, rt.cfg.Ceilings),
			OutputData: analysisOutputSchema, Annotations: tool.Annotations{OpenWorld: true},
		}, func(ctx context.Context, a compareBenchmarksArgs) (*contract.Result, error) {
			p := providerArg{Kind: a.Provider.Kind, Bench: a.Provider.Bench, Count: a.Provider.Count, Benchtime: a.Provider.Benchtime}
			fields := map[string]any{}
			putOpt(fields, "confidence", a.Confidence)
			putOpt(fields, "alpha", a.Alpha)
			putOpt(fields, "col", a.Col)
			putOpt(fields, "row", a.Row)
			putOpt(fields, "ignore", a.Ignore)
			putOpt(fields, "filter", a.Filter)
			return rt.captureCompare(ctx, bench, &a.Target, &p, &a.Experiment, a.Preserve, a.Limits, a.PageSize, fields)
		}),
		tool.Define(tool.Tool{
			Name: "capture_and_compare_profiles", Toolset: tool.Perf, Title: "Capture and compare profiles",
			Description: compareCaptureDescription(prof), Input: compareInputSchema(prof, rt.cfg.Ceilings),
			OutputData: analysisOutputSchema, Annotations: tool.Annotations{OpenWorld: true},
		}, func(ctx context.Context, a compareProfilesArgs) (*contract.Result, error) {
			fields := map[string]any{}
			putOpt(fields, "sample_type", a.SampleType)
			putOpt(fields, "sort", a.Sort)
			putOpt(fields, "granularity", a.Granularity)
			putOpt(fields, "focus", a.Focus)
			putOpt(fields, "ignore", a.Ignore)
			return rt.captureCompare(ctx, prof, &a.Target, &a.Provider, &a.Experiment, a.Preserve, a.Limits, a.PageSize, fields)
		}),
	}
}

func putOpt[T any](m map[string]any, k string, v *T) {
	if v != nil {
		m[k] = *v
	}
}

func compareCaptureDescription(ck captureKind) string {
	d := "Capture every case of an experiment (the compared targets: each case's argv and env override target's; the first case is the baseline) and " + ck.op.Name + " over them, in one call. " +
		"Every block captures each case once, in an order shuffled from experiment.seed, so drift spreads over the cases; each case's included captures are combined into one source (source-N is case N): "
	if ck.op.Name == "compare_benchmarks" {
		d += "the go test outputs of the blocks are concatenated (count × blocks samples per benchmark), then compared like benchstat (columns source-0, source-1, ... = the cases in order). " +
			"go-test runs `go test -run=^$ -bench BENCH -count N [-benchtime T]` in target.cwd on the case's packages. "
	} else {
		d += "pprof profiles are merged (pprof's profile.Merge) and folded stacks concatenated, then compared with the first case as base. go-test runs the package's benchmarks with -cpuprofile (or provider.profile). " + profileProvidersDescription
	}
	d += "An observation is excluded (and counted in capture.experiment.cases) when the collector fails, produces no artifact, or the oracle (run after every successful capture with INQUEST_CAPTURE_STDOUT and INQUEST_CAPTURE_STDERR naming its console files) exits nonzero; a case with no included capture makes the analysis fail with a typed analysis_failure. " +
		"The whole tree is killed on timeout (target.budget.timeout_seconds, per capture) or cancellation; target.budget.max_memory_bytes is enforced with memory.max of a per-run cgroup v2 leaf where a writable delegation with the memory controller is detected, else RLIMIT_AS (executions say which). Progress is reported after each capture. " +
		"preserve: true publishes the combined sources (and the native artifacts) as evidence even when analysis fails. next_page reads the captured artifacts; it never reruns the workload. " +
		"Required: target, provider, experiment."
	return d
}

func compareInputSchema(ck captureKind, c Ceilings) json.RawMessage {
	var s map[string]any
	_ = json.Unmarshal(ck.inputSchema(c), &s)
	props := s["properties"].(map[string]any)
	exp := experimentSchema()
	exp["type"] = "object"
	ep := exp["properties"].(map[string]any)
	for _, k := range []string{"metric", "estimand", "threshold"} {
		delete(ep, k)
	}
	ep["blocks"].(map[string]any)["default"] = 1
	ep["blocks"].(map[string]any)["description"] = "Number of blocks: each block captures every case once."
	exp["description"] = "The compared targets: every block captures each case once in an order shuffled from seed; the first case is the baseline."
	props["experiment"] = exp
	s["required"] = append(s["required"].([]any), "experiment")
	b, _ := json.Marshal(s)
	return b
}

// caseCapture is one case's captures.
type caseCapture struct {
	name     string
	argv     []string
	env      map[string]string
	sources  []producedArtifact // included captures' analysis sources
	total    int
	excluded map[string]int
}

func (rt *Runtime) captureCompare(ctx context.Context, ck captureKind, t *Target, p *providerArg, e *compareExperiment, preserve bool, limits json.RawMessage, pageSize *int, opFields map[string]any) (*contract.Result, error) {
	call := map[string]any{}
	for k, v := range opFields {
		call[k] = v
	}
	if len(limits) > 0 {
		call["limits"] = limits
	}
	if pageSize != nil {
		call["page_size"] = *pageSize
	}
	raw, _ := json.Marshal(call)
	fields, err := decodeArgs(raw)
	if err != nil {
		return nil, err
	}
	if _, err := rt.effectiveLimits(fields); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(t.Cwd) {
		return nil, invalid("/target/cwd", "target.cwd must be an absolute path")
	}
	if fi, err := os.Stat(t.Cwd); err != nil || !fi.IsDir() {
		return nil, invalid("/target/cwd", "target.cwd is not an existing directory")
	}
	if !contains(ck.providers, p.Kind) {
		return nil, invalid("/provider/kind", "provider %q cannot feed %s", p.Kind, ck.op.Name).WithDetail("accepted_values", ck.providers)
	}
	if e.Blocks == 0 {
		e.Blocks = 1
	}
	if e.Oracle != nil && e.Oracle.TimeoutSeconds == 0 {
		e.Oracle.TimeoutSeconds = 60
	}
	cases := make([]*caseCapture, len(e.Cases))
	seen := map[string]bool{}
	for i, c := range e.Cases {
		if seen[c.Name] {
			return nil, invalid("/experiment/cases/"+itoa(i)+"/name", "case names must be unique")
		}
		seen[c.Name] = true
		env := map[string]string{}
		for k, v := range t.Env {
			env[k] = v
		}
		for k, v := range c.Env {
			env[k] = v
		}
		if len(env) > 32 {
			return nil, invalid("/experiment/cases/"+itoa(i)+"/env", "target.env and the case's env together exceed 32 overrides")
		}
		argv := c.Argv
		if len(argv) == 0 {
			argv = t.Argv
		}
		cases[i] = &caseCapture{name: c.Name, argv: argv, env: env, excluded: map[string]int{}}
		ct := caseTarget(t, cases[i])
		if err := checkProvider(p.Kind, ct); err != nil {
			return nil, err
		}
	}
	if err := checkProfileProvider(ctx, p, t); err != nil {
		return nil, err
	}
	if e.Oracle != nil {
		if _, err := lookPathEnv(e.Oracle.Argv[0], t); err != nil {
			return nil, fieldErr(contract.CodeExecutionFailed, "/experiment/oracle/argv/0", "%q was not found on PATH or is not executable", e.Oracle.Argv[0])
		}
	}
	dir, err := rt.newScratch()
	if err != nil {
		return nil, err
	}
	// The analysis operation each capture feeds (for the provider's
	// artifact choice): benchmarks output or a profile.
	feeds := "summarize_profile"
	if ck.op.Name == "compare_benchmarks" {
		feeds = "summarize_benchmarks"
	}
	all := &captureRun{collector: p.Kind, argv: t.Argv}
	sched := Schedule(len(cases), e.Blocks, e.Seed)
	total, n := len(cases)*e.Blocks, 0
	for b, order := range sched {
		for pos, ci := range order {
			if ctx.Err() != nil {
				return nil, cancelled()
			}
			c := cases[ci]
			sub := filepath.Join(dir, fmt.Sprintf("b%03d-c%02d", b, ci))
			if err := os.Mkdir(sub, 0o700); err != nil {
				return nil, contract.Errorf(contract.CodeResourceLimit, "no scratch directory could be created for the capture")
			}
			run, err := runProvider(ctx, sub, caseTarget(t, c), p, feeds)
			if err != nil {
				return nil, err
			}
			c.total++
			for i := range run.records {
				r := &run.records[i]
				r.Case, r.CaseIndex, r.Block, r.Position = c.name, ci, b, pos
			}
			reason := ""
			switch {
			case len(run.records) == 0 || !run.records[0].Included:
				reason = "workload_failed"
			case len(run.sources) == 0:
				reason = "no_artifact"
			case e.Oracle != nil:
				code, err := runOracle(ctx, sub, e.Oracle, caseTarget(t, c), p.Kind)
				if err != nil {
					return nil, err
				}
				run.records[0].OracleExitCode = &code
				if code != 0 {
					reason = "oracle_failed"
				}
			}
			if reason != "" {
				c.excluded[reason]++
				if len(run.records) > 0 {
					run.records[0].Included, run.records[0].ExcludedReason = false, reason
				}
			} else {
				c.sources = append(c.sources, run.sources...)
			}
			all.records = append(all.records, run.records...)
			for i, v := range run.execs {
				if len(all.execs) < 16 {
					if i < len(run.records) {
						// The record now carries case, block, oracle and
						// inclusion: refresh the view's copy of it.
						for k, val := range run.records[i].row() {
							v[k] = val
						}
					}
					all.execs = append(all.execs, v)
				}
			}
			for _, w := range run.warnings {
				all.warnings = append(all.warnings, fmt.Sprintf("%s block %d: %s", c.name, b, w))
			}
			all.console = run.console
			for _, a := range run.native {
				if len(all.native) < 32 {
					a.name = fmt.Sprintf("%s-b%03d-%s", c.name, b, a.name)
					all.native = append(all.native, a)
				}
			}
			n++
			progress(ctx, n, total)
		}
	}
	if len(all.records) > 16 {
		all.warnings = append(all.warnings, fmt.Sprintf("capture.executions lists the first 16 of %d captures", len(all.records)))
	}
	// Combine each case's included captures into its source.
	var aerr error
	for i, c := range cases {
		if len(c.sources) == 0 {
			if aerr == nil {
				aerr = contract.Errorf(contract.CodeExecutionFailed, "case %q has no included capture to compare (excluded: %v)", c.name, c.excluded)
			}
			continue
		}
		src, err := combineSources(c.sources, filepath.Join(dir, fmt.Sprintf("case-%02d", i)))
		if err != nil {
			if aerr == nil {
				aerr = err
			}
			continue
		}
		all.sources = append(all.sources, src)
	}
	var res *contract.Result
	if aerr == nil {
		var srcs []any
		for _, a := range all.sources {
			srcs = append(srcs, map[string]any{"kind": "path", "path": a.path, "format": a.format, "producer": a.producer})
		}
		call["sources"] = srcs
		raw, _ := json.Marshal(call)
		res, aerr = rt.Analyze(ctx, ck.op, raw)
	}
	if ctx.Err() != nil {
		return nil, contract.Errorf(contract.CodeCancelled, "the capture was cancelled")
	}
	var data map[string]any
	if aerr == nil {
		data, _ = res.Data.(map[string]any)
	} else {
		res = contract.NewResult("artifact", time.Now(), nil)
		ce := contract.AsError(aerr)
		data = map[string]any{"operation": ck.op.Name, "sources": []any{}, "summary": map[string]any{}, "rows": []any{}, "page": map[string]any{}, "next_page": nil,
			"analysis_failure": map[string]any{"code": ce.Code, "message": ce.Message, "analysis_source_count": len(all.sources)}}
		res.Warn("the captures ran but their comparison failed: " + ce.Message)
		res.Coverage = map[string]any{"complete": false}
	}
	var caseRows []any
	for i, c := range cases {
		caseRows = append(caseRows, map[string]any{"name": c.name, "source": "source-" + itoa(i), "argv": c.argv, "captures": c.total, "included": len(c.sources), "excluded": c.excluded})
	}
	outcome := captureOutcome(all.records)
	data["capture"] = map[string]any{
		"provider": p.Kind, "collector": all.collector, "executions": all.execs, "outcome": outcome, "artifacts": artifactNames(all),
		"experiment": map[string]any{"cases": caseRows, "blocks": e.Blocks, "seed": e.Seed, "schedule": sched},
	}
	for _, w := range all.warnings {
		res.Warn(w)
	}
	if f := outcome["failed"].(int); f > 0 {
		res.Warn(fmt.Sprintf("%d of %d captures did not exit 0 (see capture.executions)", f, outcome["executions"]))
	}
	if preserve {
		m, perr := rt.preserveCapture(ctx, ck, all, data, t, aerr)
		if perr != nil {
			return nil, perr
		}
		data["evidence_id"] = m.EvidenceID
		data["analysis_sources"] = analysisSources(m)
		if np, ok := data["next_page"].(*contract.Action); ok && np != nil {
			next := evidenceNextPage(ck.op.Name, np.Arguments, m)
			data["next_page"] = next
			res.NextAction = next
		}
	}
	res.Data = data
	return res, nil
}

// caseTarget is target with the case's argv and merged environment.
func caseTarget(t *Target, c *caseCapture) *Target {
	ct := *t
	ct.Argv, ct.Env = c.argv, c.env
	return &ct
}

func lookPathEnv(argv0 string, t *Target) (string, error) {
	return capture.LookPath(argv0, mergeEnv(os.Environ(), t.Env))
}

// combineSources joins one case's captured artifacts (all of one format)
// into a single source at base+ext: gobench and folded text are
// concatenated (benchmark samples and stack counts add up); pprof profiles
// are merged with profile.Merge (the profiles of one provider and kind
// share sample types). A single artifact is used as it is.
func combineSources(srcs []producedArtifact, base string) (producedArtifact, error) {
	out := srcs[0]
	if len(srcs) == 1 {
		return out, nil
	}
	switch out.format {
	case FormatPprof:
		var ps []*profile.Profile
		for _, s := range srcs {
			f, err := os.Open(s.path)
			if err != nil {
				return out, contract.Errorf(contract.CodeInputChanged, "a captured profile can no longer be read")
			}
			p, err := profile.Parse(f)
			f.Close()
			if err != nil {
				return out, contract.Errorf(contract.CodeDecodeFailed, "a captured profile does not decode as pprof: %v", err)
			}
			ps = append(ps, p)
		}
		m, err := profile.Merge(ps)
		if err != nil {
			return out, contract.Errorf(contract.CodeDecodeFailed, "the captured profiles of one case do not merge: %v", err)
		}
		out.path = base + ".pb.gz"
		f, err := os.Create(out.path)
		if err != nil {
			return out, contract.Errorf(contract.CodeResourceLimit, "the combined profile could not be written to scratch")
		}
		if err := m.Write(f); err != nil {
			f.Close()
			return out, contract.Errorf(contract.CodeResourceLimit, "the combined profile could not be written to scratch")
		}
		return out, f.Close()
	default:
		out.path = base + "." + out.format
		f, err := os.Create(out.path)
		if err != nil {
			return out, contract.Errorf(contract.CodeResourceLimit, "the combined artifact could not be written to scratch")
		}
		w := bufio.NewWriter(f)
		for _, s := range srcs {
			in, err := os.Open(s.path)
			if err != nil {
				f.Close()
				return out, contract.Errorf(contract.CodeInputChanged, "a captured artifact can no longer be read")
			}
			_, err = io.Copy(w, in)
			in.Close()
			if err == nil {
				err = w.WriteByte('\n')
			}
			if err != nil {
				f.Close()
				return out, contract.Errorf(contract.CodeResourceLimit, "the combined artifact could not be written to scratch")
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return out, contract.Errorf(contract.CodeResourceLimit, "the combined artifact could not be written to scratch")
		}
		return out, f.Close()
	}
}

// consolePrefix is the console file prefix each provider's run writes in
// its directory.
var consolePrefix = map[string]string{"go-test": "go-test", "pprof-http": "workload", "perf": "perf-record", "py-spy": "py-spy"}

// runOracle runs the experiment's oracle after one capture in sub with
// INQUEST_CAPTURE_STDOUT/STDERR naming that capture's console files, in
// the case's environment; it returns the oracle's exit code (-1 when it
// did not exit by itself).
func runOracle(ctx context.Context, sub string, o *compareOracle, ct *Target, kind string) (int, error) {
	prefix := consolePrefix[kind]
	env := append(mergeEnv(os.Environ(), ct.Env),
		"INQUEST_CAPTURE_STDOUT="+filepath.Join(sub, prefix+".stdout"), "INQUEST_CAPTURE_STDERR="+filepath.Join(sub, prefix+".stderr"))
	s := ct.spec(sub, "oracle", o.Argv, env, diagnosticsConsoleBytes)
	s.Timeout = time.Duration(o.TimeoutSeconds) * time.Second
	s.MaxMemoryBytes = 0
	ex, err := capture.Run(ctx, s)
	if err != nil {
		return 0, startFailure(err, "/experiment/oracle/argv/0")
	}
	if ex.ExitCode == nil {
		return -1, nil
	}
	return *ex.ExitCode, nil
}
