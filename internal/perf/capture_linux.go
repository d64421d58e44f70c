//go:build linux

package perf

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/perf/capture"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Console retention per stream: diagnostics keeps the first 64 KiB, full
// (and any console output that is itself the analysis artifact) the first
// 64 MiB.
const (
	diagnosticsConsoleBytes = 64 << 10
	fullConsoleBytes        = 64 << 20
	maxScratchPerRuntime    = 64
)

// captureKind declares one capture_and_ tool: the analysis operation it
// feeds, its provider kinds, and whether it takes an experiment.
type captureKind struct {
	op *Operation
	// declare declares the tool over the kind's arguments struct
	// (captureTool instantiated with it).
	declare    func(rt *Runtime, ck captureKind, t tool.Tool) tool.Tool
	providers  []string
	experiment bool
	// compare marks the comparison kinds: the experiment (required) lists
	// the compared targets, each captured once per block, and each case's
	// captures become one analysis source (capture_compare.go).
	compare bool
	// omit lists operation fields the capture tool does not expose
	// (summarize_executions takes them from the experiment).
	omit []string
}

func captureKinds() []captureKind {
	return []captureKind{
		{op: executionsOperation(), declare: captureTool[captureExecutionsArgs], providers: []string{"direct"}, experiment: true, omit: []string{"metric", "estimand", "threshold", "seed"}},
		{op: previewOperation(), declare: captureTool[capturePreviewArgs], providers: []string{"direct", "go-test"}},
		{op: summarizeBenchmarksOperation(), declare: captureTool[captureBenchmarksArgs], providers: []string{"go-test"}},
		{op: summarizeProfileOperation(), declare: captureTool[captureProfileArgs], providers: profileProviders},
		// capture_and_compare_benchmarks and capture_and_compare_profiles
		// (capture_compare.go): every experiment case is a compared target.
		{op: compareBenchmarksOperation(), declare: captureTool[captureCompareBenchmarksArgs], providers: []string{"go-test"}, compare: true},
		{op: compareProfilesOperation(), declare: captureTool[captureCompareProfilesArgs], providers: profileProviders, compare: true},
	}
}

func captureOperationProviders() map[string][]string {
	offered := offeredProviders()
	out := map[string][]string{}
	for _, ck := range captureKinds() {
		var ps []string
		for _, p := range ProviderKinds {
			if offered[p] && slices.Contains(ck.providers, p) {
				ps = append(ps, p)
			}
		}
		out[ck.op.Name] = ps
	}
	return out
}

func captureProviderKinds() []string {
	var out []string
	for _, p := range ProviderKinds {
		if offeredProviders()[p] {
			out = append(out, p)
		}
	}
	return out
}

func (rt *Runtime) captureTools() []tool.Tool {
	out := []tool.Tool{rt.prepareTool()}
	for _, ck := range captureKinds() {
		ck := ck
		out = append(out, ck.declare(rt, ck, tool.Tool{
			Name: "capture_and_" + ck.op.Name, Toolset: tool.Perf,
			Title:       "Capture and " + strings.ToLower(ck.op.Title[:1]) + ck.op.Title[1:],
			Description: captureDescription(ck),
			Details:     captureDetails(ck),
			Input:       ck.inputSchema(rt.cfg.Ceilings),
			// It runs whatever program the caller names, as the user
			// running inquest: that program may change or destroy
			// anything the user can, and reach anything on the network.
			Annotations: tool.Annotations{Destructive: true, OpenWorld: true},
		}))
	}
	return out
}

func captureDescription(ck captureKind) string {
	if ck.compare {
		return compareCaptureDescription(ck)
	}
	return "Run target.argv (a program, never a shell) as the user running inquest under provider " + orList(ck.providers) + ", then " + ck.op.Name + " over its output. Required: target, provider."
}

// captureDetails is the longer guidance of a capture tool, shown by
// `inquest mcp inspect --tool` and docs/tools.md (not tools/list): what
// each provider runs and what the analysis reads.
func captureDetails(ck captureKind) string {
	if ck.compare {
		return compareCaptureDetails(ck) + " " + followDetails
	}
	return "The program runs in its own process tree, so the budget's timeout kills it all. " + captureKindDetails(ck)
}

// captureKindDetails is the part of captureDetails that depends on the
// analysis: what each provider runs and what the analysis reads.
func captureKindDetails(ck captureKind) string {
	switch ck.op.Name {
	case "summarize_executions":
		return "direct measures wall time, CPU and max RSS of each execution, and an experiment compares cases run in randomized blocks. " + followDetails
	case "preview_artifact":
		return "It previews the workload's retained stdout. " + followDetails
	case "summarize_benchmarks":
		return "go-test runs go test -bench in target.cwd. " + followDetails
	case "summarize_profile":
		return "go-test runs the benchmarks with -cpuprofile (or provider.profile); " + strings.TrimSpace(profileProvidersDescription) + " " + followDetails
	}
	return followDetails
}

// followDetails says how a caller follows a capture's running workload
// (follow_linux.go).
const followDetails = "While the call runs, each execution's process is named for the proc tools: with a progress token, a notifications/progress as it starts gives its pid and process_ref (_meta[\"inquest/execution\"]; the proc host has already sampled it, so get_process_info and wait_condition accept the ref at once), and another as it ends; the capture.executions rows carry the same pid and process_ref."

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func (ck captureKind) inputSchema(c Ceilings) json.RawMessage {
	props := js{
		"limits":    limitsSchema(c),
		"page_size": pageSizeSchema(c),
		"target":    targetSchema(ck),
		"provider":  providerSchema(ck),
		"preserve":  js{"type": "boolean", "default": false, "description": "Keep the artifacts as evidence."},
	}
	for _, f := range ck.op.Fields {
		if !contains(ck.omit, f.Name) {
			props[f.Name] = f.Schema
		}
	}
	required := append([]string{"target", "provider"}, ck.op.Required...)
	switch {
	case ck.experiment:
		props["experiment"] = experimentSchema()
	case ck.compare:
		props["experiment"] = compareExperimentSchema()
		required = append(required, "experiment")
	}
	return object(props, required...).json()
}

func targetSchema(ck captureKind) js {
	argvDesc := "Never a shell string."
	switch {
	case len(ck.providers) == 1 && ck.providers[0] == "go-test":
		argvDesc = "Package arguments of go test."
	case contains(ck.providers, "go-test"):
		argvDesc += " With go-test: package arguments."
	}
	return js{
		"type": "object", "additionalProperties": false, "required": []string{"argv", "cwd"},

		"properties": js{
			"argv": js{"type": "array", "minItems": 1, "maxItems": 1024, "items": js{"type": "string", "maxLength": 32768}, "description": argvDesc},
			"cwd":  js{"type": "string", "minLength": 1, "maxLength": 4096, "description": "Existing absolute directory."},
			"env": js{"type": "object", "maxProperties": 32, "additionalProperties": false,
				"patternProperties": js{"^[A-Za-z_][A-Za-z0-9_]{0,127}$": js{"type": "string", "maxLength": 32768}}},
			"console_output": js{"enum": []string{"diagnostics", "full"}, "default": "diagnostics", "description": "Kept per stream: 64 KiB or 64 MiB."},
			"budget": js{"type": "object", "additionalProperties": false, "description": "Omitted: no limit.",
				"properties": js{
					"timeout_seconds":  js{"type": []string{"integer", "null"}, "minimum": 1, "maximum": 86400, "description": "Per execution; kills the tree."},
					"max_memory_bytes": js{"type": []string{"integer", "null"}, "minimum": 1 << 20, "maximum": int64(1) << 46, "description": "cgroup v2 memory.max, else RLIMIT_AS."},
				}},
		},
	}
}

