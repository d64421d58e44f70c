//go:build linux

package perf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/perf/capture"
)

// maxFetchedProfileBytes bounds a profile fetched from a pprof endpoint.
const maxFetchedProfileBytes = 256 << 20

// FormatPerfData is the format name of perf record's native perf.data,
// kept as an output artifact next to the folded stacks.
const FormatPerfData = "perf-data"

func unavailable(provider, msg, guidance string) *contract.Error {
	return contract.Errorf(contract.CodeProviderUnavailable, "%s", msg).WithDetail("provider", provider).WithDetail("guidance", guidance)
}

const perfGuidance = "install perf for the running kernel (Debian: apt-get install linux-perf; Fedora: dnf install perf) and put it on PATH"
const pySpyGuidance = "install py-spy (pip install py-spy, or a release binary from https://github.com/benfred/py-spy/releases) and put it on PATH, or set PATH in target.env"

// checkProfileProvider is the admission check of the pprof-http, perf and
// py-spy providers, before any scratch directory or process: the address
// is loopback, the collector is on PATH and permitted. Other kinds pass.
func checkProfileProvider(ctx context.Context, p *providerArg, t *Target) error {
	env := mergeEnv(os.Environ(), t.Env)
	switch p.Kind {
	case "pprof-http":
		if _, _, err := capture.LoopbackURL(ctx, p.URL); err != nil {
			return invalid("/provider/url", "%s", err.Error()).WithDetail("accepted_values", []string{"http://127.0.0.0/8 address:port", "http://[::1]:port", "http://localhost:port"})
		}
	case "perf":
		if _, err := capture.LookPath("perf", env); err != nil {
			return unavailable("perf", "provider perf needs the perf command on PATH and it was not found", perfGuidance)
		}
		if a := capture.ProbePerfEvents(); !a.Allowed {
			return unavailable("perf", "provider perf cannot record here: perf_event_open is refused ("+a.Errno+")", a.Guidance)
		}
	case "py-spy":
		if _, err := capture.LookPath("py-spy", env); err != nil {
			return unavailable("py-spy", "provider py-spy needs the py-spy command on PATH and it was not found", pySpyGuidance)
		}
	}
	return nil
}

// runProvider runs one invocation of a non-direct provider in dir (which
// it owns): go-test, pprof-http, perf or py-spy.
func runProvider(ctx context.Context, dir string, t *Target, p *providerArg, op string) (*captureRun, error) {
	switch p.Kind {
	case "go-test":
		return runGoTest(ctx, dir, t, p, op)
	case "pprof-http":
		return runPprofHTTP(ctx, dir, t, p)
	case "perf":
		return runPerfRecord(ctx, dir, t, p)
	case "py-spy":
		return runPySpy(ctx, dir, t, p)
	}
	return nil, invalid("/provider/kind", "provider %q is not a profile provider", p.Kind)
}

func cancelled() error {
	return contract.Errorf(contract.CodeCancelled, "the capture was cancelled; its process tree was killed")
}

// runPprofHTTP runs target.argv as the load while it fetches the profile
// from provider.url: a cpu profile is fetched from the launch on, over
// provider.seconds; a snapshot (heap, allocs, goroutine) after the
// workload exits. The workload's exit is its own (exit_owner workload);
// the fetch is the collector, reported in the execution's pprof_fetch.
func runPprofHTTP(ctx context.Context, dir string, t *Target, p *providerArg) (*captureRun, error) {
	u, addrs, err := capture.LoopbackURL(ctx, p.URL)
	if err != nil {
		return nil, invalid("/provider/url", "%s", err.Error())
	}
	kind := p.Profile
	if kind == "" {
		kind = "cpu"
	}
	seconds := p.Seconds
	if seconds == 0 {
		seconds = 10
	}
	prof := filepath.Join(dir, kind+".pb.gz")
	var fetch *capture.PprofFetch
	var ferr error
	var wg sync.WaitGroup
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	if kind == "cpu" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fetch, ferr = capture.FetchPprof(fctx, u, addrs, kind, seconds, maxFetchedProfileBytes, prof)
		}()
	}
	env := mergeEnv(os.Environ(), t.Env)
	ex, lt, err := followerOf(ctx).run(ctx, t.spec(dir, "workload", t.Argv, env, t.consoleBytes()))
	if err != nil {
		fcancel()
		wg.Wait()
		return nil, startFailure(err, "/target/argv/0")
	}
	if ex.Termination == capture.TermCancelled {
		fcancel()
		wg.Wait()
		return nil, cancelled()
	}
	if kind == "cpu" {
		wg.Wait()
	} else {
		fetch, ferr = capture.FetchPprof(ctx, u, addrs, kind, seconds, maxFetchedProfileBytes, prof)
	}
	if ctx.Err() != nil {
		return nil, cancelled()
	}
	r := recordOf(ex, "target", 0, 0, 0, "workload")
	view := execView(ex, lt, &r, t.Argv, "workload")
	view["pprof_fetch"] = fetch
	run := &captureRun{collector: "pprof-http", argv: t.Argv, records: []ExecutionRecord{r}, execs: []map[string]any{view}}
	run.console = []producedArtifact{
		{name: "stdout", path: filepath.Join(dir, "workload.stdout"), format: FormatText, role: evidence.RoleDiagnostic},
		{name: "stderr", path: filepath.Join(dir, "workload.stderr"), format: FormatText, role: evidence.RoleDiagnostic},
	}
	if ferr != nil {
		run.warnings = append(run.warnings, "the pprof fetch failed: "+ferr.Error())
		return run, nil
	}
	run.sources = []producedArtifact{{name: "profile", path: prof, format: FormatPprof, producer: "pprof-http"}}
	return run, nil
}

