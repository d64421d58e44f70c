//go:build linux

package perf

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/perf/capture"
)

// compareExperiment is the experiment argument of the capture comparison
// tools: the cases are the compared targets (the first is the baseline);
// every block captures each case once in an order shuffled from seed, and
// each case's included captures are combined into that case's source.
type compareExperiment struct {
	Cases  []experimentCase  `json:"cases"`
	Blocks int               `json:"blocks,omitempty"`
	Seed   uint64            `json:"seed,omitempty"`
	Oracle *experimentOracle `json:"oracle,omitempty"`
}

// experiment is e as the capture's Experiment (blocks default 1).
func (e *compareExperiment) experiment() *Experiment {
	x := &Experiment{Cases: e.Cases, Blocks: e.Blocks, Seed: e.Seed, Oracle: e.Oracle}
	if x.Blocks == 0 {
		x.Blocks = 1
	}
	return x
}

// captureCompareBenchmarksArgs: capture_and_compare_benchmarks (go-test,
// benchstat's comparison flags).
type captureCompareBenchmarksArgs struct {
	captureArgs
	Provider   goTestProvider    `json:"provider"`
	Experiment compareExperiment `json:"experiment"`
	benchCompareFields
}

// captureCompareProfilesArgs: capture_and_compare_profiles (go-test,
// pprof-http, perf or py-spy; pprof's report flags).
type captureCompareProfilesArgs struct {
	captureArgs
	Provider   providerArg       `json:"provider"`
	Experiment compareExperiment `json:"experiment"`
	profileFields
}

func (a *captureCompareBenchmarksArgs) provider() providerArg {
	return providerArg{goTestProvider: a.Provider}
}
func (a *captureCompareProfilesArgs) provider() providerArg { return a.Provider }
func (a *captureCompareBenchmarksArgs) experiment() *Experiment {
	return a.Experiment.experiment()
}
func (a *captureCompareProfilesArgs) experiment() *Experiment {
	return a.Experiment.experiment()
}

// compareCaptureDescription describes capture_and_compare_benchmarks or
// capture_and_compare_profiles.
func compareCaptureDescription(ck captureKind) string {
	return "Run each experiment case's program (never a shell) as the user running inquest, once per block in a seeded order under provider " + orList(ck.providers) +
		", then " + ck.op.Name + " over each case's combined output, the first case as base. Required: target, provider, experiment."
}

// compareCaptureDetails is the longer guidance of a comparison capture
// tool (`inquest mcp inspect --tool`, docs/tools.md).
func compareCaptureDetails(ck captureKind) string {
	d := "Each case's argv and env apply over target's; every execution runs in its own process tree. "
	if ck.op.Name == "compare_benchmarks" {
		return d + "Each case's go test -bench output is combined and compared with the first case's as the baseline."
	}
	return d + "Each case's profiles are combined (pprof profiles merged, folded stacks concatenated) and compared with the first case's as the base."
}