func providerSchema(ck captureKind) js {
	branch := func(kind string) js {
		props := js{"kind": js{"const": kind}}
		switch kind {
		case "go-test":
			props["bench"] = js{"type": "string", "minLength": 1, "maxLength": 1024, "default": ".", "description": "go test -bench."}
			props["count"] = js{"type": "integer", "minimum": 1, "maximum": 100, "default": 1, "description": "go test -count."}
			props["benchtime"] = js{"type": "string", "pattern": "^[0-9]+(x|ns|us|ms|s|m)$", "description": "go test -benchtime."}
			if ck.op.Name == "summarize_profile" || ck.op.Name == "compare_profiles" {
				props["profile"] = js{"enum": []string{"cpu", "mem", "block", "mutex"}, "default": "cpu", "description": "Profile to write and summarize."}
			}
		}
		return object(props, profileProviderFields(kind, props)...)
	}
	if len(ck.providers) == 1 {
		return branch(ck.providers[0])
	}
	// Discriminated on kind by a chain of if/then/else, one branch per
	// provider, so a failure names the selected branch's field.
	chain := branch(ck.providers[len(ck.providers)-1])
	for i := len(ck.providers) - 2; i >= 0; i-- {
		chain = js{
			"if":   js{"properties": js{"kind": js{"const": ck.providers[i]}}},
			"then": branch(ck.providers[i]),
			"else": chain,
		}
	}
	chain["required"] = []string{"kind"}
	chain["properties"] = js{"kind": js{"enum": ck.providers}}
	return chain
}