// runPerfRecord runs `perf record -g -o perf.data [-F frequency] -- argv`
// (perf forwards the workload's exit status, but a 255 may be perf's own:
// exit_owner collector), then `perf script -F comm,ip,sym` folded into
// collapsed stacks (the analysis source). perf.data is kept as an output
// artifact.
func runPerfRecord(ctx context.Context, dir string, t *Target, p *providerArg) (*captureRun, error) {
	env := mergeEnv(os.Environ(), t.Env)
	exe, err := capture.LookPath("perf", env)
	if err != nil {
		return nil, unavailable("perf", "provider perf needs the perf command on PATH and it was not found", perfGuidance)
	}
	data := filepath.Join(dir, "perf.data")
	argv := []string{exe, "record", "-g", "-o", data}
	if p.Frequency > 0 {
		argv = append(argv, "-F", strconv.Itoa(p.Frequency))
	}
	argv = append(append(argv, "--"), t.Argv...)
	spec := t.spec(dir, "perf-record", argv, env, t.consoleBytes())
	spec.Collector = true
	ex, lt, err := followerOf(ctx).run(ctx, spec)
	if err != nil {
		return nil, startFailure(err, "/provider/kind")
	}
	if ex.Termination == capture.TermCancelled {
		return nil, cancelled()
	}
	r := recordOf(ex, "target", 0, 0, 0, "collector")
	view := execView(ex, lt, &r, argv, "collector")
	run := &captureRun{collector: "perf", argv: argv, records: []ExecutionRecord{r}, execs: []map[string]any{view}}
	if ex.Termination == capture.TermTimeout {
		run.limitations = append(run.limitations, timeoutLimitation(t, "perf record"))
	}
	run.console = []producedArtifact{
		{name: "stdout", path: filepath.Join(dir, "perf-record.stdout"), format: FormatText, role: evidence.RoleDiagnostic},
		{name: "stderr", path: filepath.Join(dir, "perf-record.stderr"), format: FormatText, role: evidence.RoleDiagnostic},
	}
	if _, err := os.Stat(data); err != nil {
		run.warnings = append(run.warnings, "perf record wrote no perf.data (see capture.executions and the retained stderr)")
		return run, nil
	}
	run.native = []producedArtifact{{name: "perf.data", path: data, format: FormatPerfData, producer: "perf", role: evidence.RoleOutput}}
	folded := filepath.Join(dir, "perf.folded")
	st, err := foldPerfData(ctx, exe, data, folded, env)
	if ctx.Err() != nil {
		return nil, cancelled()
	}
	view["perf_script"] = st
	if err != nil {
		run.warnings = append(run.warnings, "perf script could not be folded: "+err.Error())
		return run, nil
	}
	if st.SkippedLines > 0 {
		run.warnings = append(run.warnings, fmt.Sprintf("perf script printed %d lines that are neither a sample header nor a frame; they were not folded", st.SkippedLines))
	}
	run.sources = []producedArtifact{{name: "stacks", path: folded, format: FormatFolded, producer: "perf"}}
	return run, nil
}

// timeoutLimitation says that budget.timeout_seconds stopped the workload
// of a collector, which kept what it had recorded until then.
func timeoutLimitation(t *Target, collector string) string {
	return fmt.Sprintf("budget.timeout_seconds (%d s) stopped the workload before it exited; %s kept the samples recorded until then, so the profile covers only the first %d s", *t.Budget.TimeoutSeconds, collector, *t.Budget.TimeoutSeconds)
}

