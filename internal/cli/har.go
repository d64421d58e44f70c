package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/bin/har"
	"github.com/spf13/cobra"
)

func init() { register(newHARCmd) }

func newHARCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "har",
		Short: "HTTP capture evidence: show and diff HAR 1.2 files (inspect_http_capture, compare_http_captures)",
	}
	cmd.AddCommand(newHARShowCmd(env), newHARDiffCmd(env))
	return cmd
}

// harInventory is the JSON shape of a WebSocket frame inventory.
type harInventory struct {
	Frames       string                    `json:"frames"`
	Inventory    string                    `json:"inventory"`
	Counts       map[string]map[string]int `json:"counts"`
	FrameCount   *int                      `json:"frame_count"`
	PayloadBytes map[string]string         `json:"payload_bytes"`
	First        *float64                  `json:"first_time_s"`
	Last         *float64                  `json:"last_time_s"`
}

// directionCell renders an inventory's count for direction d as
// "25 (1×24, 2×1)", or "-" when frames are unavailable.
func (inv harInventory) directionCell(d string) string {
	if inv.FrameCount == nil {
		return "-"
	}
	n := 0
	for _, c := range inv.Counts[d] {
		n += c
	}
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", n, statusCounts(inv.Counts[d]))
}

func optTime(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newHARShowCmd(env *Env) *cobra.Command {
	f := binFlags{noArch: true} // HAR files have no architecture
	var complete bool
	var frames, group int
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "inspect_http_capture: request groups with statuses, sizes, timings, body digests; (--group N) a group's entries; WebSocket connections and (--frames ENTRY) their frames",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			args := map[string]any{"path": a[0]}
			if complete {
				args["completeness"] = "complete"
			}
			setFlag(cmd, args, "frames", "websocket_frames", frames)
			setFlag(cmd, args, "group", "group_entries", group)
			f.apply(cmd, args, true)
			if cmd.Flags().Changed("frames") && cmd.Flags().Changed("group") {
				return badFlag("--group", "give --frames or --group, not both")
			}
			if cmd.Flags().Changed("frames") {
				return runTool(cmd, env, &f, "inspect_http_capture", args, renderFrames)
			}
			if cmd.Flags().Changed("group") {
				return runTool(cmd, env, &f, "inspect_http_capture", args, renderGroupEntries)
			}
			return runTool(cmd, env, &f, "inspect_http_capture", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					Summary map[string]any `json:"summary"`
					Rows    []struct {
						Group       int `json:"group"`
						Method, URL string
						Resources   map[string]int `json:"resource_types"`
						Count       int            `json:"count"`
						Statuses    map[string]int `json:"statuses"`
						SizeTotal   string         `json:"size_total"`
						TimeTotal   *float64       `json:"time_total_ms"`
						TimeUnknown int            `json:"time_unknown"`
						Bodies      int            `json:"bodies_retained"`
					}
					Context struct {
						Conns []struct {
							Entry     int          `json:"entry"`
							Group     int          `json:"group"`
							WebSocket harInventory `json:"websocket"`
						} `json:"websocket_connections"`
					} `json:"context"`
					Page struct {
						Offset int `json:"offset"`
					} `json:"page"`
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				fmt.Fprintf(w, "entries %v  groups %v  websocket connections %v\n", d.Summary["entries"], d.Summary["groups"], d.Summary["websocket_connections"])
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tMETHOD\tURL\tTYPE\tCOUNT\tSTATUSES\tBYTES\tTIME_MS\tBODIES")
				for _, r := range d.Rows {
					t := "-"
					if r.TimeTotal != nil {
						t = fmt.Sprintf("%.1f", *r.TimeTotal)
					}
					if r.TimeUnknown > 0 {
						t += fmt.Sprintf(" (+%d unknown)", r.TimeUnknown)
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\n", r.Group, cell(r.Method), cell(r.URL), resourceTypes(r.Resources), r.Count, statusCounts(r.Statuses), orDash(r.SizeTotal), t, r.Bodies)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if len(d.Context.Conns) == 0 {
					return nil
				}
				fmt.Fprintln(w, "\nWebSocket connections (frames by opcode; show --frames ENTRY lists them)")
				tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ENTRY\tURL\tINVENTORY\tSENT\tRECEIVED\tSENT_BYTES\tRECEIVED_BYTES\tFIRST_S\tLAST_S")
				for _, c := range d.Context.Conns {
					inv := c.WebSocket
					// The connection's method and URL are its group row's.
					url := fmt.Sprintf("(group %d, on another page)", c.Group)
					if i := c.Group - d.Page.Offset; i >= 0 && i < len(d.Rows) {
						url = d.Rows[i].URL
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Entry, cell(url), inv.Inventory, inv.directionCell("send"), inv.directionCell("receive"), orDash(inv.PayloadBytes["send"]), orDash(inv.PayloadBytes["receive"]), optTime(inv.First), optTime(inv.Last))
				}
				return tw.Flush()
			})
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVar(&complete, "complete", false, "declare the capture complete (every request and WebSocket frame recorded)")
	cmd.Flags().IntVar(&frames, "frames", 0, "list the frames of the WebSocket connection at this entry index")
	cmd.Flags().IntVar(&group, "group", 0, "list the entries of the group at this position (the GROUP column)")
	return cmd
}

// renderGroupEntries prints a group_entries page: the group's method and
// URL once, then one line per entry in capture order.
func renderGroupEntries(w io.Writer, raw json.RawMessage) error {
	var d struct {
		Summary struct {
			Group struct {
				Method string `json:"method"`
				URL    string `json:"url"`
				Count  int    `json:"count"`
			} `json:"group"`
		} `json:"summary"`
		Rows []struct {
			Index    int      `json:"index"`
			Started  string   `json:"started"`
			Status   *int     `json:"status"`
			Type     string   `json:"resource_type"`
			Mime     string   `json:"mime_type"`
			Size     string   `json:"size"`
			Body     string   `json:"body"`
			SHA256   string   `json:"body_sha256"`
			TimeMS   *float64 `json:"time_ms"`
			BodySize string   `json:"body_bytes"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return err
	}
	g := d.Summary.Group
	fmt.Fprintf(w, "%s %s: %d entries\n", cell(g.Method), cell(g.URL), g.Count)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tSTARTED\tSTATUS\tTYPE\tMIME\tBYTES\tBODY\tTIME_MS")
	for _, r := range d.Rows {
		status := "unknown"
		if r.Status != nil {
			status = strconv.Itoa(*r.Status)
		}
		body := r.Body
		if r.SHA256 != "" {
			body += " " + r.SHA256[:12]
		}
		if r.BodySize != "" {
			body += " (" + r.BodySize + " bytes kept)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, orDash(cell(r.Started)), status, orDash(cell(r.Type)), orDash(cell(r.Mime)), orDash(r.Size), cell(body), optTime(r.TimeMS))
	}
	return tw.Flush()
}

func renderFrames(w io.Writer, raw json.RawMessage) error {
	var d struct {
		Summary struct {
			Connection struct {
				Entry     int          `json:"entry"`
				URL       string       `json:"url"`
				WebSocket harInventory `json:"websocket"`
			} `json:"connection"`
		} `json:"summary"`
		Rows []har.Frame `json:"rows"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return err
	}
	c := d.Summary.Connection
	fmt.Fprintf(w, "entry %d  %s  frames %s  inventory %s\n", c.Entry, cell(c.URL), c.WebSocket.Frames, c.WebSocket.Inventory)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tDIRECTION\tDIR_POS\tOPCODE\tTIME_S\tBYTES\tSHA256\tPREVIEW")
	for _, r := range d.Rows {
		op := "-"
		if r.Opcode != nil {
			op = strconv.Itoa(*r.Opcode)
		}
		sum := r.PayloadSHA256
		if sum == "" {
			sum = r.Payload
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.ConnectionPosition, r.Direction, r.Position, op, optTime(r.TimeS), orDash(r.PayloadSize), sum, previewCell(r.TextPreview, r.TextPreviewTruncated))
	}
	return tw.Flush()
}

// previewCell quotes a text preview (control characters escaped), "…"
// marking a cut one; "-" when there is none.
func previewCell(p *string, cut bool) string {
	if p == nil {
		return "-"
	}
	s := strconv.Quote(*p)
	if len(s) > 62 {
		s, cut = s[:60], true
	}
	if cut {
		s += "…"
	}
	return s
}

func newHARDiffCmd(env *Env) *cobra.Command {
	f := binFlags{noArch: true} // HAR files have no architecture
	var leftComplete, rightComplete bool
	var verdicts []string
	cmd := &cobra.Command{
		Use:   "diff LEFT RIGHT",
		Short: "compare_http_captures: group verdicts and the first differing WebSocket frame (captures are partial unless --left-complete/--right-complete)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			side := func(p string, complete bool) map[string]any {
				c := "partial"
				if complete {
					c = "complete"
				}
				return map[string]any{"path": p, "completeness": c}
			}
			args := map[string]any{"left": side(a[0], leftComplete), "right": side(a[1], rightComplete)}
			setFlag(cmd, args, "verdict", "verdicts", verdicts)
			f.apply(cmd, args, true)
			return runTool(cmd, env, &f, "compare_http_captures", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					Summary map[string]any `json:"summary"`
					Rows    []struct {
						Method, URL, Verdict, Content string
						Presence                      string `json:"presence"`
						L                             int    `json:"left_count"`
						R                             int    `json:"right_count"`
						WebSocket                     []struct {
							Position   int    `json:"position"`
							LeftEntry  *int   `json:"left_entry"`
							RightEntry *int   `json:"right_entry"`
							Verdict    string `json:"verdict"`
							Proof      string `json:"proof"`
							Content    string `json:"content"`
							First      *struct {
								Direction string          `json:"direction"`
								Position  int             `json:"position"`
								Kind      string          `json:"kind"`
								Proof     string          `json:"proof"`
								Left      *har.FrameFacts `json:"left"`
								Right     *har.FrameFacts `json:"right"`
							} `json:"first_difference"`
						} `json:"websocket"`
					}
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				s, _ := json.Marshal(d.Summary["by_verdict"])
				fmt.Fprintf(w, "summary %s\n", s)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "VERDICT\tMETHOD\tURL\tLEFT\tRIGHT\tWHY")
				for _, r := range d.Rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.Verdict, cell(r.Method), cell(r.URL), r.L, r.R, cell(r.Content))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				entry := func(p *int) string {
					if p == nil {
						return "-"
					}
					return strconv.Itoa(*p)
				}
				side := func(name string, x *har.FrameFacts) {
					if x == nil {
						return
					}
					op := "-"
					if x.Opcode != nil {
						op = strconv.Itoa(*x.Opcode)
					}
					fmt.Fprintf(w, "    %-5s position %d  opcode %s  bytes %s  sha256 %s  %s\n", name, x.ConnectionPosition, op, orDash(x.PayloadSize), orDash(x.PayloadSHA256), previewCell(x.TextPreview, x.TextPreviewTruncated))
				}
				for _, r := range d.Rows {
					for _, c := range r.WebSocket {
						fmt.Fprintf(w, "\nwebsocket %s #%d (entries %s/%s): %s (proof %s)\n  %s\n", cell(r.URL), c.Position, entry(c.LeftEntry), entry(c.RightEntry), c.Verdict, c.Proof, cell(c.Content))
						if fd := c.First; fd != nil {
							fmt.Fprintf(w, "  first differing frame: %s position %d (%s, %s)\n", fd.Direction, fd.Position, fd.Kind, fd.Proof)
							side("left", fd.Left)
							side("right", fd.Right)
						}
					}
				}
				return nil
			})
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVar(&leftComplete, "left-complete", false, "declare the left capture complete")
	cmd.Flags().BoolVar(&rightComplete, "right-complete", false, "declare the right capture complete")
	cmd.Flags().StringSliceVar(&verdicts, "verdict", nil, "equal, omissions_can_explain, independent_difference, undetermined, unavailable")
	return cmd
}

// statusCounts renders a status→count map as "200×3, 404×1", statuses in
// numeric order (non-numeric keys after, in string order).
// resourceTypes is a group's TYPE cell: its one resource type, or each
// type with its count ("document×1, fetch×2").
func resourceTypes(m map[string]int) string {
	if len(m) == 1 {
		for k := range m {
			return cell(k)
		}
	}
	if len(m) == 0 {
		return "-"
	}
	return statusCounts(m)
}

func statusCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, ea := strconv.Atoi(keys[i])
		b, eb := strconv.Atoi(keys[j])
		if ea == nil && eb == nil {
			return a < b
		}
		if (ea == nil) != (eb == nil) {
			return ea == nil
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", cell(k), m[k])
	}
	return strings.Join(parts, ", ")
}