func experimentSchema() js {
	caseSchema := js{
		"type": "object", "additionalProperties": false, "required": []string{"name"},
		"properties": js{
			"name": js{"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
			"argv": js{"type": "array", "minItems": 1, "maxItems": 1024, "items": js{"type": "string", "maxLength": 32768}, "description": "Default: target.argv."},
			"env": js{"type": "object", "maxProperties": 32, "additionalProperties": false,
				"patternProperties": js{"^[A-Za-z_][A-Za-z0-9_]{0,127}$": js{"type": "string", "maxLength": 32768}}, "description": "Overrides on top of target.env."},
		},
	}
	return js{
		"type": []string{"object", "null"}, "additionalProperties": false, "required": []string{"cases"},
		"description": "Cases run once per block in a seeded order.",
		"properties": js{
			"cases":     js{"type": "array", "minItems": 2, "maxItems": 16, "items": caseSchema, "description": "The first is the baseline; names unique."},
			"blocks":    js{"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
			"seed":      js{"type": "integer", "minimum": 0, "maximum": 9007199254740991, "default": 0, "description": "Seeds the order and the bootstrap."},
			"metric":    js{"enum": []string{"wall_time_ns", "cpu_time_ns", "max_rss_bytes"}, "default": "wall_time_ns"},
			"estimand":  js{"enum": []string{"median_difference", "mean_difference"}, "default": "median_difference"},
			"threshold": js{"type": "number", "minimum": 0, "maximum": 10, "default": 0.05, "description": "Relative effect the CI must clear."},
			"oracle": js{"type": "object", "additionalProperties": false, "required": []string{"argv"},
				"description": "Run after each successful execution; nonzero excludes it.",
				"properties": js{
					"argv":            js{"type": "array", "minItems": 1, "maxItems": 1024, "items": js{"type": "string", "maxLength": 32768}},
					"timeout_seconds": js{"type": "integer", "minimum": 1, "maximum": 3600, "default": 60},
				}},
		},
	}
}

// captureArgs are the arguments every capture tool takes; each kind's
// arguments struct embeds them beside its provider and the analysis
// operation's own fields.
type captureArgs struct {
	Target   Target     `json:"target"`
	Preserve bool       `json:"preserve,omitempty"`
	Limits   *limitsArg `json:"limits,omitempty"`
	PageSize *integer   `json:"page_size,omitempty"`
}

func (a *captureArgs) capture() *captureArgs { return a }

// captureExecutionsArgs: capture_and_summarize_executions (direct, with an
// experiment).
type captureExecutionsArgs struct {
	captureArgs
	Provider   directProvider `json:"provider"`
	Experiment *Experiment    `json:"experiment,omitempty"`
}

// capturePreviewArgs: capture_and_preview_artifact (direct or go-test).
type capturePreviewArgs struct {
	captureArgs
	Provider providerArg `json:"provider"`
	previewFields
}

// captureBenchmarksArgs: capture_and_summarize_benchmarks (go-test).
type captureBenchmarksArgs struct {
	captureArgs
	Provider goTestProvider `json:"provider"`
	benchSummaryFields
}

// captureProfileArgs: capture_and_summarize_profile (go-test with a
// profile kind).
type captureProfileArgs struct {
	captureArgs
	Provider providerArg `json:"provider"`
	profileFields
}

func (a *captureExecutionsArgs) provider() providerArg {
	return providerArg{goTestProvider: goTestProvider{Kind: a.Provider.Kind}}
}
func (a *capturePreviewArgs) provider() providerArg { return a.Provider }
func (a *captureBenchmarksArgs) provider() providerArg {
	return providerArg{goTestProvider: a.Provider}
}
func (a *captureProfileArgs) provider() providerArg      { return a.Provider }
func (a *captureExecutionsArgs) experiment() *Experiment { return a.Experiment }

// captureArgsOf is the constraint of a capture kind's arguments struct A.
type captureArgsOf[A any] interface {
	*A
	capture() *captureArgs
	provider() providerArg
}

// captureTool declares a capture tool over its arguments struct A: the
// arguments are decoded once into A; the analysis operation's own fields
// of A are replayed into the analysis call.
func captureTool[A any, P captureArgsOf[A]](rt *Runtime, ck captureKind, t tool.Tool) tool.Tool {
	return tool.Define(t, func(ctx context.Context, a A) (*contract.Result, error) {
		var exp *Experiment
		if e, ok := any(&a).(interface{ experiment() *Experiment }); ok {
			exp = e.experiment()
		}
		return rt.capture(ctx, ck, P(&a).capture(), P(&a).provider(), exp, &a)
	})
}

// Target is the decoded target argument.
type Target struct {
	Argv          []string          `json:"argv"`
	Cwd           string            `json:"cwd"`
	Env           map[string]string `json:"env,omitempty"`
	ConsoleOutput string            `json:"console_output,omitempty"`
	Budget        struct {
		TimeoutSeconds *int64 `json:"timeout_seconds"`
		MaxMemoryBytes *int64 `json:"max_memory_bytes"`
	} `json:"budget"`
}

// directProvider is the provider argument of a direct-only capture.
type directProvider struct {
	Kind string `json:"kind"`
}

// goTestProvider is the go-test provider argument.
type goTestProvider struct {
	Kind      string `json:"kind"`
	Bench     string `json:"bench,omitempty"`
	Count     int    `json:"count,omitempty"`
	Benchtime string `json:"benchtime,omitempty"`
}

// providerArg is the provider argument with every provider field.
type providerArg struct {
	goTestProvider
	Profile string `json:"profile,omitempty"`
	// pprof-http, perf and py-spy fields (providers_capture_linux.go).
	URL          string `json:"url,omitempty"`
	Seconds      int    `json:"seconds,omitempty"`
	Frequency    int    `json:"frequency,omitempty"`
	Subprocesses bool   `json:"subprocesses,omitempty"`
}

// Experiment is the decoded experiment argument.
type Experiment struct {
	Cases     []experimentCase  `json:"cases"`
	Blocks    int               `json:"blocks"`
	Seed      uint64            `json:"seed"`
	Metric    string            `json:"metric"`
	Estimand  string            `json:"estimand"`
	Threshold *float64          `json:"threshold"`
	Oracle    *experimentOracle `json:"oracle"`
}

// experimentCase is one case of an experiment: its name, and the argv
// and environment overrides that differ from target.
type experimentCase struct {
	Name string            `json:"name"`
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env"`
}

// experimentOracle is the optional semantic check run after every
// successful execution (or capture).
type experimentOracle struct {
	Argv           []string `json:"argv"`
	TimeoutSeconds int      `json:"timeout_seconds"`
}

// Schedule returns the case order of every block: block b's order is a
// permutation of 0..cases-1 drawn by a PCG generator seeded with (seed, b),
// so the same seed always gives the same schedule.
func Schedule(cases, blocks int, seed uint64) [][]int {
	out := make([][]int, blocks)
	for b := range out {
		out[b] = rand.New(rand.NewPCG(seed, uint64(b))).Perm(cases)
	}
	return out
}

// scratch directories of capture requests, per Runtime, oldest first;
// they back live capture results (next_page reads them) and are removed
// beyond maxScratchPerRuntime or by ReleaseCaptures.
var scratch = struct {
	mu   sync.Mutex
	dirs map[*Runtime][]string
}{dirs: map[*Runtime][]string{}}

func (rt *Runtime) newScratch() (string, error) {
	dir, err := os.MkdirTemp("", "inquest-capture-")
	if err != nil {
		return "", contract.Errorf(contract.CodeResourceLimit, "no scratch directory could be created for the capture")
	}
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	l := append(scratch.dirs[rt], dir)
	for len(l) > maxScratchPerRuntime {
		os.RemoveAll(l[0])
		l = l[1:]
	}
	scratch.dirs[rt] = l
	return dir, nil
}

func (rt *Runtime) keepCapture(path string) string {
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	l := scratch.dirs[rt]
	for i, d := range l {
		if strings.HasPrefix(path, d+string(filepath.Separator)) {
			scratch.dirs[rt] = append(l[:i:i], l[i+1:]...)
			return d
		}
	}
	return ""
}

func (rt *Runtime) releaseCaptures() {
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	for _, d := range scratch.dirs[rt] {
		os.RemoveAll(d)
	}
	delete(scratch.dirs, rt)
}

// producedArtifact is one file a capture produced.
type producedArtifact struct {
	name, path, format, producer, role string
}

// captureRun is what the provider step produced.
type captureRun struct {
	records []ExecutionRecord
	execs   []map[string]any
	sources []producedArtifact // analysis sources, in order
	console []producedArtifact // retained console of the last execution
	native  []producedArtifact // native collector output kept beside the sources (perf.data)
	// cases are the per-case rows of a comparison capture
	// (capture.experiment.cases), nil otherwise.
	cases []any
	// failure, when set, is why the captured sources cannot be analyzed
	// (a compared case with no included capture): the analysis_failure.
	failure  error
	warnings []string
	// limitations say why the captured artifacts cover less than the
	// whole workload (a collector stopped by the budget's timeout): each
	// is a warning and an entry of coverage.incomplete.
	limitations []string
	argv        []string
	collector   string
}

func invalid(field, format string, args ...any) *contract.Error {
	return fieldErr(contract.CodeInvalidArgument, field, format, args...)
}

// capture runs one capture tool call: c are the shared capture
// arguments, prov the provider, exp the experiment (nil when absent) and
// all the whole arguments struct, whose analysis fields the analysis call
// replays.
func (rt *Runtime) capture(ctx context.Context, ck captureKind, c *captureArgs, prov providerArg, exp *Experiment, all any) (*contract.Result, error) {
	lim, err := rt.effectiveLimits(&operationArgs{Limits: c.Limits, PageSize: c.PageSize})
	if err != nil {
		return nil, err
	}
	top := struct {
		Target     *Target
		Provider   providerArg
		Preserve   bool
		Experiment *Experiment
	}{&c.Target, prov, c.Preserve, exp}
	t := top.Target
	if !filepath.IsAbs(t.Cwd) {
		return nil, invalid("/target/cwd", "target.cwd must be an absolute path")
	}
	if fi, err := os.Stat(t.Cwd); err != nil || !fi.IsDir() {
		return nil, invalid("/target/cwd", "target.cwd is not an existing directory")
	}
	if !contains(ck.providers, top.Provider.Kind) {
		return nil, invalid("/provider/kind", "provider %q cannot feed %s", top.Provider.Kind, ck.op.Name).WithDetail("accepted_values", ck.providers)
	}
	// A comparison checks each case's target instead (checkCompareCases):
	// the cases' argv and env replace the target's.
	if !ck.compare {
		if err := checkProvider(top.Provider.Kind, t); err != nil {
			return nil, err
		}
	}
	if err := checkProfileProvider(ctx, &top.Provider, t); err != nil {
		return nil, err
	}
	if !ck.compare {
		if err := checkExecutable(top.Provider.Kind, t, "/target/argv/0"); err != nil {
			return nil, err
		}
	}
	if top.Experiment != nil {
		if err := checkExperiment(top.Experiment, t); err != nil {
			return nil, err
		}
	}
	if ck.compare {
		if err := checkCompareCases(top.Experiment, t, top.Provider.Kind); err != nil {
			return nil, err
		}
	}
	// preserve: true needs a usable evidence store: one that cannot be
	// opened (a symbolic link, another owner, group-writable, unreadable,
	// corrupt) is refused before the workload runs. A full disk is not
	// refused here: the capture runs and says its preserve failed, with
	// the preserve_evidence call that keeps it once there is room.
	if top.Preserve {
		if _, err := rt.Store(); err != nil {
			if ce := contract.AsError(err); ce.Code != contract.CodeResourceLimit {
				e := *ce
				e.Message = "preserve is true but the evidence store is unusable, so the workload was not run: " + ce.Message
				e.Field = "/preserve"
				return nil, &e
			}
		}
	}
	dir, err := rt.newScratch()
	if err != nil {
		return nil, err
	}
	// Every execution is named and reported as it starts and ends.
	executions := 1
	if e := top.Experiment; e != nil && (ck.compare || top.Provider.Kind == "direct") {
		executions = len(e.Cases) * e.Blocks
	}
	ctx = rt.withFollower(ctx, executions)
	var run *captureRun
	switch {
	case ck.compare:
		run, err = runCompare(ctx, dir, t, &top.Provider, top.Experiment, ck.op.Name)
	case top.Provider.Kind == "direct":
		run, err = runDirect(ctx, dir, t, top.Experiment, ck.op.Name == "summarize_executions")
	default:
		run, err = runProvider(ctx, dir, t, &top.Provider, ck.op.Name)
	}
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, contract.Errorf(contract.CodeCancelled, "the capture was cancelled; its process tree was killed")
	}
	budget := tool.ResultBudget(ctx)
	inRows := ck.op.Name == "summarize_executions" && top.Provider.Kind == "direct"
	elideArgvs(run, budget)
	listExecutions(run, budget, inRows)

	// Analysis over the captured artifacts, through the analysis tool.
	call := replayArgs(all)
	for _, k := range []string{"target", "provider", "preserve", "experiment"} {
		delete(call, k)
	}
	if c.Limits != nil {
		call["limits"] = c.Limits
	}
	if c.PageSize != nil {
		call["page_size"] = c.PageSize
	}
	if e := top.Experiment; e != nil && ck.experiment {
		call["metric"], call["estimand"], call["seed"] = e.Metric, e.Estimand, e.Seed
		call["threshold"] = *e.Threshold
	}
	var srcs []any
	for _, a := range run.sources {
		srcs = append(srcs, map[string]any{"kind": "path", "path": a.path, "format": a.format, "producer": a.producer})
	}
	call["sources"] = srcs
	raw, _ := json.Marshal(call)
	var res *contract.Result
	var aerr error
	switch {
	case run.failure != nil:
		aerr = run.failure
	case len(srcs) == 0:
		aerr = contract.Errorf(contract.CodeExecutionFailed, "the collector produced no analysis artifact")
	default:
		// The capture block, evidence fields and handoff warnings ride
		// outside the analysis page: the page is sized within what the
		// result budget leaves after them.
		actx := ctx
		if extra := captureOverheadBytes(top.Provider.Kind, run, top.Experiment); extra > 0 {
			b := tool.ResultBudget(ctx) - extra
			if b < 1 {
				b = 1
			}
			actx = tool.WithResultBudget(ctx, b)
		}
		res, aerr = rt.Analyze(actx, ck.op, raw)
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
		data = map[string]any{"operation": ck.op.Name, "sources": []any{}, "summary": map[string]any{}, "rows": []any{}, "page": tool.Page{Size: lim.MaxRows}, "next_cursor": nil,
			"analysis_failure": map[string]any{"code": ce.Code, "message": ce.Message, "analysis_source_count": len(run.sources)}}
		res.Warn("the capture ran but its analysis failed: " + ce.Message)
		res.Coverage = map[string]any{"complete": false}
	}
	outcome := captureOutcome(run.records)
	layout := factorExecutions(run, ck.op.Name == "summarize_executions" && aerr == nil)
	data["capture"] = map[string]any{
		"provider": top.Provider.Kind, "collector": run.collector, "executions": run.execs, "outcome": outcome,
		"artifacts": artifactNames(run),
	}
	if layout != "" {
		data["capture"].(map[string]any)["cgroup_layout"] = layout
	}
	if e := top.Experiment; e != nil {
		x := map[string]any{"cases": len(e.Cases), "blocks": e.Blocks, "seed": e.Seed, "schedule": Schedule(len(e.Cases), e.Blocks, e.Seed)}
		if run.cases != nil {
			x["cases"] = run.cases
		}
		data["capture"].(map[string]any)["experiment"] = x
	}
	for _, w := range run.warnings {
		res.Warn(w)
	}
	if len(run.limitations) > 0 {
		cov, _ := res.Coverage.(map[string]any)
		if cov == nil {
			cov = map[string]any{}
		}
		cov["complete"] = false
		inc, _ := cov["incomplete"].([]string)
		cov["incomplete"] = append(append([]string(nil), inc...), run.limitations...)
		res.Coverage = cov
		for _, l := range run.limitations {
			res.Warn(l)
		}
	}
	if outcome["failed"].(int) > 0 {
		res.Warn(fmt.Sprintf("%d of %d executions did not exit 0 (see capture.executions)", outcome["failed"], outcome["executions"]))
	}
	var storedPath func(name string) string
	if top.Preserve {
		m, perr := rt.preserveCapture(ctx, ck, run, data, t, aerr)
		switch {
		case perr != nil && ctx.Err() != nil:
			return nil, contract.Errorf(contract.CodeCancelled, "the capture was cancelled")
		case perr != nil:
			// The workload ran and its analysis stands: say why it was
			// not preserved rather than lose it (repeating the capture
			// would rerun the workload); next_action becomes
			// preserve_evidence of the analysis.
			preserveFailed(res, data, perr)
		default:
			data["evidence_id"] = m.EvidenceID
			data["analysis_sources"] = analysisSources(m)
			if st, err := rt.Store(); err == nil {
				storedPath = func(name string) string { return filepathOf(st, m, name) }
			}
			if np := res.NextAction; np != nil {
				res.NextAction = evidenceNextPage(ck.op.Name, np.Arguments, m)
			}
		}
	}
	captureHandoff(res, data, storedPath)
	res.Data = data
	fitCapture(res, data, run, budget, inRows)
	return res, nil
}

// preserveFailed records in res that preserving a capture failed with err
// (e.g. RESOURCE_LIMIT of a full evidence store): data.preserve_failure
// {code, message} and a warning; res is then partial and has no
// evidence_id. The analysis stays in the session: with data.analysis_id,
// res.NextAction becomes preserve_evidence of it, which publishes the
// captured analysis sources without rerunning the workload once the store
// has room.
func preserveFailed(res *contract.Result, data map[string]any, err error) {
	ce := contract.AsError(err)
	data["preserve_failure"] = map[string]any{"code": ce.Code, "message": ce.Message}
	retry := "the analysis was not kept in a session, so nothing can be preserved later without capturing again"
	if id, _ := data["analysis_id"].(string); id != "" {
		retry = "the call to repeat once the store has room is preserve_evidence {\"analysis_id\": \"" + id + "\"} (next_action), not this capture: it preserves the same artifacts a successful preserve keeps (analysis sources, retained console, collector output) without rerunning the workload"
		// Before any next page: the scratch files behind the analysis
		// live only as long as the session. The live next page, which
		// next_action no longer names, stays in data.next_page.
		if res.NextAction != nil {
			data["next_page"] = res.NextAction
		}
		res.NextAction = &contract.Action{Tool: "preserve_evidence", Arguments: map[string]any{"analysis_id": id}}
	}
	res.Warn(fmt.Sprintf("the capture ran and was analyzed, but preserving it as evidence failed, so this result has no evidence_id (%s: %s); %s", ce.Code, ce.Message, retry))
}

// fitCapture drops trailing capture.executions rows while res as delivered
// (tool.DeliveredBytes) is over budget, for an analysis page whose fixed
// part (summary, sources, next call) left less than listExecutions
// assumed; the listing warning then names the rows still listed. A result
// over budget with no row left to drop is returned as it is.
func fitCapture(res *contract.Result, data map[string]any, run *captureRun, budget int, inRows bool) {
	c, _ := data["capture"].(map[string]any)
	for c != nil && len(run.execs) > 0 {
		body, _ := contract.Marshal(res, nil)
		if tool.DeliveredBytes(body) <= budget {
			return
		}
		run.execs = run.execs[:len(run.execs)-1]
		c["executions"] = run.execs
		w := listedWarning(run, budget, inRows)
		i := slices.IndexFunc(res.Warnings, func(s string) bool { return strings.HasPrefix(s, listedWarningPrefix) })
		if i >= 0 {
			res.Warnings[i] = w
		} else {
			res.Warn(w)
		}
	}
}

// captureHandoff names the next call of a capture result that has no next
// page and says where its analysis sources live. The captured files are in
// a scratch directory removed when the session ends (inquest mcp) or the
// command exits (CLI), so data.sources never presents a scratch path as
// lasting: with data.evidence_id each source names its preserved evidence
// artifact (kind evidence, artifact_selector source-N) and next_action is
// inspect_evidence, and path is the artifact's file in the evidence store
// (storedPath of its name; omitted when unknown); without it each path source is marked scratch with
// when it is removed, and next_action is preserve_evidence of
// data.analysis_id (when the session keeps the analysis), else a warning
// says the artifacts are not kept.
func captureHandoff(res *contract.Result, data map[string]any, storedPath func(name string) string) {
	evID, _ := data["evidence_id"].(string)
	srcs, _ := data["sources"].([]any)
	for i, s := range srcs {
		m, ok := s.(map[string]any)
		if !ok || m["kind"] != "path" {
			continue
		}
		if evID != "" {
			name := "source-" + itoa(i)
			delete(m, "path")
			if storedPath != nil {
				if p := storedPath(name); p != "" {
					m["path"] = p
				}
			}
			m["kind"], m["evidence_id"], m["artifact_selector"] = "evidence", evID, name
			continue
		}
		m["scratch"] = true
		m["removed_when"] = "the capture's scratch directory is removed when the session ends (inquest mcp) or the command exits (inquest capture); preserve the analysis to keep it"
	}
	if res.NextAction != nil {
		return
	}
	switch id, _ := data["analysis_id"].(string); {
	case evID != "":
		res.NextAction = &contract.Action{Tool: "inspect_evidence", Arguments: map[string]any{"evidence_id": evID}}
	case id != "":
		res.NextAction = &contract.Action{Tool: "preserve_evidence", Arguments: map[string]any{"analysis_id": id}}
		res.Warn("the captured artifacts are in a scratch directory removed when this session ends: preserve_evidence (next_action) keeps them as evidence")
	default:
		res.Warn("the captured artifacts are not kept: their scratch directory is removed when this session ends; capture again with preserve:true to keep them as evidence")
	}
}

// maxListedExecutions caps the rows of capture.executions; the result
// byte budget may list fewer (listExecutions).
const maxListedExecutions = 16

// listExecutions cuts run.execs, the capture.executions rows, to the
// leading executions whose rows fit in half of budget as delivered
// (tool.DeliveredBytes: text block and structuredContent), at most
// maxListedExecutions, so the analysis page keeps the rest of the budget.
// When fewer than all executions are listed, a warning says how many and
// where every execution's record is: the rows of the analysis (inRows,
// capture_and_summarize_executions with the direct provider), the
// executions artifact of a comparison (kept by preserve), or nowhere.
// Another warning says when a listed row or a capture.experiment.cases row
// lists only part of its argv (elideArgvs).
func listExecutions(run *captureRun, budget int, inRows bool) {
	used, n := 0, 0
	for _, v := range run.execs {
		b, err := json.Marshal(v)
		if err != nil {
			break
		}
		used += tool.DeliveredBytes(b) + 2
		if used > budget/2 {
			break
		}
		n++
	}
	run.execs = run.execs[:n]
	if n < len(run.records) {
		run.warnings = append(run.warnings, listedWarning(run, budget, inRows))
	}
	cut := false
	for _, v := range run.execs {
		cut = cut || v["argv_omitted"] != nil
	}
	for _, c := range run.cases {
		m, _ := c.(map[string]any)
		cut = cut || m["argv_omitted"] != nil
	}
	if cut {
		run.warnings = append(run.warnings, fmt.Sprintf("rows of capture.executions and capture.experiment.cases with argv_omitted list only the leading arguments of argv that fit in %d bytes; argv_omitted counts the arguments and bytes left out (the request's target.argv and experiment.cases[].argv hold them)", argvListBytes(budget)))
	}
}

const listedWarningPrefix = "capture.executions lists the first "

// listedWarning says how many executions capture.executions lists of how
// many ran, and where every execution's record is: the rows of the
// analysis (inRows), the executions artifact of a comparison, or nowhere.
func listedWarning(run *captureRun, budget int, inRows bool) string {
	where := "the other executions' records are not kept"
	switch {
	case inRows:
		where = "every execution's record is a row of the analysis (follow next_action for the pages after this one)"
	case slices.ContainsFunc(run.native, func(a producedArtifact) bool { return a.format == FormatExecutions }):
		where = "every execution's record is in the executions artifact (preserve:true keeps it as evidence)"
	}
	return fmt.Sprintf(listedWarningPrefix+"%d of %d executions (at most %d, within the %d-byte result budget beside the analysis page); %s", len(run.execs), len(run.records), maxListedExecutions, budget, where)
}

// argvListBytes bounds the argv listed in one capture.executions or
// capture.experiment.cases row: budget/64 (256 bytes at a 16 KiB result
// budget, 1 KiB at the default), at least 256.
func argvListBytes(budget int) int { return max(budget/64, 256) }

// elideArgvs cuts the argv of every capture.executions row (run.execs) and
// capture.experiment.cases row (run.cases) to its leading arguments whose
// JSON fits in argvListBytes(budget), so a long command line cannot push a
// capture result over the result budget; such a row says what it left out
// in argv_omitted {arguments, bytes} (the count and the bytes of the
// arguments not listed); listExecutions warns when a listed row was cut.
// The arguments are the request's (target.argv, experiment.cases[].argv;
// with go-test after go test's flags).
func elideArgvs(run *captureRun, budget int) {
	limit := argvListBytes(budget)
	elide := func(m map[string]any) {
		argv, ok := m["argv"].([]string)
		if !ok {
			return
		}
		used, keep := 2, 0
		for _, a := range argv {
			b, _ := json.Marshal(a)
			if used+len(b)+1 > limit {
				break
			}
			used += len(b) + 1
			keep++
		}
		if keep == len(argv) {
			return
		}
		bytes := 0
		for _, a := range argv[keep:] {
			bytes += len(a)
		}
		m["argv"] = argv[:keep]
		m["argv_omitted"] = map[string]any{"arguments": len(argv) - keep, "bytes": bytes}
	}
	for _, v := range run.execs {
		elide(v)
	}
	for _, c := range run.cases {
		if m, ok := c.(map[string]any); ok {
			elide(m)
		}
	}
}

// captureOverheadBytes is what a capture result delivers beside its
// analysis page (tool.DeliveredBytes counting, both copies): the capture
// block (executions, artifacts, experiment), plus a reserve for the
// evidence fields, source rewrites and handoff warnings.
func captureOverheadBytes(provider string, run *captureRun, e *Experiment) int {
	const reserve = 2 << 10
	block := map[string]any{"provider": provider, "collector": run.collector, "executions": run.execs, "outcome": captureOutcome(run.records), "artifacts": artifactNames(run)}
	if e != nil {
		block["experiment"] = map[string]any{"cases": run.cases, "blocks": e.Blocks, "seed": e.Seed, "schedule": Schedule(len(e.Cases), e.Blocks, e.Seed)}
	}
	b, err := json.Marshal(block)
	if err != nil {
		return reserve
	}
	n := tool.DeliveredBytes(b) + reserve
	for _, w := range run.warnings {
		n += 2 * len(w)
	}
	for _, l := range run.limitations {
		n += 4 * len(l)
	}
	return n
}

func artifactNames(run *captureRun) []any {
	var out []any
	for i, a := range run.sources {
		out = append(out, map[string]any{"name": "source-" + itoa(i), "role": evidence.RoleAnalysisSource, "format": a.format, "producer": a.producer})
	}
	for _, a := range run.console {
		out = append(out, map[string]any{"name": a.name, "role": evidence.RoleDiagnostic, "format": a.format})
	}
	for _, a := range run.native {
		out = append(out, map[string]any{"name": a.name, "role": a.role, "format": a.format, "producer": a.producer})
	}
	return out
}

// captureOutcome counts executions by result.
func captureOutcome(recs []ExecutionRecord) map[string]any {
	ok, failed, excluded := 0, 0, 0
	for _, r := range recs {
		if r.Termination == capture.TermExited && r.ExitCode != nil && *r.ExitCode == 0 {
			ok++
		} else {
			failed++
		}
		if !r.Included {
			excluded++
		}
	}
	status := "succeeded"
	switch {
	case failed == len(recs):
		status = "failed"
	case failed > 0:
		status = "mixed"
	}
	return map[string]any{"executions": len(recs), "succeeded": ok, "failed": failed, "excluded": excluded, "workload_status": status}
}

// preserveCapture publishes the captured analysis sources and retained
// console as one evidence record (status failed when analysis failed).
func (rt *Runtime) preserveCapture(ctx context.Context, ck captureKind, run *captureRun, data map[string]any, t *Target, aerr error) (*evidence.Manifest, error) {
	st, err := rt.Store()
	if err != nil {
		return nil, err
	}
	status := evidence.StatusComplete
	var sess *session
	if aerr != nil {
		status = evidence.StatusFailed
	} else {
		sess = rt.sessionOf(data)
		if sess != nil {
			status = sess.status
		}
	}
	rec := evidence.Record{
		Toolset: tool.Perf, Operation: ck.op.Name, Status: status,
		Arguments: map[string]any{}, Limits: map[string]any{}, Coverage: map[string]any{"complete": false},
		Producers:  evidence.ProducerVersions(producerModules()...),
		Provenance: evidence.Provenance{Argv: run.argv, Cwd: t.Cwd, Env: t.Env, HostPaths: map[string]string{}},
	}
	if sess != nil {
		rec.Arguments, rec.Limits, rec.Coverage = sess.args, sess.limits, sess.coverage
	}
	rec.Arguments = withCapture(rec.Arguments, data)
	for i, a := range run.sources {
		name := "source-" + itoa(i)
		rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{Name: name, Role: evidence.RoleAnalysisSource, Format: a.format, Producer: a.producer, Path: a.path})
		rec.Provenance.HostPaths[name] = a.path
	}
	for _, a := range run.console {
		rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{Name: a.name, Role: evidence.RoleDiagnostic, Format: a.format, Path: a.path})
	}
	for _, a := range run.native {
		rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{Name: a.name, Role: a.role, Format: a.format, Producer: a.producer, Path: a.path})
	}
	if sess != nil {
		// A later preserve_evidence of this analysis (after this publish
		// failed, or into a rescue store) keeps the same artifacts.
		rt.sessMu.Lock()
		sess.capture = &rec
		rt.sessMu.Unlock()
	}
	m, err := st.Publish(ctx, rec)
	if err != nil {
		return nil, err
	}
	if sess != nil {
		rt.sessMu.Lock()
		sess.preserved = m
		rt.sessMu.Unlock()
	}
	return m, nil
}