// compareExperimentSchema is the experiment argument of the comparison
// kinds: cases, blocks (default 1), seed and oracle.
func compareExperimentSchema() js {
	e := experimentSchema()
	p := e["properties"].(js)
	for _, k := range []string{"metric", "estimand", "threshold"} {
		delete(p, k)
	}
	p["blocks"] = js{"type": "integer", "minimum": 1, "maximum": 100, "default": 1}
	p["seed"] = js{"type": "integer", "minimum": 0, "maximum": 9007199254740991, "default": 0, "description": "Seeds the order."}
	return e.with("type", "object", "description", "Compared targets, each captured once per block.")
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

// compareCases are the cases of e over target t: each case's argv (else
// target.argv) and environment (target.env with the case's on top).
func compareCases(e *Experiment, t *Target) []*caseCapture {
	cases := make([]*caseCapture, len(e.Cases))
	for i, c := range e.Cases {
		env := map[string]string{}
		for k, v := range t.Env {
			env[k] = v
		}
		for k, v := range c.Env {
			env[k] = v
		}
		argv := c.Argv
		if len(argv) == 0 {
			argv = t.Argv
		}
		cases[i] = &caseCapture{name: c.Name, argv: argv, env: env, excluded: map[string]int{}}
	}
	return cases
}

// checkCompareCases is the admission check of a comparison beyond
// checkExperiment, before any launch: every case passes the provider's
// check, and the oracle's executable is found.
func checkCompareCases(e *Experiment, t *Target, kind string) error {
	for i, c := range compareCases(e, t) {
		if err := checkProvider(kind, caseTarget(t, c)); err != nil {
			return err
		}
		field := "/target/argv/0"
		if len(e.Cases[i].Argv) > 0 {
			field = "/experiment/cases/" + itoa(i) + "/argv/0"
		}
		if err := checkExecutable(kind, caseTarget(t, c), field); err != nil {
			return err
		}
	}
	if e.Oracle != nil {
		if _, err := capture.LookPath(e.Oracle.Argv[0], mergeEnv(os.Environ(), t.Env)); err != nil {
			return fieldErr(contract.CodeExecutionFailed, "/experiment/oracle/argv/0", "the oracle's executable (at /experiment/oracle/argv/0) was not found on PATH or is not executable")
		}
	}
	return nil
}

// runCompare captures every case of e once per block in dir (one
// subdirectory per capture) with provider p, in the order Schedule draws
// from e.Seed, then combines each case's included captures into that
// case's analysis source (source-N is case N). A capture is excluded, and
// counted in the case's row, when the collector fails (workload_failed),
// produces no artifact (no_artifact) or the oracle exits nonzero
// (oracle_failed); a case left with no included capture sets the run's
// failure (EXECUTION_FAILED), which becomes the analysis_failure. op is
// the comparison (compare_benchmarks or compare_profiles).
func runCompare(ctx context.Context, dir string, t *Target, p *providerArg, e *Experiment, op string) (*captureRun, error) {
	cases := compareCases(e, t)
	// The analysis operation each capture feeds (for the provider's
	// artifact choice): benchmarks output or a profile.
	feeds := "summarize_profile"
	if op == "compare_benchmarks" {
		feeds = "summarize_benchmarks"
	}
	all := &captureRun{collector: p.Kind, argv: t.Argv}
	sched := Schedule(len(cases), e.Blocks, e.Seed)
	f := followerOf(ctx)
	// Each distinct limitation of the captures is reported once, with how
	// many captures it applies to and the first.
	type limitSeen struct {
		n     int
		first string
	}
	limits := map[string]*limitSeen{}
	var limitOrder []string
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
			f.label(c.name, b)
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
				if len(all.execs) < maxListedExecutions {
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
			for _, l := range run.limitations {
				if limits[l] == nil {
					limits[l] = &limitSeen{first: fmt.Sprintf("case %s block %d", c.name, b)}
					limitOrder = append(limitOrder, l)
				}
				limits[l].n++
			}
			all.console = run.console
			for _, a := range run.native {
				if len(all.native) < 32 {
					a.name = fmt.Sprintf("%s-b%03d-%s", c.name, b, a.name)
					all.native = append(all.native, a)
				}
			}
		}
	}
	for _, l := range limitOrder {
		all.limitations = append(all.limitations, fmt.Sprintf("%d of %d captures (first %s): %s", limits[l].n, len(all.records), limits[l].first, l))
	}
	// Every capture's execution record is kept beside the sources, so
	// none is lost when capture.executions lists fewer.
	ep := filepath.Join(dir, "executions.jsonl")
	if err := writeExecutions(ep, all.records); err != nil {
		return nil, err
	}
	all.native = append(all.native, producedArtifact{name: "executions", path: ep, format: FormatExecutions, role: evidence.RoleDiagnostic, producer: "inquest-capture"})
	// Combine each case's included captures into its source.
	for i, c := range cases {
		all.cases = append(all.cases, map[string]any{"name": c.name, "source": "source-" + itoa(i), "argv": c.argv, "captures": c.total, "included": len(c.sources), "excluded": c.excluded})
		if len(c.sources) == 0 {
			if all.failure == nil {
				all.failure = contract.Errorf(contract.CodeExecutionFailed, "case %q has no included capture to compare; excluded captures by reason: %s", c.name, formatCounts(c.excluded))
			}
			continue
		}
		src, err := combineSources(c.sources, filepath.Join(dir, fmt.Sprintf("case-%02d", i)))
		if err != nil {
			if all.failure == nil {
				all.failure = err
			}
			continue
		}
		all.sources = append(all.sources, src)
	}
	return all, nil
}

// formatCounts renders counts by name as "a: 1, b: 2", names sorted.
func formatCounts(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s: %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// caseTarget is target with the case's argv and merged environment.
func caseTarget(t *Target, c *caseCapture) *Target {
	ct := *t
	ct.Argv, ct.Env = c.argv, c.env
	return &ct
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
func runOracle(ctx context.Context, sub string, o *experimentOracle, ct *Target, kind string) (int, error) {
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
