package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newRuntimeCmd) }

// newRuntimeCmd is `inquest runtime PID` (get_runtime_collection: the
// managed runtime, its collection state and current values) with the
// subcommands enable and disable (set_runtime_collection).
func newRuntimeCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runtime PID",
		Short: "Managed runtime of a process (JVM heap, GC, threads, classes): state and values",
		Long: `Show the managed runtime of process PID (jvm, dotnet, none or unknown), its
version, whether its metrics can be collected, the collection state
(disabled, waiting, collecting, stopping, unavailable with the reason) and,
while collecting, the JVM's heap spaces, collectors, threads and classes, read
from its HotSpot performance data as jstat reads it (get_runtime_collection).

Collection is off until you enable it for this process lifetime:
  inquest runtime enable PID    (asks for a local confirmation)
  inquest runtime disable PID
A restarted process is a new lifetime and starts disabled.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[0])
			if err != nil {
				return err
			}
			rt, err := newProcRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return failed(err)
			}
			defer rt.Close()
			ref, err := refForPID(cmd, rt.Registry, pid)
			if err != nil {
				return failed(err)
			}
			raw, _ := json.Marshal(map[string]any{"process_ref": ref})
			res, err := rt.Registry.Call(cmd.Context(), "get_runtime_collection", raw)
			if asJSON {
				return printEnvelope(env, res, err)
			}
			if err != nil {
				return failed(err)
			}
			var d runtimeView
			if err := remarshal(res.Data, &d); err != nil {
				return failed(err)
			}
			printRuntime(env.Stdout, d)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the get_runtime_collection envelope")
	for _, on := range []bool{true, false} {
		cmd.AddCommand(newRuntimeSetCmd(env, on))
	}
	return cmd
}

func newRuntimeSetCmd(env *Env, enable bool) *cobra.Command {
	var m mutationFlags
	name, short := "disable", "Stop reading a process's managed-runtime metrics (set_runtime_collection enabled false)"
	if enable {
		name, short = "enable", "Authorize reading a process's managed-runtime metrics for its lifetime (needs local confirmation)"
	}
	cmd := &cobra.Command{
		Use:   name + " PID",
		Short: short,
		Long:  short + ".\n\n" + confirmHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[0])
			if err != nil {
				return err
			}
			return runMutation(cmd, env, &m, "set_runtime_collection", func(reg *tool.Registry) (map[string]any, error) {
				ref, err := refForPID(cmd, reg, pid)
				if err != nil {
					return nil, err
				}
				return map[string]any{"process_ref": ref, "enabled": enable}, nil
			})
		},
	}
	m.add(cmd)
	return cmd
}

// runtimeView is the part of get_runtime_collection's data the table uses.
type runtimeView struct {
	PID       int     `json:"pid"`
	Name      string  `json:"name"`
	Runtime   string  `json:"runtime"`
	Version   *string `json:"version"`
	VMVersion *string `json:"vm_version"`
	Supported bool    `json:"supported"`
	Enabled   bool    `json:"enabled"`
	State     string  `json:"state"`
	Reason    *string `json:"reason"`
	Detail    *string `json:"detail"`
	Revision  string  `json:"revision"`
	Values    *struct {
		Metrics map[string]string `json:"metrics"`
		Spaces  []struct {
			Name      string `json:"name"`
			Used      string `json:"used_bytes"`
			Committed string `json:"committed_bytes"`
			Max       string `json:"max_bytes"`
		} `json:"spaces"`
		Collectors []struct {
			Name        string `json:"name"`
			Invocations string `json:"invocations"`
			TimeNS      string `json:"time_ns"`
		} `json:"collectors"`
		Policy *string `json:"gc_policy"`
	} `json:"values"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// humanNS renders decimal-string nanoseconds as ms or s.
func humanNS(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return s
	}
	if n < 10e9 {
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 2, 64) + " s"
}

func printRuntime(w io.Writer, d runtimeView) {
	rt := d.Runtime
	if v := deref(d.Version); v != "" {
		rt += " " + v
		if vm := deref(d.VMVersion); vm != "" && vm != v {
			rt += " (VM " + vm + ")"
		}
	}
	fmt.Fprintf(w, "PID %d %s: %s\n", d.PID, cell(d.Name), cell(rt))
	state := d.State
	if r := deref(d.Reason); r != "" {
		state += " (" + r + ")"
	}
	auth := "not authorized"
	if d.Enabled {
		auth = "authorized for this lifetime"
	}
	fmt.Fprintf(w, "collection: %s, %s, supported: %v\n", state, auth, d.Supported)
	if det := deref(d.Detail); det != "" {
		fmt.Fprintf(w, "  %s\n", cell(det))
	}
	if d.Values == nil {
		if d.State == "disabled" && d.Supported {
			fmt.Fprintf(w, "enable with: inquest runtime enable %d\n", d.PID)
		}
		return
	}
	m := d.Values.Metrics
	get := func(id string) string {
		if v, ok := m[id]; ok {
			return v
		}
		return ""
	}
	hb := func(id string) string {
		if v := get(id); v != "" {
			return humanBytes(v)
		}
		return "-"
	}
	fmt.Fprintf(w, "heap: %s used of %s committed, max %s", hb("jvm_heap_used_bytes"), hb("jvm_heap_committed_bytes"), hb("jvm_heap_max_bytes"))
	if p := deref(d.Values.Policy); p != "" {
		fmt.Fprintf(w, " (%s)", cell(p))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-12s %10s %10s %10s\n", "SPACE", "USED", "COMMITTED", "MAX")
	for _, s := range d.Values.Spaces {
		fmt.Fprintf(w, "  %-12s %10s %10s %10s\n", cell(s.Name), humanBytes(s.Used), humanBytes(s.Committed), humanBytes(s.Max))
	}
	fmt.Fprintf(w, "  %-34s %8s %10s\n", "COLLECTOR", "COUNT", "TIME")
	for _, c := range d.Values.Collectors {
		fmt.Fprintf(w, "  %-34s %8s %10s\n", cell(c.Name), c.Invocations, humanNS(c.TimeNS))
	}
	var parts []string
	add := func(label, id string, f func(string) string) {
		if v := get(id); v != "" {
			parts = append(parts, label+" "+f(v))
		}
	}
	same := func(s string) string { return s }
	add("threads", "jvm_threads_live", same)
	add("classes loaded", "jvm_classes_loaded", same)
	add("unloaded", "jvm_classes_unloaded", same)
	add("safepoints", "jvm_safepoints", same)
	add("safepoint time", "jvm_safepoint_time_ns", humanNS)
	add("JIT time", "jvm_jit_compile_time_ns", humanNS)
	fmt.Fprintln(w, strings.Join(parts, ", "))
}