func withCapture(args map[string]any, data map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	if c, ok := data["capture"].(map[string]any); ok {
		out["capture"] = map[string]any{"provider": c["provider"], "outcome": c["outcome"]}
	}
	return out
}

// sessionOf finds the session analysis behind an Analyze result: by
// analysis_id when sessions are on, else the Runtime's last analysis.
func (rt *Runtime) sessionOf(data map[string]any) *session {
	if id, ok := data["analysis_id"].(string); ok {
		s, _ := rt.lookup(id)
		return s
	}
	rt.sessMu.Lock()
	defer rt.sessMu.Unlock()
	return rt.last
}

// checkProvider reports PROVIDER_UNAVAILABLE before launch.
func checkProvider(kind string, t *Target) error {
	if kind == "go-test" {
		if _, err := capture.LookPath("go", mergeEnv(os.Environ(), t.Env, nil)); err != nil {
			return contract.Errorf(contract.CodeProviderUnavailable, "provider go-test needs the go command on PATH and it was not found").
				WithDetail("provider", "go-test").WithDetail("guidance", "install a Go toolchain (https://go.dev/dl/ or apt-get install golang-go) and put its bin directory on PATH, or set PATH in target.env")
		}
		for i, a := range t.Argv {
			if strings.HasPrefix(a, "-") {
				return invalid("/target/argv/"+itoa(i), "with go-test, target.argv names packages only; flags come from provider fields")
			}
		}
	}
	return nil
}

