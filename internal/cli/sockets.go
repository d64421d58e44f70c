package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newSocketsCmd) }

func newSocketsCmd(env *Env) *cobra.Command {
	var asJSON bool
	var pid int
	var filter collectionFilter
	var listen bool
	var state, proto string
	cmd := &cobra.Command{
		Use:   "sockets",
		Short: "Socket endpoints (start_capture kind network) as a table",
		Long: `List tcp, tcp6, udp, udp6 and unix endpoints from /proc/net with the owning
pid and name, through start_capture kind network (host-wide, or one process
with --pid). No DNS lookups. --listen (listening sockets only, like ss -l),
--state (LISTEN, ESTABLISHED, TIME_WAIT, ... as ss prints them), --proto
(tcp, tcp6, udp, udp6 or unix; IPv6 is its own protocol, as in /proc/net),
--owner (executable name) and --path/--extension (unix socket paths) narrow
the collection itself (start_capture filter). --json prints the
start_capture envelope.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("pid") && pid < 1 {
				return fmt.Errorf("--pid must be a positive integer (omit it for every process)")
			}
			return runCapture(cmd, env, asJSON, func(reg *tool.Registry) (map[string]any, error) {
				a := map[string]any{"kind": "network"}
				if cmd.Flags().Changed("pid") {
					ref, err := refForPID(cmd, reg, pid)
					if err != nil {
						return nil, err
					}
					a["process_ref"] = ref
				}
				// ss spells states in lower case with dashes (time-wait)
				st := strings.ToUpper(strings.ReplaceAll(state, "-", "_"))
				if listen && st != "" && st != "LISTEN" {
					return nil, fmt.Errorf("--listen and --state %s exclude each other (--listen is --state LISTEN)", state)
				}
				if listen {
					st = "LISTEN"
				}
				a = filter.apply(a)
				if st != "" || proto != "" {
					f, _ := a["filter"].(map[string]any)
					if f == nil {
						f = map[string]any{}
					}
					if st != "" {
						f["state"] = st
					}
					if proto != "" {
						f["protocol"] = proto
					}
					a["filter"] = f
				}
				return a, nil
			}, func(w io.Writer, rows []map[string]any) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PROTO\tLOCAL\tREMOTE\tSTATE\tPID\tOWNER")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", str(r["protocol"]), endpoint(r["local"]), endpoint(r["remote"]), str(r["state"]), str(r["pid"]), textOf(r, "owner_name"))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	cmd.Flags().IntVar(&pid, "pid", 0, "only the sockets of this process")
	filter.register(cmd, true, true)
	cmd.Flags().BoolVarP(&listen, "listen", "l", false, "listening sockets only (--state LISTEN), like ss -l")
	cmd.Flags().StringVar(&state, "state", "", "only sockets in this state: LISTEN, ESTABLISHED, TIME_WAIT, CLOSE_WAIT, SYN_SENT, UNCONNECTED, CONNECTED, ...")
	cmd.Flags().StringVar(&proto, "proto", "", "only this protocol: tcp, tcp6, udp, udp6 or unix")
	return cmd
}

// endpoint renders {address, port} as addr:port ([addr]:port for IPv6) and
// {path} as the path.
func endpoint(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return "-"
	}
	if _, ok := m["path"]; ok {
		return textOf(m, "path") // exact bytes, escaped (textCell)
	}
	addr := str(m["address"])
	for _, c := range addr {
		if c == ':' {
			addr = "[" + addr + "]"
			break
		}
	}
	return addr + ":" + str(m["port"])
}