// foldPerfData streams `perf script -i data -F comm,ip,sym` into
// capture.FoldPerfScript and writes the folded stacks to out.
func foldPerfData(ctx context.Context, exe, data, out string, env []string) (capture.FoldStats, error) {
	cmd := exec.CommandContext(ctx, exe, "script", "-i", data, "-F", capture.PerfScriptFields)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return capture.FoldStats{}, err
	}
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	f, err := os.Create(out)
	if err != nil {
		return capture.FoldStats{}, err
	}
	defer f.Close()
	if err := cmd.Start(); err != nil {
		return capture.FoldStats{}, err
	}
	st, ferr := capture.FoldPerfScript(stdout, f)
	werr := cmd.Wait()
	if werr != nil {
		return st, fmt.Errorf("perf script failed (%v): %s", werr, stderr.String())
	}
	if ferr != nil {
		return st, ferr
	}
	return st, f.Close()
}

// limitedBuffer keeps the first 4 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		l.b = append(l.b, p[:room]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// runPySpy runs `py-spy record --format raw --output py-spy.folded
// [--rate frequency] [--subprocesses] -- argv`: py-spy's raw format is
// collapsed stacks (exit_owner collector).
func runPySpy(ctx context.Context, dir string, t *Target, p *providerArg) (*captureRun, error) {
	env := mergeEnv(os.Environ(), t.Env)
	exe, err := capture.LookPath("py-spy", env)
	if err != nil {
		return nil, unavailable("py-spy", "provider py-spy needs the py-spy command on PATH and it was not found", pySpyGuidance)
	}
	folded := filepath.Join(dir, "py-spy.folded")
	argv := []string{exe, "record", "--format", "raw", "--output", folded}
	if p.Frequency > 0 {
		argv = append(argv, "--rate", strconv.Itoa(p.Frequency))
	}
	if p.Subprocesses {
		argv = append(argv, "--subprocesses")
	}
	argv = append(append(argv, "--"), t.Argv...)
	spec := t.spec(dir, "py-spy", argv, env, t.consoleBytes())
	spec.Collector = true
	ex, lt, err := followerOf(ctx).run(ctx, spec)
	if err != nil {
		return nil, startFailure(err, "/provider/kind")
	}
	if ex.Termination == capture.TermCancelled {
		return nil, cancelled()
	}
	r := recordOf(ex, "target", 0, 0, 0, "collector")
	run := &captureRun{collector: "py-spy", argv: argv, records: []ExecutionRecord{r}, execs: []map[string]any{execView(ex, lt, &r, argv, "collector")}}
	if ex.Termination == capture.TermTimeout {
		run.limitations = append(run.limitations, timeoutLimitation(t, "py-spy record"))
	}
	run.console = []producedArtifact{
		{name: "stdout", path: filepath.Join(dir, "py-spy.stdout"), format: FormatText, role: evidence.RoleDiagnostic},
		{name: "stderr", path: filepath.Join(dir, "py-spy.stderr"), format: FormatText, role: evidence.RoleDiagnostic},
	}
	if fi, err := os.Stat(folded); err != nil || fi.Size() == 0 {
		run.warnings = append(run.warnings, "py-spy wrote no stacks (see capture.executions and the retained stderr)")
		return run, nil
	}
	run.sources = []producedArtifact{{name: "stacks", path: folded, format: FormatFolded, producer: "py-spy"}}
	return run, nil
}

// profileProviders are the provider kinds that feed the profile operations
// (summarize_profile, compare_profiles).
var profileProviders = []string{"go-test", "pprof-http", "perf", "py-spy"}

// profileProvidersDescription is the part of capture_and_summarize_profile's
// details (mcp inspect) naming the profile providers beside go-test.
const profileProvidersDescription = "pprof-http fetches a profile from a loopback provider.url while argv runs; perf and py-spy record argv as folded stacks. "

// profileProviderFields adds the typed fields of the pprof-http, perf and
// py-spy provider branches to props and returns the branch's required
// fields.
func profileProviderFields(kind string, props js) []string {
	switch kind {
	case "pprof-http":
		props["url"] = js{"type": "string", "minLength": 1, "maxLength": 2048, "description": "Loopback net/http/pprof base URL, e.g. http://127.0.0.1:6060."}
		props["profile"] = js{"enum": []string{"cpu", "heap", "allocs", "goroutine"}, "default": "cpu", "description": "cpu is fetched during the workload, the others after it exits."}
		props["seconds"] = js{"type": "integer", "minimum": 1, "maximum": 3600, "default": 10, "description": "CPU profile duration."}
		return []string{"kind", "url"}
	case "perf":
		props["frequency"] = js{"type": "integer", "minimum": 1, "maximum": 100000, "description": "perf record -F."}
	case "py-spy":
		props["frequency"] = js{"type": "integer", "minimum": 1, "maximum": 10000, "description": "py-spy record --rate."}
		props["subprocesses"] = js{"type": "boolean", "default": false, "description": "py-spy record --subprocesses."}
	}
	return []string{"kind"}
}