// checkExecutable reports EXECUTION_FAILED on field before any collector
// starts when the target's program (argv[0], resolved on the PATH of the
// target's environment) is not an executable file: the pprof-http, perf
// and py-spy providers run it (directly or under the collector). direct
// resolves its executables in runDirect; go-test's argv names packages.
func checkExecutable(kind string, t *Target, field string) error {
	switch kind {
	case "pprof-http", "perf", "py-spy":
		if _, err := capture.LookPath(t.Argv[0], mergeEnv(os.Environ(), t.Env)); err != nil {
			return fieldErr(contract.CodeExecutionFailed, field, "%q was not found on PATH or is not executable", t.Argv[0])
		}
	}
	return nil
}

func checkExperiment(e *Experiment, t *Target) error {
	if e.Blocks == 0 {
		e.Blocks = 10
	}
	if e.Metric == "" {
		e.Metric = "wall_time_ns"
	}
	if e.Estimand == "" {
		e.Estimand = "median_difference"
	}
	if e.Threshold == nil {
		th := 0.05
		e.Threshold = &th
	}
	if e.Oracle != nil && e.Oracle.TimeoutSeconds == 0 {
		e.Oracle.TimeoutSeconds = 60
	}
	seen := map[string]bool{}
	for i, c := range e.Cases {
		if seen[c.Name] {
			return invalid("/experiment/cases/"+itoa(i)+"/name", "case names must be unique")
		}
		seen[c.Name] = true
		merged := map[string]string{}
		for k, v := range t.Env {
			merged[k] = v
		}
		for k, v := range c.Env {
			merged[k] = v
		}
		if len(merged) > 32 {
			return invalid("/experiment/cases/"+itoa(i)+"/env", "target.env and the case's env together exceed 32 overrides")
		}
	}
	return nil
}

