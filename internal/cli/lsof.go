package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newLsofCmd) }

func newLsofCmd(env *Env) *cobra.Command {
	var asJSON bool
	var filter collectionFilter
	cmd := &cobra.Command{
		Use:   "lsof PID",
		Short: "Open files of a process (start_capture kind open_files) as a table",
		Long: `List the open files of process PID as lsof -nP -p PID spells them: first
cwd (working directory), rtd (root directory), txt (executable) and one mem
row per memory-mapped file (DEL when it was deleted), then each file
descriptor with its access mode (3r read, 3w write, 3u both). Columns: FD,
TYPE (REG, DIR, CHR, FIFO, IPv4, IPv6, unix, a_inode), DEVICE (major,minor),
SIZE/OFF, NODE (inode, or TCP/UDP for an IP socket) and NAME, where a socket
shows its addresses (127.0.0.1:8080 (LISTEN)) or its unix path. It uses the
same start_capture/read_capture tools an MCP client uses (the PID is
resolved to a process_ref with list_processes; sockets are matched by inode
with a start_capture kind network of the same process). --path and
--extension narrow the collection itself (start_capture filter), the way to
list a process whose full capture is too large. --json prints the
start_capture envelope.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[0])
			if err != nil {
				return err
			}
			var reg *tool.Registry
			var ref string
			return runCapture(cmd, env, asJSON, func(r *tool.Registry) (map[string]any, error) {
				var err error
				if ref, err = refForPID(cmd, r, pid); err != nil {
					return nil, err
				}
				reg = r
				return filter.apply(map[string]any{"kind": "open_files", "process_ref": ref}), nil
			}, func(w io.Writer, rows []map[string]any) {
				renderLsof(w, rows, socketsOf(cmd, env, reg, ref, rows))
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	filter.register(cmd, true, false)
	return cmd
}

// socketsOf maps the socket inodes among rows to their network rows
// (start_capture kind network of the same process); nil when rows have no
// socket. A failed network capture leaves the sockets unresolved (TYPE
// sock, NAME socket:[INODE]) and says so on stderr.
func socketsOf(cmd *cobra.Command, env *Env, reg *tool.Registry, ref string, rows []map[string]any) map[string]map[string]any {
	has := false
	for _, r := range rows {
		has = has || r["kind"] == "socket"
	}
	if !has || reg == nil {
		return nil
	}
	net, _, err := collectCapture(cmd, reg, map[string]any{"kind": "network", "process_ref": ref})
	if err != nil {
		fmt.Fprintln(env.Stderr, "warning: socket endpoints could not be listed:", cell(contract.AsError(err).Message))
		return nil
	}
	m := make(map[string]map[string]any, len(net))
	for _, s := range net {
		if ino, ok := s["inode"].(string); ok {
			m[ino] = s
		}
	}
	return m
}

// collectionFilter is the start_capture collection filter of a capture
// command, set from its --path (repeatable; every term of every value must
// occur in the row path, case-insensitive, on exact bytes: a value that is
// not valid UTF-8 is sent as filter.path_bytes), --extension (.EXT) and
// --owner (exact, case-insensitive executable name) flags.
type collectionFilter struct {
	paths     []string
	extension string
	owner     string
}

// register adds --path and --extension (withPath) and --owner (withOwner)
// to cmd.
func (f *collectionFilter) register(cmd *cobra.Command, withPath, withOwner bool) {
	if withPath {
		cmd.Flags().StringArrayVar(&f.paths, "path", nil, "collect only rows whose path contains every whitespace-separated term, case-insensitive (repeatable: all terms of all values)")
		cmd.Flags().StringVar(&f.extension, "extension", "", "collect only rows whose path ends with this extension, e.g. .log")
	}
	if withOwner {
		cmd.Flags().StringVar(&f.owner, "owner", "", "collect only rows owned by this executable name (exact, case-insensitive)")
	}
}

// apply sets args["filter"] ({path, extension, owner_name}) when any flag
// was given and returns args.
func (f *collectionFilter) apply(args map[string]any) map[string]any {
	m := map[string]any{}
	if len(f.paths) > 0 {
		// a query that is not valid UTF-8 travels as its exact bytes
		if q := strings.Join(f.paths, " "); sample.Lossy(q) {
			m["path_bytes"] = sample.EncodeBytes(q)
		} else {
			m["path"] = q
		}
	}
	if f.extension != "" {
		m["extension"] = f.extension
	}
	if f.owner != "" {
		m["owner_name"] = f.owner
	}
	if len(m) > 0 {
		args["filter"] = m
	}
	return args
}

// filterFlags names the command flag setting each start_capture filter term.
var filterFlags = map[string]string{"path": "--path TERM", "extension": "--extension .EXT", "owner_name": "--owner NAME"}

// filterHint is the CLI's advice for a RESULT_TOO_LARGE capture: the
// flags of cmd that set the filter terms the error lists in
// details.filter_terms ("" when none applies).
func filterHint(cmd *cobra.Command, err error) string {
	e := contract.AsError(err)
	if e == nil || e.Code != contract.CodeResultTooLarge {
		return ""
	}
	var terms []string
	switch v := e.Details["filter_terms"].(type) {
	case []string:
		terms = v
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok {
				terms = append(terms, s)
			}
		}
	}
	var flags []string
	for _, t := range terms {
		fl, ok := filterFlags[t]
		if ok && cmd.Flags().Lookup(strings.Fields(fl)[0][2:]) != nil {
			flags = append(flags, fl)
		}
	}
	if len(flags) == 0 {
		return ""
	}
	return "hint: run inquest " + cmd.Name() + " again with " + strings.Join(flags, " and/or ") + " so only matching rows are collected"
}

// str renders a row value for one table cell ("-" for null); control
// characters in process names, paths or states are escaped by cell so
// they can neither break the table nor inject terminal sequences.
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return cell(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return cell(string(b))
}

// refForPID resolves pid to a process_ref through list_processes (the
// tools never accept a bare PID for targeted collection). A process that
// started after the latest sample is waited for (up to about two sampling
// intervals) while /proc/PID exists. Errors: PROCESS_EXITED when only an
// ended lifetime with that PID is retained; REFERENCE_INVALID "no process
// with pid N" when the PID is neither live nor retained.
func refForPID(cmd *cobra.Command, reg *tool.Registry, pid int) (string, error) {
	list := func(scope string) ([]struct {
		Ref       string `json:"process_ref"`
		Lifecycle string `json:"lifecycle"`
	}, error) {
		b, _ := json.Marshal(map[string]any{"scope": scope, "filter": map[string]any{"pid": pid}})
		res, err := reg.Call(cmd.Context(), "list_processes", b)
		if err != nil {
			return nil, err
		}
		var page struct {
			Rows []struct {
				Ref       string `json:"process_ref"`
				Lifecycle string `json:"lifecycle"`
			} `json:"rows"`
		}
		if err := remarshal(res.Data, &page); err != nil {
			return nil, err
		}
		return page.Rows, nil
	}
	deadline := time.Now().Add(2500 * time.Millisecond)
	for {
		rows, err := list("live")
		if err != nil {
			return "", err
		}
		if len(rows) > 0 {
			return rows[0].Ref, nil
		}
		if !procExists(pid) || time.Now().After(deadline) {
			break
		}
		select { // a process newer than the latest sample: wait for the next one
		case <-cmd.Context().Done():
			return "", contract.AsError(cmd.Context().Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if rows, err := list("all"); err == nil && len(rows) > 0 {
		return "", atPID(contract.Errorf(contract.CodeProcessExited, "process %d has exited (only its retained history remains; see inquest history)", pid))
	}
	if procExists(pid) {
		return "", atPID(contract.Errorf(contract.CodeProcessExited, "process %d is not in the sampled process list (it may be ending); retry", pid))
	}
	return "", atPID(contract.Errorf(contract.CodeReferenceInvalid, "no process with pid %d is running or retained", pid))
}

// atPID marks e as about the PID the person gave (field /pid): the
// command's PID argument or --pid flag, as reportFailure names it.
func atPID(e *contract.Error) *contract.Error {
	e.Field = "/pid"
	return e
}

// procExists reports whether /proc/PID exists (Linux); elsewhere it
// reports false, so the caller does not wait for a newer sample.
func procExists(pid int) bool {
	if runtime.GOOS != "linux" {
		return false
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// runCapture starts a capture through start_capture (waiting for it and
// reading the first page), follows next_action through every page and
// renders all rows. With asJSON it prints the start_capture envelope as
// an MCP client would see it instead.
func runCapture(cmd *cobra.Command, env *Env, asJSON bool, argsFn func(*tool.Registry) (map[string]any, error),
	render func(io.Writer, []map[string]any)) error {
	return runCaptureCounted(cmd, env, asJSON, argsFn, func(w io.Writer, rows []map[string]any) int {
		render(w, rows)
		return len(rows)
	})
}

// captureCommandTools are the proc tools a capture table command calls:
// list_processes (resolving a pid), start_capture and the calls its
// next_action names (get_job while running, read_capture for more pages,
// release_capture).
var captureCommandTools = []string{"list_processes", "start_capture", "get_job", "read_capture", "release_capture"}

// runCaptureCounted is runCapture whose render returns how many rows it
// listed (a table that shows a subset of the collected rows), so the
// PARTIAL notice counts the rows the user sees.
func runCaptureCounted(cmd *cobra.Command, env *Env, asJSON bool, argsFn func(*tool.Registry) (map[string]any, error),
	render func(io.Writer, []map[string]any) int) error {
	rt, err := newProcRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr, ProcTools: captureCommandTools})
	if err != nil {
		return err
	}
	defer rt.Close()
	// Connect to a running host while the arguments are built and checked.
	go rt.preconnectProc(cmd.Context())
	args, err := argsFn(rt.Registry)
	if err != nil {
		return failed(err)
	}
	raw, _ := json.Marshal(args)
	if asJSON {
		return callAndPrint(cmd, env, rt.Registry, "start_capture", raw)
	}
	rows, out, err := collectCapture(cmd, rt.Registry, args)
	for _, w := range out.warnings {
		fmt.Fprintln(env.Stderr, "warning:", noteCell(w))
	}
	if err != nil {
		// Told on stderr (text mode); nothing on stdout.
		status := reportFailure(env, cmd, false, err)
		if h := filterHint(cmd, err); h != "" {
			fmt.Fprintln(env.Stderr, h)
		}
		return status
	}
	listed := render(env.Stdout, rows)
	if out.partial {
		fmt.Fprintf(env.Stderr, "inquest %s: PARTIAL result: %d rows listed, but the capture is incomplete (see the warnings above); an absent row is not proof of absence\n", cmd.Name(), listed)
	}
	return nil
}

// captureOutcome is what collectCapture saw besides rows: the union of
// every envelope's warnings (the start_capture envelope carries the first
// page's) and whether any envelope was partial.
type captureOutcome struct {
	warnings []string
	partial  bool
}

// A page that the result byte budget ended (tool.BudgetWarning) is
// partial only because more pages follow, and collectCapture follows
// them all: that warning and the partial status it alone causes are not
// the user's concern. Missing evidence always comes with a warning of
// its own, which keeps the result partial.
func (o *captureOutcome) add(res *contract.Result) {
	if res == nil {
		return
	}
	other := false
	for _, w := range res.Warnings {
		if w == tool.BudgetWarning {
			continue
		}
		other = true
		if !slices.Contains(o.warnings, w) {
			o.warnings = append(o.warnings, w)
		}
	}
	if res.Status == contract.StatusPartial && (other || res.NextAction == nil) {
		o.partial = true
	}
}

// collectCapture runs start_capture with args and returns every row of
// the result, following get_job and read_capture continuations. A failed
// job (start_capture's error, or data.state failed on a later get_job) is
// returned as its error; warnings seen so far are returned with it.
func collectCapture(cmd *cobra.Command, reg *tool.Registry, args map[string]any) ([]map[string]any, captureOutcome, error) {
	var out captureOutcome
	raw, _ := json.Marshal(args)
	res, err := reg.Call(cmd.Context(), "start_capture", raw)
	if err != nil {
		return nil, out, err
	}
	rows := []map[string]any{}
	for {
		out.add(res)
		var d struct {
			State  string `json:"state"`
			Result *struct {
				Error *contract.Error `json:"error"`
			} `json:"result"`
			ReadError *contract.Error  `json:"read_error"`
			Rows      []map[string]any `json:"rows"`
		}
		if err := remarshal(res.Data, &d); err != nil {
			return nil, out, err
		}
		if d.State == "failed" && d.Result != nil && d.Result.Error != nil {
			return nil, out, d.Result.Error
		}
		if d.ReadError != nil {
			return nil, out, d.ReadError
		}
		// The first page is flat in the job's data, as is a read_capture page.
		rows = append(rows, d.Rows...)
		if res.NextAction == nil {
			return rows, out, nil
		}
		b, _ := json.Marshal(res.NextAction.Arguments)
		if res, err = reg.Call(cmd.Context(), res.NextAction.Tool, b); err != nil {
			return nil, out, err
		}
	}
}
