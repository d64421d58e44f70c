package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/inquest-dev/inquest/internal/fsguard"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() {
	register(newRecordCmd)
	register(newLogCmd)
}

func newRecordCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record the tracked processes and the system to a log file (start, stop, status)",
		Long: "A recording writes the processes of the current Tracking List (and their descendants) and the system to a new .log file " +
			"in the recording directory (setting recording_directory, default $XDG_DATA_HOME/inquest/recordings). The host owns it: " +
			"it keeps running when this command or an MCP client disconnects, and stops at 24 h. While it runs the Tracking List is fixed.",
	}
	var m mutationFlags
	var interval int
	start := &cobra.Command{
		Use:   "start",
		Short: "Start recording the Tracking List (needs at least one tracked name: inquest track add NAME)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMutation(cmd, env, &m, "start_recording", func(reg *tool.Registry) (map[string]any, error) {
				return map[string]any{"interval_seconds": interval}, nil
			})
		},
	}
	start.Flags().IntVar(&interval, "interval", 1, "seconds between frames: 1, 2, 5 or 10")
	m.add(start)
	var stopJSON bool
	var stopOp string
	stop := &cobra.Command{
		Use:   "stop [RECORDING_SESSION_ID]",
		Short: "Stop the recording (default: the active session); returns after the file is synced and closed",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return err
			}
			defer rt.Close()
			sid := ""
			if len(args) == 1 {
				sid = args[0]
			} else {
				res, err := rt.Registry.Call(cmd.Context(), "get_recording", json.RawMessage("{}"))
				if err != nil {
					return failed(err)
				}
				var d struct {
					ID *string `json:"recording_session_id"`
				}
				remarshal(res.Data, &d)
				if d.ID == nil {
					fmt.Fprintln(env.Stderr, "inquest: no recording is active")
					return exitCode(1)
				}
				sid = *d.ID
			}
			if stopOp == "" {
				stopOp = newOperationID()
			}
			raw, _ := json.Marshal(map[string]any{"operation_id": stopOp, "recording_session_id": sid})
			res, err := rt.Registry.Call(cmd.Context(), "stop_recording", raw)
			if stopJSON {
				return printEnvelope(env, res, err)
			}
			if err != nil {
				return failed(err)
			}
			var d struct {
				State   string         `json:"state"`
				Outcome map[string]any `json:"outcome"`
			}
			remarshal(res.Data, &d)
			fmt.Fprintf(env.Stdout, "recording %s: %s\n", cell(sid), cell(d.State))
			for _, k := range []string{"name", "log_id", "frames", "lost_frames", "bytes", "reason"} {
				if v, ok := d.Outcome[k]; ok {
					fmt.Fprintf(env.Stdout, "%s: %s\n", k, cell(fmt.Sprint(v)))
				}
			}
			if d.State != "succeeded" {
				return exitCode(1)
			}
			return nil
		},
	}
	stop.Flags().BoolVar(&stopJSON, "json", false, "print the envelope")
	stop.Flags().StringVar(&stopOp, "operation-id", "", "operation_id (default: a new random id)")
	var statusJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show whether a recording is active, its session id, names, interval and log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return err
			}
			defer rt.Close()
			res, err := rt.Registry.Call(cmd.Context(), "get_recording", json.RawMessage("{}"))
			if statusJSON || err != nil {
				return printEnvelope(env, res, err)
			}
			var d map[string]any
			remarshal(res.Data, &d)
			if d["active"] != true {
				fmt.Fprintln(env.Stdout, "recording: inactive")
				return nil
			}
			fmt.Fprintln(env.Stdout, "recording: active")
			for _, k := range []string{"recording_session_id", "names", "interval_seconds", "name", "log_id", "started_at", "lost_frames", "write_error"} {
				if v, ok := d[k]; ok && v != nil {
					fmt.Fprintf(env.Stdout, "%s: %s\n", k, cell(fmt.Sprint(v)))
				}
			}
			return nil
		},
	}
	status.Flags().BoolVar(&statusJSON, "json", false, "print the envelope")
	cmd.AddCommand(start, stop, status)
	return cmd
}

func newLogCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Saved recordings: list the recording directory, summarize or export a log file",
	}
	var listJSON bool
	var nameFilter string
	list := &cobra.Command{
		Use:   "list",
		Short: "List .log files in the recording directory with their log ids",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return err
			}
			defer rt.Close()
			a := map[string]any{"wait_ms": 10000}
			if nameFilter != "" {
				a["filter"] = map[string]any{"name": nameFilter}
			}
			raw, _ := json.Marshal(a)
			res, err := rt.Registry.Call(cmd.Context(), "list_logs", raw)
			if listJSON || err != nil {
				return printEnvelope(env, res, err)
			}
			var d struct {
				Rows []struct {
					ID   string `json:"log_id"`
					Name string `json:"name"`
				} `json:"rows"`
			}
			remarshal(res.Data, &d)
			fmt.Fprintf(env.Stdout, "%-22s %s\n", "LOG_ID", "NAME")
			for _, r := range d.Rows {
				fmt.Fprintf(env.Stdout, "%-22s %s\n", cell(r.ID), cell(r.Name))
			}
			if res.NextAction != nil {
				fmt.Fprintln(env.Stderr, "more logs: narrow with --name, or page with inquest call read_capture")
			}
			return nil
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the envelope")
	list.Flags().StringVar(&nameFilter, "name", "", "case-insensitive substring of the file name")
	show := &cobra.Command{
		Use:   "show FILE",
		Short: "Summarize a log file: interval, span, identities, per-metric min/avg/max; says incomplete for an interrupted file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadLogFile(cmd.Context(), args[0])
			if err != nil {
				return failed(err)
			}
			if w, ok := terminalWidth(env.Stdout); ok {
				drawLogCharts(env.Stdout, l, w) // on a terminal: system CPU and memory charts first
			}
			return l.Summary(env.Stdout)
		},
	}
	var o recording.ExportOptions
	var metrics []string
	var pids []int
	var from, to, out string
	export := &cobra.Command{
		Use:   "export FILE",
		Short: "Export a log file as csv, jsonl or openmetrics (for promtool tsdb create-blocks-from openmetrics)",
		Long: "Writes every available value of the selected metrics, targets and time range. csv: one row per value (timestamp, target, pid, start_time, name, metric, value); " +
			"jsonl: one object per frame and target; openmetrics: OpenMetrics text that `promtool tsdb create-blocks-from openmetrics` imports into a Prometheus TSDB (then Grafana, VictoriaMetrics...). Missing values are never written as zero. " +
			"An interrupted recording is exported with every complete frame and a warning on standard error.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Metrics = metrics
			if !slices.Contains([]string{"csv", "jsonl", "openmetrics"}, o.Format) {
				return failed(argError("--format", "csv, jsonl or openmetrics"))
			}
			for _, p := range pids {
				if p <= 0 || p > math.MaxInt32 {
					return failed(argError("--pid", "a positive process id"))
				}
				o.PIDs = append(o.PIDs, int32(p))
			}
			for _, b := range []struct {
				s    string
				t    *time.Time
				name string
			}{{from, &o.From, "--from"}, {to, &o.To, "--to"}} {
				if b.s == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339Nano, b.s)
				if err != nil {
					return failed(argError(b.name, "an RFC 3339 timestamp with offset"))
				}
				*b.t = t
			}
			if from != "" && to != "" && o.From.After(o.To) {
				// As rank_processes and get_history: a reversed window is
				// a mistake, never an empty export.
				e := contract.Errorf(contract.CodeInvalidArgument, "--from is after --to (%s is after %s); give the earlier time as --from", from, to)
				e.Field = "/from"
				return failed(e)
			}
			l, err := loadLogFile(cmd.Context(), args[0])
			if err != nil {
				return failed(err)
			}
			w := env.Stdout
			if out != "" && out != "-" {
				f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					return failed(contract.Errorf(contract.CodeExportFailed, "the output file cannot be created (it must not exist): %v", err))
				}
				defer f.Close()
				w = f
			}
			st, err := l.Export(w, o)
			if err != nil {
				return failed(contract.Errorf(contract.CodeExportFailed, "%v", err))
			}
			if p := l.Info.Problems(); len(p) > 0 {
				fmt.Fprintf(env.Stderr, "warning: the recording is incomplete: %s\n", strings.Join(p, "; "))
			}
			fmt.Fprintf(env.Stderr, "exported %d samples in %d series\n", st.Samples, st.Series)
			return nil
		},
	}
	export.Flags().StringVar(&o.Format, "format", "csv", "csv, jsonl or openmetrics")
	export.Flags().StringSliceVar(&metrics, "metric", nil, "metric id to export (repeatable; default all)")
	export.Flags().IntSliceVar(&pids, "pid", nil, "process id to export (repeatable; default all processes and the system)")
	export.Flags().StringVar(&from, "from", "", "first frame time, RFC 3339 (inclusive)")
	export.Flags().StringVar(&to, "to", "", "last frame time, RFC 3339 (inclusive)")
	export.Flags().StringVarP(&out, "output", "o", "", "output file, created new (default standard output)")
	cmd.AddCommand(list, show, export)
	return cmd
}

func argError(flag, want string) error {
	e := contract.Errorf(contract.CodeInvalidArgument, "%s must be %s", flag, want)
	e.Field = "/" + strings.TrimPrefix(flag, "--")
	return e
}

// loadLogFile loads a recording file for the local log commands (no host
// budget: the command's own memory). A FIFO, device or directory is refused
// before any read; ctx (cancelled by SIGINT/SIGTERM) stops a long read.
func loadLogFile(ctx context.Context, path string) (*recording.Log, error) {
	path = resolveLogArg(ctx, path)
	l, err := recording.LoadContext(ctx, path, math.MaxInt64/4)
	if err != nil {
		var fe *recording.FormatError
		var nr *recording.NotRegularError
		switch {
		case errors.As(err, &fe):
			return nil, contract.Errorf(contract.CodeDecodeFailed, "%s is not a readable inquest recording: %s at byte offset %s", path, fe.Msg, strconv.FormatInt(fe.Offset, 10))
		case errors.As(err, &nr):
			e := contract.Errorf(contract.CodeInvalidArgument, "%v", nr)
			e.Field = "/file"
			return nil, e
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return nil, contract.Errorf(contract.CodeCancelled, "reading %s was interrupted before it finished; nothing was shown", path)
		case errors.Is(err, fs.ErrPermission):
			e := contract.Errorf(contract.CodePermissionDenied, "%s cannot be read: this user may not read it", path).
				WithDetail("path", path).WithDetail("cause", errnoOr(err, "EACCES"))
			e.Field = "/file"
			return nil, e
		case errors.Is(err, fs.ErrNotExist):
			e := contract.Errorf(contract.CodeInvalidArgument, "%s does not exist", path).WithDetail("path", path).WithDetail("cause", "ENOENT")
			e.Field = "/file"
			return nil, e
		}
		e := contract.Errorf(contract.CodeInvalidArgument, "%v", err)
		e.Field = "/file"
		if n := fsguard.ErrnoName(err); n != "" {
			e = e.WithDetail("path", path).WithDetail("cause", n)
		}
		return nil, e
	}
	return l, nil
}

// errnoOr is the errno name of err's system error, or def.
func errnoOr(err error, def string) string {
	if n := fsguard.ErrnoName(err); n != "" {
		return n
	}
	return def
}