func mergeEnv(base []string, over ...map[string]string) []string {
	m := map[string]int{}
	out := append([]string(nil), base...)
	for i, kv := range out {
		if k, _, ok := strings.Cut(kv, "="); ok {
			m[k] = i
		}
	}
	for _, o := range over {
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kv := k + "=" + o[k]
			if i, ok := m[k]; ok {
				out[i] = kv
			} else {
				m[k] = len(out)
				out = append(out, kv)
			}
		}
	}
	return out
}

func (t *Target) spec(dir, prefix string, argv []string, env []string, consoleBytes int64) capture.Spec {
	s := capture.Spec{Argv: argv, Dir: t.Cwd, Env: env,
		StdoutPath: filepath.Join(dir, prefix+".stdout"), StderrPath: filepath.Join(dir, prefix+".stderr"), MaxOutputBytes: consoleBytes}
	if t.Budget.TimeoutSeconds != nil {
		s.Timeout = time.Duration(*t.Budget.TimeoutSeconds) * time.Second
	}
	if t.Budget.MaxMemoryBytes != nil {
		s.MaxMemoryBytes = *t.Budget.MaxMemoryBytes
	}
	return s
}

func (t *Target) consoleBytes() int64 {
	if t.ConsoleOutput == "full" {
		return fullConsoleBytes
	}
	return diagnosticsConsoleBytes
}

