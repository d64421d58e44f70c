package cli

import (
	"fmt"
	"github.com/inquest-dev/inquest/internal/contract"
	"io"
	"slices"
	"strings"
	"sync"
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
	var netns uint64
	var columns []string
	cmd := &cobra.Command{
		Use:   "sockets",
		Short: "Socket endpoints (start_capture kind network) as a table",
		Long: `List tcp, tcp6, udp, udp6 and unix endpoints from /proc/net with the owning
pid and name, through start_capture kind network (host-wide, or one process
with --pid). No DNS lookups. --listen (listening sockets only, like ss -l),
--state (listen, estab, time-wait, ... as ss names them), --proto (tcp or
udp for both address families, as ss -t/-u; mptcp as ss -M; tcp6, udp6
or unix), --netns (one network namespace, by inode). States and
addresses are spelled as ss -n spells them (ESTAB, 0.0.0.0:*). The host-wide
list covers every network namespace a process is in; the NETNS column
(namespace inode) is shown when the rows span several, or with -o.
--owner (executable name) and --path/--extension (unix socket paths) narrow
the collection itself (start_capture filter). --json prints the
start_capture envelope.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("pid") && pid < 1 {
				return badFlag("--pid", "--pid must be a positive integer (omit it for every process)")
			}
			var wantStates, wantProtos []string
			cols, err := parseSocketColumns(columns)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("netns") && netns == 0 {
				return badFlag("--netns", "--netns must be a network namespace inode (a positive integer, as lsns and ls -l /proc/PID/ns/net print it)")
			}
			return runCaptureCounted(cmd, env, asJSON, func(reg *tool.Registry) (map[string]any, error) {
				a := map[string]any{"kind": "network"}
				if cmd.Flags().Changed("pid") {
					ref, err := refForPID(cmd, reg, pid)
					if err != nil {
						return nil, err
					}
					a["process_ref"] = ref
				}
				if state != "" && !ssStateKnown(state) {
					e := contract.Errorf(contract.CodeInvalidArgument, "not a socket state; use one ss prints (listen, estab, syn-sent, syn-recv, fin-wait-1, fin-wait-2, time-wait, unconn, close-wait, last-ack, closing) or a kernel name (ESTABLISHED, TIME_WAIT)")
					e.Field = "/filter/state"
					return nil, e
				}
				if listen && state != "" && ssStateSet(state)[0] != "LISTEN" {
					return nil, contract.Errorf(contract.CodeInvalidArgument, "--listen and --state %s exclude each other (--listen is --state LISTEN)", state)
				}
				st := state
				if listen {
					st = "LISTEN"
				}
				wantStates, wantProtos = nil, nil
				if st != "" {
					wantStates = ssStateSet(st)
				}
				if proto != "" {
					wantProtos = []string{proto}
					switch proto { // as ss -t and -u: both address families
					case "tcp", "udp":
						wantProtos = append(wantProtos, proto+"6")
					}
				}
				a = filter.apply(a)
				// One state or protocol narrows the collection itself;
				// several (estab: tcp ESTABLISHED and unix CONNECTED) are
				// kept from the rows below.
				if len(wantStates) == 1 || len(wantProtos) == 1 {
					f, _ := a["filter"].(map[string]any)
					if f == nil {
						f = map[string]any{}
					}
					if len(wantStates) == 1 {
						f["state"] = wantStates[0]
					}
					if len(wantProtos) == 1 {
						f["protocol"] = wantProtos[0]
					}
					a["filter"] = f
				}
				return a, nil
			}, func(w io.Writer, rows []map[string]any) int {
				var kept []map[string]any
				for _, r := range rows {
					p, _ := r["protocol"].(string)
					st, _ := r["state"].(string)
					if (wantProtos == nil || slices.Contains(wantProtos, p)) && (wantStates == nil || slices.Contains(wantStates, strings.ToUpper(st))) &&
						(netns == 0 || netnsOf(r) == netns) {
						kept = append(kept, r)
					}
				}
				renderSockets(w, kept, cols)
				return len(kept)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	cmd.Flags().IntVar(&pid, "pid", 0, "only the sockets of this process")
	filter.register(cmd, true, true)
	cmd.Flags().BoolVarP(&listen, "listen", "l", false, "listening sockets only (--state LISTEN), like ss -l")
	cmd.Flags().StringVar(&state, "state", "", "only sockets in this state, as ss names it (listen, estab, time-wait, close-wait, syn-sent, unconn, ...) or the kernel does (ESTABLISHED, TIME_WAIT)")
	cmd.Flags().StringVar(&proto, "proto", "", "only this protocol: tcp or udp (both address families, as ss -t/-u), mptcp (ss -M), tcp6, udp6 or unix")
	cmd.Flags().Uint64Var(&netns, "netns", 0, "only sockets of this network namespace (its inode, as lsns prints it)")
	cmd.Flags().StringSliceVarP(&columns, "columns", "o", nil, "columns, e.g. proto,state,local,remote,pid,owner,netns,inode (default: the first six, and netns when the rows span several network namespaces)")
	return cmd
}

// socketColumn is one column of inquest sockets: its header and cell.
type socketColumn struct {
	name, header string
	cell         func(r map[string]any) string
}

// socketColumns are the columns -o names, in default order.
var socketColumns = sync.OnceValue(func() []socketColumn {
	return []socketColumn{
		{"proto", "PROTO", func(r map[string]any) string { return str(r["protocol"]) }},
		{"state", "STATE", func(r map[string]any) string { st, _ := r["state"].(string); return cell(ssState(st)) }},
		{"local", "LOCAL", func(r map[string]any) string { return ssEndpoint(r["local"], r["protocol"] == "unix") }},
		{"remote", "REMOTE", func(r map[string]any) string { return ssEndpoint(r["remote"], r["protocol"] == "unix") }},
		{"pid", "PID", func(r map[string]any) string { return str(r["pid"]) }},
		{"owner", "OWNER", func(r map[string]any) string { return textOf(r, "owner_name") }},
		{"netns", "NETNS", func(r map[string]any) string { return str(r["net_ns"]) }},
		{"inode", "INODE", func(r map[string]any) string { return str(r["inode"]) }},
	}
})

// parseSocketColumns resolves -o names (nil: the default columns, chosen
// per table by renderSockets); an unknown name is an error naming it.
func parseSocketColumns(names []string) ([]socketColumn, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var out []socketColumn
	for _, n := range names {
		i := slices.IndexFunc(socketColumns(), func(c socketColumn) bool { return c.name == strings.ToLower(strings.TrimSpace(n)) })
		if i < 0 {
			return nil, badFlag("-o", "-o %q: unknown column (proto, state, local, remote, pid, owner, netns, inode)", n)
		}
		out = append(out, socketColumns()[i])
	}
	return out, nil
}

// netnsOf is a row's net_ns (0 when unknown).
func netnsOf(r map[string]any) uint64 {
	if v, ok := r["net_ns"].(float64); ok && v > 0 {
		return uint64(v)
	}
	return 0
}

// renderSockets prints network rows with ss's spelling of the same
// facts: states as ss names them (ESTAB, TIME-WAIT, UNCONN), addresses as
// ss -n prints them (port 0 of an unbound end as *, IPv6 in brackets), a
// unix socket's path (or * for an unnamed one). cols nil is PROTO, STATE,
// LOCAL, REMOTE, PID, OWNER, and NETNS (the row's network namespace
// inode) when the rows span more than one namespace.
func renderSockets(w io.Writer, rows []map[string]any, cols []socketColumn) {
	if cols == nil {
		all := socketColumns()
		cols = all[:6]
		seen := map[uint64]bool{}
		for _, r := range rows {
			seen[netnsOf(r)] = true
		}
		if len(seen) > 1 {
			cols = append(slices.Clip(cols), all[6])
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c.header)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for i, c := range cols {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c.cell(r))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// ssStates maps the kernel state names the network capture reports
// (tcp_states.h, and unix CONNECTED/UNCONNECTED) to ss's.
var ssStates = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"ESTABLISHED": "ESTAB", "SYN_SENT": "SYN-SENT", "SYN_RECV": "SYN-RECV", "FIN_WAIT1": "FIN-WAIT-1",
		"FIN_WAIT2": "FIN-WAIT-2", "TIME_WAIT": "TIME-WAIT", "CLOSE": "UNCONN", "CLOSE_WAIT": "CLOSE-WAIT",
		"LAST_ACK": "LAST-ACK", "LISTEN": "LISTEN", "CLOSING": "CLOSING", "NEW_SYN_RECV": "SYN-RECV",
		"CONNECTED": "ESTAB", "UNCONNECTED": "UNCONN", "CONNECTING": "SYN-SENT",
	}
})

// ssState is state as ss spells it ("-" when unknown).
func ssState(state string) string {
	if state == "" {
		return "-"
	}
	if s, ok := ssStates()[strings.ToUpper(state)]; ok {
		return s
	}
	return state
}

// ssStateSet is the set of capture states --state s selects: s in ss's
// spelling (estab, time-wait, unconn: every kernel state ss prints so)
// or in the kernel's (ESTABLISHED, TIME_WAIT), case-insensitive.
func ssStateSet(s string) []string {
	u := strings.ToUpper(s)
	var out []string
	for k, v := range ssStates() {
		if v == u || k == u || k == strings.ReplaceAll(u, "-", "_") {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return []string{strings.ReplaceAll(u, "-", "_")}
	}
	slices.Sort(out)
	return out
}

// ssStateKnown reports whether s names a state in ss's spelling or the
// kernel's (what ssStateSet selects by), case-insensitive.
func ssStateKnown(s string) bool {
	u := strings.ToUpper(s)
	for k, v := range ssStates() {
		if v == u || k == u || k == strings.ReplaceAll(u, "-", "_") {
			return true
		}
	}
	return false
}

// ssEndpoint renders an endpoint as ss -n does: addr:port with * for
// port 0, [addr]:port for IPv6, a unix path or * for none.
func ssEndpoint(v any, unix bool) string {
	m, ok := v.(map[string]any)
	if !ok {
		if unix {
			return "*"
		}
		return "-"
	}
	if unix {
		if p, ok := exactText(m, "path"); ok && p != "" {
			return textCell(p)
		}
		return "*" // unnamed
	}
	addr := str(m["address"])
	if strings.Contains(addr, ":") {
		addr = "[" + addr + "]"
	}
	port := str(m["port"])
	if p, ok := m["port"].(float64); ok && p == 0 {
		port = "*"
	}
	return addr + ":" + port
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
