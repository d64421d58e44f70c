package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { registerNamed("ps", newPsCmd) }

func newPsCmd(env *Env) *cobra.Command {
	var asJSON bool
	var name, sortBy, order string
	var limit int
	var columns []string
	var exact bool
	var containerFlag string
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List processes (one list_processes call with metric_ids) as a table",
		Long: `List processes of this machine with CPU%, RSS, threads and fds from one snapshot.
--sort takes pid, name, a process metric id or an alias (cpu, time, rss/mem, vsz,
swap, thr, fds, read, write, minflt, majflt): metric sorts are descending unless
--order asc, ordered by the values of one snapshot (shown in their column, or in
an extra one; with -o, as with procps ps, only the columns -o names are shown),
rows without a value last. --json prints list_processes' envelope.
A CONTAINER column (runtime:id from the cgroup path; - a host process, ? no
rule fits) is shown when any listed process runs in a container, or with
-o container; --container docker, podman:ID, an id prefix or any filters by it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A bad --sort is refused before any host is reached.
			sortKey, err := psSortKey(sortBy)
			if err != nil {
				return err
			}
			var cols []psColumn
			// -o "" is refused as procps refuses it (not the default table).
			if cmd.Flags().Changed("columns") {
				if cols, err = parsePSColumns(flagAsTyped(cmd, "columns"), columns); err != nil {
					return err
				}
			}
			// So is a --limit outside 1..5000: --limit 0 is not "every
			// row" (omit it for the default page).
			if cmd.Flags().Changed("limit") && (limit < 1 || limit > host.MaxPageRows) {
				return badFlag("--limit", "--limit %d is out of range: give 1..%d rows, or omit --limit for the default page", limit, host.MaxPageRows)
			}
			var container string
			if cmd.Flags().Changed("container") {
				if container, err = parseContainerFlag(containerFlag); err != nil {
					return err
				}
			}
			rt, err := newProcRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr, ProcTools: []string{"list_processes"}})
			if err != nil {
				return err
			}
			defer rt.Close()
			// Connect to a running host while the arguments are built
			// (and checked against the schema unless ps vouches for
			// them); the call below waits for it.
			go rt.preconnectProc(cmd.Context())
			if len(cols) > 0 && !asJSON {
				return runPSColumns(cmd, env, rt.Registry, cols, sortKey, order, name, limit, exact, container)
			}
			if asJSON {
				raw, _ := psArgs(sortKey, order, name, limit, cmd.Flags().Changed("limit"), false)
				return callAndPrint(cmd, env, rt.Registry, "list_processes", withContainerFilter(raw, container, false))
			}
			// The table's arguments: when ps vouches for them (its
			// constants and flags within the schema's bounds) the call
			// skips compiling the schema; otherwise the registry
			// validates them and names what is wrong.
			raw, checked := psArgs(sortKey, order, name, limit, cmd.Flags().Changed("limit"), true)
			// the CONTAINER column's facts; parseContainerFlag checked the
			// filter within the schema's bounds
			raw = withContainerFilter(raw, container, true)
			call := rt.Registry.Call
			if checked {
				call = rt.Registry.CallPrechecked
			}
			res, err := call(cmd.Context(), "list_processes", raw)
			if err != nil {
				return failed(err)
			}
			// A metric sort shows the values it ordered by (one snapshot):
			// in their own column, or in an extra one.
			extra := ""
			switch sortKey {
			case "pid", "name", "cpu_percent", "rss_bytes", "threads", "fd_count":
			default:
				extra = sortKey
			}
			out := bufio.NewWriter(env.Stdout)
			defer out.Flush()
			more, err := writePSTable(out, res.Data, extra, exact)
			if err != nil {
				return err
			}
			if more {
				fmt.Fprintln(env.Stderr, "(more rows: raise --limit or use --json and follow next_action)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list_processes envelope")
	cmd.Flags().StringVar(&name, "name", "", "case-insensitive substring of the process name (executable base name), its comm, or a name it had before an exec; exact bytes")
	cmd.Flags().StringVar(&sortBy, "sort", "pid", "pid, name, or a process metric id or alias (cpu, rss, time, ...)")
	cmd.Flags().StringVar(&order, "order", "", "asc or desc (default asc for pid/name, desc for a metric)")
	cmd.Flags().IntVar(&limit, "limit", 0, "rows (1..5000; default: the tool's page, up to 5000 rows within the result budget)")
	cmd.Flags().StringSliceVarP(&columns, "columns", "o", nil, "columns as ps -o keywords, e.g. pid,user,time,%cpu,rss,comm,args (also uid, ppid, vsz, nlwp, fds, stat, name; keyword=HEADER renames)")
	cmd.Flags().StringVar(&containerFlag, "container", "", "only processes in containers: a runtime (docker, podman, containerd, cri-o, kubernetes, systemd-nspawn, lxc, none, unknown, any), runtime:ID, or an id prefix")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print exact values (bytes, nanoseconds) instead of human units (285.9M, 00:01:05)")
	return cmd
}

// runPSColumns lists processes with the columns of -o: one
// list_processes call projecting what they read (user and command_line
// included), every page followed up to --limit.
func runPSColumns(cmd *cobra.Command, env *Env, reg *tool.Registry, cols []psColumn, sortKey, order, name string, limit int, exact bool, container string) error {
	projection, metrics := psColumnArgs(cols)
	if sortKey != "pid" && sortKey != "name" && !slices.Contains(metrics, sortKey) {
		metrics = append(metrics, sortKey)
	}
	args := map[string]any{"sort": sortKey, "projection": projection}
	if len(metrics) > 0 {
		args["metric_ids"] = metrics
	}
	if order != "" {
		args["order"] = order
	}
	if name != "" {
		if sample.Lossy(name) {
			args["filter"] = map[string]any{"name_bytes": sample.EncodeBytes(name)}
		} else {
			args["filter"] = map[string]any{"name": name}
		}
	}
	if cmd.Flags().Changed("limit") {
		args["limit"] = limit
	}
	raw, _ := json.Marshal(args)
	raw = withContainerFilter(raw, container, false)
	res, err := reg.Call(cmd.Context(), "list_processes", raw)
	if err != nil {
		return failed(err)
	}
	var rows []map[string]any
	for {
		var page struct {
			Rows []map[string]any `json:"rows"`
		}
		if err := remarshal(res.Data, &page); err != nil {
			return err
		}
		rows = append(rows, page.Rows...)
		if res.NextAction == nil || res.NextAction.Tool != "list_processes" || cmd.Flags().Changed("limit") {
			break
		}
		b, _ := json.Marshal(res.NextAction.Arguments)
		if res, err = reg.Call(cmd.Context(), "list_processes", b); err != nil {
			return failed(err)
		}
	}
	if cmd.Flags().Changed("limit") && res.NextAction != nil {
		fmt.Fprintln(env.Stderr, "(more rows: raise --limit or use --json and follow next_action)")
	}
	renderPSColumns(env.Stdout, cols, rows, exact)
	return nil
}

// psColumns are the process metrics the ps table shows, in its column
// order (CPU%, RSS, THR, FDS).
var psColumns = []string{"cpu_percent", "rss_bytes", "threads", "fd_count"}

// psArgs builds ps's list_processes arguments from its flags: sortKey (a
// key psSortKey returned), order and name as given, limit when limitSet
// (already checked to be 1..host.MaxPageRows). One request asks for the
// rows and the table's column values from one snapshot; table adds the
// projection of the fields the table shows (pid, name, state; --json
// keeps the default rows). checked is true when every value is within the
// input schema's bounds without the schema: order empty, asc or desc, and
// a name of 1..256 characters (name_bytes of 4..344 base64 characters for
// a name that is not valid UTF-8); the rest are ps's constants.
// TestPsArgsChecked and FuzzPsArgs hold that a checked arguments object
// passes the schema, so skipping its validation changes no answer.
func psArgs(sortKey, order, name string, limit int, limitSet, table bool) (raw json.RawMessage, checked bool) {
	args := map[string]any{"sort": sortKey, "metric_ids": psColumns}
	checked = order == "" || order == "asc" || order == "desc"
	if order != "" {
		args["order"] = order
	}
	if name != "" {
		// a name that is not valid UTF-8 travels as its exact bytes
		if sample.Lossy(name) {
			enc := sample.EncodeBytes(name)
			args["filter"] = map[string]any{"name_bytes": enc}
			checked = checked && len(enc) >= 4 && len(enc) <= 344
		} else {
			args["filter"] = map[string]any{"name": name}
			checked = checked && utf8.RuneCountInString(name) <= 256
		}
	}
	if limitSet {
		args["limit"] = limit
		checked = checked && limit >= 1 && limit <= host.MaxPageRows
	}
	if table {
		args["projection"] = []string{"pid", "name", "state"}
	}
	raw, _ = json.Marshal(args)
	return raw, checked
}

// metricUnit returns the catalog unit of a metric id ("" when unknown).
func metricUnit(id string) string {
	if m, ok := sample.LookupMetric(id); ok {
		return m.Unit
	}
	return ""
}

func fmtVal(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatFloat(x, 'f', 0, 64)
		}
		return strconv.FormatFloat(x, 'f', 1, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func humanBytes(s string) string {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return s
	}
	units := []string{"B", "K", "M", "G", "T"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatUint(n, 10) + "B"
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + units[i]
}

// newProcRuntime is the runtime of the proc table commands (ps, fuser,
// lsof and the other capture tables): the proc tools only, without the
// perf and bin catalogs they would build and discard. It is newRuntime's
// proc part; Close releases it.
func newProcRuntime(ctx context.Context, opts runtimeOptions) (*Runtime, error) {
	rt := &Runtime{Registry: tool.NewRegistry()}
	if err := buildProc(ctx, rt, opts); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

// remarshal converts v (a map or json.RawMessage) into out through JSON.
func remarshal(v any, out any) error {
	if raw, ok := v.(json.RawMessage); ok {
		return json.Unmarshal(raw, out)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// ratString renders an exact rational (decimal-string numerator and
// denominator, as get_history's integer means) as a decimal with up to two
// places; it falls back to "n/d" when either part is not an integer.
func ratString(num, den string) string {
	r, ok := new(big.Rat).SetString(num + "/" + den)
	if !ok {
		return num + "/" + den
	}
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(2)
}

// fmtPercent renders a percentage with one decimal, "-" when unavailable.
func fmtPercent(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return "-"
}