var exeDigests sync.Map // path+size+mtime -> sha256

func exeSHA256(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
	if v, ok := exeDigests.Load(key); ok {
		return v.(string)
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	s := hex.EncodeToString(h.Sum(nil))
	exeDigests.Store(key, s)
	return s
}

func startFailure(err error, field string) error {
	msg := "the workload could not be started"
	var ee interface{ Unwrap() []error }
	if errors.As(err, &ee) {
		for _, e := range ee.Unwrap() {
			if strings.Contains(e.Error(), "not found") {
				msg = "the workload's executable was not found on PATH"
			} else if errors.Is(e, os.ErrPermission) {
				msg = "the workload's executable is not executable (permission denied)"
			}
		}
	}
	ce := contract.Errorf(contract.CodeExecutionFailed, "%s", msg)
	ce.Field = field
	return ce
}

func recordOf(ex *capture.Execution, caseName string, caseIndex, block, pos int, owner string) ExecutionRecord {
	r := ExecutionRecord{Case: caseName, CaseIndex: caseIndex, Block: block, Position: pos, Termination: ex.Termination, ExitCode: ex.ExitCode, Signal: ex.Signal,
		ExitOwner: owner, WallTimeNS: ex.WallTimeNS, UserCPUNS: ex.UserCPUNS, SysCPUNS: ex.SysCPUNS, CPUTimeNS: ex.UserCPUNS + ex.SysCPUNS,
		MaxRSSAtMostBytes: ex.MaxRSSBytes, StdoutBytes: ex.StdoutBytes, StderrBytes: ex.StderrBytes, MemoryEnforce: ex.MemoryEnforcement,
		MemoryLimitHit: ex.MemoryLimitHit, LeftoverKilled: ex.LeftoverKilled, Included: true}
	if ex.MaxRSSKnown {
		v := ex.MaxRSSBytes
		r.MaxRSSBytes = &v
	}
	if ex.Termination != capture.TermExited || ex.ExitCode == nil || *ex.ExitCode != 0 {
		r.Included, r.ExcludedReason = false, "workload_failed"
	}
	return r
}

// recordKeys are the keys of an execution record's row
// (ExecutionRecord.row) other than those that identify the execution.
var recordKeys = sync.OnceValue(func() []string {
	var keys []string
	for k := range (&ExecutionRecord{Signal: "x", ExcludedReason: "x"}).row() {
		switch k {
		case "case", "case_index", "block", "position":
		default:
			keys = append(keys, k)
		}
	}
	return keys
})

// factorExecutions states each fact of capture.executions once. When
// inRows (summarize_executions, whose rows are the execution records),
// each capture.executions entry keeps only what the rows lack (argv,
// executable, pid, process_ref, containment, ...) and the keys that match
// it to its row (case, case_index, block, position). The cgroup sentence
// shared by every execution ("leaf DIR: REASON") is returned once as
// REASON, each entry keeping "leaf DIR"; "" when executions differ in it.
func factorExecutions(run *captureRun, inRows bool) string {
	if inRows {
		for _, m := range run.execs {
			for _, k := range recordKeys() {
				delete(m, k)
			}
		}
	}
	reason := ""
	for i, m := range run.execs {
		cg, _ := m["cgroup"].(string)
		leaf, why, ok := strings.Cut(cg, ": ")
		if !ok || !strings.HasPrefix(leaf, "leaf ") || (i > 0 && why != reason) {
			return ""
		}
		reason = why
	}
	if reason == "" {
		return ""
	}
	for _, m := range run.execs {
		cg := m["cgroup"].(string)
		m["cgroup"] = cg[:strings.Index(cg, ": ")]
	}
	return reason
}

// execView is the capture.executions row of ex: its record, how it ran,
// and lt, the pid and process_ref of the process it started.
func execView(ex *capture.Execution, lt lifetime, r *ExecutionRecord, argv []string, owner string) map[string]any {
	m := r.row()
	lt.fields(m)
	m["argv"] = argv
	m["executable"] = ex.Executable
	m["executable_sha256"] = exeSHA256(ex.Executable)
	m["started_at"] = contract.Timestamp(ex.StartedAt)
	m["containment"] = ex.Containment
	m["launcher_peak_rss_bytes"] = contract.Int(ex.LauncherPeakRSSBytes)
	m["launcher_reclaimable_rss_bytes"] = contract.Int(ex.LauncherReclaimableRSSBytes)
	m["cgroup"] = ex.Cgroup
	if ex.MemoryLimitBytes > 0 {
		m["memory_limit_bytes"] = contract.Int(ex.MemoryLimitBytes)
	}
	m["stdout_truncated"], m["stderr_truncated"] = ex.StdoutTruncated, ex.StderrTruncated
	if owner == "workload" {
		m["workload_returncode"] = ex.ExitCode
	} else {
		m["workload_returncode"] = nil
		m["collector_returncode"] = ex.ExitCode
	}
	return m
}

// runDirect executes the target once, or the experiment's schedule.
func runDirect(ctx context.Context, dir string, t *Target, e *Experiment, executions bool) (*captureRun, error) {
	run := &captureRun{collector: "direct", argv: t.Argv}
	type caseDef struct {
		name string
		argv []string
		env  []string
	}
	cases := []caseDef{{name: "target", argv: t.Argv, env: mergeEnv(os.Environ(), t.Env)}}
	blocks := 1
	var seed uint64
	if e != nil {
		cases = nil
		for _, c := range e.Cases {
			argv := c.Argv
			if len(argv) == 0 {
				argv = t.Argv
			}
			cases = append(cases, caseDef{name: c.Name, argv: argv, env: mergeEnv(os.Environ(), t.Env, c.Env)})
		}
		blocks, seed = e.Blocks, e.Seed
	}
	// Resolve every executable before the first launch.
	for i, c := range cases {
		if _, err := capture.LookPath(c.argv[0], c.env); err != nil {
			f := "/target/argv/0"
			if e != nil && len(e.Cases[i].Argv) > 0 {
				f = "/experiment/cases/" + itoa(i) + "/argv/0"
			}
			return nil, fieldErr(contract.CodeExecutionFailed, f, "the executable (at %s) was not found on PATH or is not executable", f)
		}
	}
	if e != nil && e.Oracle != nil {
		if _, err := capture.LookPath(e.Oracle.Argv[0], cases[0].env); err != nil {
			return nil, fieldErr(contract.CodeExecutionFailed, "/experiment/oracle/argv/0", "the oracle's executable (at /experiment/oracle/argv/0) was not found on PATH or is not executable")
		}
	}
	sched := Schedule(len(cases), blocks, seed)
	f := followerOf(ctx)
	n := 0
	var last *capture.Execution
	var lastPrefix string
	for b, order := range sched {
		for pos, ci := range order {
			if ctx.Err() != nil {
				return nil, contract.Errorf(contract.CodeCancelled, "the capture was cancelled; its process tree was killed")
			}
			c := cases[ci]
			prefix := fmt.Sprintf("exec-%04d", n)
			f.label(c.name, b)
			ex, lt, err := f.run(ctx, t.spec(dir, prefix, c.argv, c.env, t.consoleBytes()))
			if err != nil {
				return nil, startFailure(err, "/target/argv/0")
			}
			if ex.Termination == capture.TermCancelled {
				return nil, contract.Errorf(contract.CodeCancelled, "the capture was cancelled; its process tree was killed")
			}
			r := recordOf(ex, c.name, ci, b, pos, "workload")
			if r.Included && e != nil && e.Oracle != nil {
				oenv := append(append([]string(nil), c.env...),
					"INQUEST_CAPTURE_STDOUT="+filepath.Join(dir, prefix+".stdout"), "INQUEST_CAPTURE_STDERR="+filepath.Join(dir, prefix+".stderr"))
				os := t.spec(dir, prefix+".oracle", e.Oracle.Argv, oenv, diagnosticsConsoleBytes)
				os.Timeout = time.Duration(e.Oracle.TimeoutSeconds) * time.Second
				os.MaxMemoryBytes = 0
				oex, err := capture.Run(ctx, os)
				if err != nil {
					return nil, startFailure(err, "/experiment/oracle/argv/0")
				}
				code := -1
				if oex.ExitCode != nil {
					code = *oex.ExitCode
				}
				r.OracleExitCode = &code
				if code != 0 {
					r.Included, r.ExcludedReason = false, "oracle_failed"
				}
			}
			run.records = append(run.records, r)
			if len(run.execs) < maxListedExecutions {
				v := execView(ex, lt, &r, c.argv, "workload")
				if _, known := r.metric(metricOf(e)); r.Included && !known {
					v["excluded_from_summary"] = "metric_unknown"
				}
				run.execs = append(run.execs, v)
			}
			last, lastPrefix = ex, prefix
			n++
		}
	}
	run.console = []producedArtifact{
		{name: "stdout", path: filepath.Join(dir, lastPrefix+".stdout"), format: FormatText, role: evidence.RoleDiagnostic},
		{name: "stderr", path: filepath.Join(dir, lastPrefix+".stderr"), format: FormatText, role: evidence.RoleDiagnostic},
	}
	if executions {
		p := filepath.Join(dir, "executions.jsonl")
		if err := writeExecutions(p, run.records); err != nil {
			return nil, err
		}
		run.sources = []producedArtifact{{name: "executions", path: p, format: FormatExecutions, producer: "inquest-direct"}}
	} else {
		run.sources = []producedArtifact{{name: "stdout", path: filepath.Join(dir, lastPrefix+".stdout"), format: FormatText, producer: "inquest-direct"}}
		run.console = run.console[1:]
		if last.StdoutTruncated {
			run.warnings = append(run.warnings, fmt.Sprintf("stdout was %d bytes; only the first %d were retained (console_output full keeps 64 MiB)", last.StdoutBytes, t.consoleBytes()))
		}
	}
	return run, nil
}

// metricOf is the summarize_executions metric of experiment e
// (wall_time_ns without one).
func metricOf(e *Experiment) string {
	if e == nil || e.Metric == "" {
		return "wall_time_ns"
	}
	return e.Metric
}

// hasBenchmarkLine reports whether the go test output at path has a
// benchmark result line (one starting with "Benchmark"); go test -bench
// whose pattern matches no benchmark prints only PASS and ok (with "no
// tests to run" under -v).
func hasBenchmarkLine(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Benchmark") {
			return true
		}
	}
	// A line longer than the buffer ends the scan: not a result line of
	// go test's, but say "found" rather than claim none matched.
	return sc.Err() != nil
}

func writeExecutions(path string, recs []ExecutionRecord) error {
	f, err := os.Create(path)
	if err != nil {
		return contract.Errorf(contract.CodeResourceLimit, "the execution record could not be written to scratch")
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			f.Close()
			return contract.Errorf(contract.CodeResourceLimit, "the execution record could not be written to scratch")
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return contract.Errorf(contract.CodeResourceLimit, "the execution record could not be written to scratch")
	}
	return f.Close()
}

// runGoTest runs go test -run=^$ -bench in target.cwd.
func runGoTest(ctx context.Context, dir string, t *Target, p *providerArg, op string) (*captureRun, error) {
	if len(t.Argv) > 0 && (t.Argv[0] == "go" || strings.HasSuffix(t.Argv[0], "/go")) {
		return nil, invalid("/target/argv", "the go-test provider runs `go test` itself: target.argv holds only the go test package arguments (e.g. [\".\"] or [\"./pkg\", \"-tags=x\"]); drop the leading go (and test)")
	}
	bench := p.Bench
	if bench == "" {
		bench = "."
	}
	count := p.Count
	if count == 0 {
		count = 1
	}
	argv := []string{"go", "test", "-run=^$", "-bench=" + bench, "-count=" + itoa(count)}
	if p.Benchtime != "" {
		argv = append(argv, "-benchtime="+p.Benchtime)
	}
	var profPath string
	if op == "summarize_profile" {
		kind := p.Profile
		if kind == "" {
			kind = "cpu"
		}
		if len(t.Argv) != 1 {
			return nil, invalid("/target/argv", "a go test profile needs exactly one package in target.argv")
		}
		profPath = filepath.Join(dir, kind+".pprof")
		argv = append(argv, "-"+kind+"profile="+profPath, "-o="+filepath.Join(dir, "pkg.test"))
	}
	argv = append(argv, t.Argv...)
	env := mergeEnv(os.Environ(), t.Env)
	// The benchmark output is the analysis artifact: retain it in full.
	ex, lt, err := followerOf(ctx).run(ctx, t.spec(dir, "go-test", argv, env, fullConsoleBytes))
	if err != nil {
		return nil, startFailure(err, "/provider/kind")
	}
	if ex.Termination == capture.TermCancelled {
		return nil, contract.Errorf(contract.CodeCancelled, "the capture was cancelled; its process tree was killed")
	}
	r := recordOf(ex, "target", 0, 0, 0, "collector")
	run := &captureRun{collector: "go-test", argv: argv, records: []ExecutionRecord{r}}
	view := execView(ex, lt, &r, argv, "collector")
	run.execs = []map[string]any{view}
	stdout := filepath.Join(dir, "go-test.stdout")
	run.console = []producedArtifact{
		{name: "stdout", path: stdout, format: FormatText, role: evidence.RoleDiagnostic},
		{name: "stderr", path: filepath.Join(dir, "go-test.stderr"), format: FormatText, role: evidence.RoleDiagnostic},
	}
	if ex.StdoutTruncated {
		run.warnings = append(run.warnings, fmt.Sprintf("go test wrote %d bytes of output; only the first %d were retained and analyzed", ex.StdoutBytes, int64(fullConsoleBytes)))
	}
	if r.Included && !hasBenchmarkLine(stdout) {
		run.limitations = append(run.limitations, fmt.Sprintf("no benchmark matched: go test -bench=%s ran no benchmark in %s (its output has no Benchmark result line), so there are no benchmark samples to analyze; check provider.bench against the package's Benchmark functions", bench, strings.Join(t.Argv, " ")))
	}
	switch op {
	case "summarize_benchmarks":
		run.sources = []producedArtifact{{name: "benchmarks", path: stdout, format: FormatGoBench, producer: "go-test"}}
		run.console = run.console[1:]
	case "preview_artifact":
		run.sources = []producedArtifact{{name: "stdout", path: stdout, format: FormatText, producer: "go-test"}}
		run.console = run.console[1:]
	case "summarize_profile":
		if _, err := os.Stat(profPath); err != nil {
			// No profile: the collector failed before writing one. Keep the
			// console so preservation retains the diagnosis.
			run.warnings = append(run.warnings, "go test wrote no profile (see capture.executions and the retained stderr)")
			run.sources = nil
		} else {
			run.sources = []producedArtifact{{name: "profile", path: profPath, format: FormatPprof, producer: "go-test"}}
		}
	}
	return run, nil
}
