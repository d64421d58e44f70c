package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/bin"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/perf"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { registerNamed("bin", newBinCmd) }

// binFlags are the flags every bin subcommand shares.
type binFlags struct {
	asJSON   bool
	preserve bool
	cursor   string
	limit    int
	// noLimit leaves --limit out of a paged command whose page size has
	// its own flag (disasm's --max).
	noLimit bool
	// unlocatedFails makes a text page with no rows whose code could
	// not be located (coverage.upstream: a truncated file's section
	// table) fail with bin.UnknownCodeError, exit 1, as objdump does;
	// --json prints the tool's partial envelope as MCP returns it.
	unlocatedFails bool
	// arch selects a universal Mach-O file's slice (--arch); noArch
	// leaves the flag out of a command whose tool has no arch argument.
	arch   string
	noArch bool
	// item is the index of the current FILE of a batch command; its
	// errors then carry details.index and details.path.
	item *int
	path string
	// prechecked says the command vouched for its arguments against the
	// tool's input schema (vouchInspectArgs): the call skips compiling
	// and running the schema, the larger part of a short command's work.
	prechecked bool
	// cmd is the command the flags belong to (set by add): its failures
	// name its flags and arguments.
	cmd *cobra.Command
}

// failure reports err at once (reportFailure, as --json says), so a batch
// goes on with its next FILE; in a batch it names the item's index and
// path in details.
func (f *binFlags) failure(env *Env, err error) error {
	if f.item != nil {
		ce := *contract.AsError(err)
		details := map[string]any{}
		for k, v := range ce.Details {
			details[k] = v
		}
		details["index"], details["path"] = *f.item, f.path
		ce.Details = details
		err = &ce
	}
	return reportFailure(env, f.cmd, f.asJSON, err)
}

func (f *binFlags) add(cmd *cobra.Command, paged bool) {
	f.cmd = cmd
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the tool's envelope as JSON")
	cmd.Flags().BoolVar(&f.preserve, "preserve", false, "then publish the file and every row of the result to the evidence store (preserve_evidence)")
	if !f.noArch {
		cmd.Flags().StringVar(&f.arch, "arch", "", "slice of a universal Mach-O file: x86_64, arm64, i386, arm, ppc, ppc64 (default: the host's)")
	}
	if paged {
		cmd.Flags().StringVar(&f.cursor, "cursor", "", "continue from data.next_cursor of the previous page (repeat every other flag unchanged)")
		if !f.noLimit {
			cmd.Flags().IntVar(&f.limit, "limit", 0, "rows per page (1-1000, default 200)")
		}
	}
}

// apply copies the flags the caller set into args. A flag given on the
// command line is passed even when it is zero or empty, so the tool's
// schema rejects it (--limit 0 is INVALID_ARGUMENT, not the default).
func (f *binFlags) apply(cmd *cobra.Command, args map[string]any, paged bool) {
	if !f.noArch && cmd.Flags().Changed("arch") {
		args["arch"] = f.arch
	}
	if paged && cmd.Flags().Changed("cursor") {
		args["cursor"] = f.cursor
	}
	if paged && !f.noLimit && cmd.Flags().Changed("limit") {
		args["limit"] = f.limit
	}
}

// setFlag sets args[k] to v when the flag named flag was given on the
// command line (even as zero or empty, so the schema judges it).
func setFlag(cmd *cobra.Command, args map[string]any, flag, k string, v any) {
	if cmd.Flags().Changed(flag) {
		args[k] = v
	}
}

// utf8Paths refuses a path argument (path, paths) whose bytes are not
// UTF-8: tool arguments are JSON strings, which would carry such a name
// with its bytes replaced, naming another (usually absent) file. The
// error names the argument and says how to reach the file.
func utf8Paths(args map[string]any) error {
	var paths []string
	if p, ok := args["path"].(string); ok {
		paths = append(paths, p)
	}
	if ps, ok := args["paths"].([]string); ok {
		paths = append(paths, ps...)
	}
	for _, p := range paths {
		if !utf8.ValidString(p) {
			return fmt.Errorf("FILE %q: the name is not valid UTF-8, which the bin tools cannot take; make a symbolic link with a UTF-8 name to it (ln -s) and give that", p)
		}
	}
	return nil
}

// runTool calls name through the registry (same validation and envelope
// as MCP) and either prints the envelope (--json) or renders data with
// render. A next page is announced on stderr. With --preserve the evidence
// store is opened before the tool runs (an unusable store fails at once),
// and after it preserve_evidence publishes the result by its analysis_id;
// when that write fails the result is still printed, with the failure as
// a warning. A call cancelled by SIGINT prints the partial result it
// returned and exits 130.
func runTool(cmd *cobra.Command, env *Env, f *binFlags, name string, args map[string]any, render func(w io.Writer, data json.RawMessage) error) error {
	if err := utf8Paths(args); err != nil {
		return err
	}
	raw, _ := json.Marshal(args)
	ctx := cmd.Context()
	// Only the bin toolset (and, to preserve, the evidence tools): the
	// same tool definitions and Registry.Call validation as MCP, without
	// compiling the other toolsets' schemas.
	rt := &Runtime{Registry: tool.NewRegistry()}
	defer rt.Close()
	if err := buildBin(ctx, rt, runtimeOptions{Stderr: env.Stderr, NoHost: true, BinTools: []string{name}}); err != nil {
		return err
	}
	if f.preserve {
		if err := rt.Registry.Add(perf.Tools(rt.perfRuntime())...); err != nil {
			return err
		}
		if _, err := rt.perfRuntime().Store(); err != nil {
			// The store's own code (PERMISSION_DENIED for a directory
			// of another user, REPOSITORY_CORRUPT, RESOURCE_LIMIT...),
			// as every evidence tool reports it, with what it means here.
			// An untyped failure (the directory cannot be created) is a
			// configuration failure of the option: PROVIDER_UNAVAILABLE.
			se := *contract.AsError(err)
			if se.Code == contract.CodeInternalError {
				return f.failure(env, contract.Errorf(contract.CodeProviderUnavailable, "the evidence store cannot be opened, so --preserve cannot be honoured; nothing was analysed. Fix the store (INQUEST_DATA_DIR) or repeat without --preserve").WithDetail("cause_code", string(se.Code)).WithDetail("cause", se.Message))
			}
			se.Message = "the evidence store cannot be opened, so --preserve cannot be honoured; nothing was analysed: " + se.Message + "; or repeat without --preserve"
			return f.failure(env, &se)
		}
	}
	call := rt.Registry.Call
	if f.prechecked {
		call = rt.Registry.CallPrechecked
	}
	res, err := call(ctx, name, raw)
	if err != nil {
		return f.failure(env, err)
	}
	// The data as JSON for the table renderer (encoded once, exactly as
	// the envelope carries it), and as an object for --preserve, which
	// adds the evidence it published; --json alone prints the envelope
	// as it is.
	var body []byte
	var data map[string]any
	if !f.asJSON || f.preserve {
		body, _ = json.Marshal(res.Data)
	}
	if f.preserve {
		_ = json.Unmarshal(body, &data)
	}
	if f.preserve {
		id, _ := data["analysis_id"].(string)
		praw, _ := json.Marshal(map[string]any{"analysis_id": id})
		pres, perr := rt.Registry.Call(context.WithoutCancel(ctx), "preserve_evidence", praw)
		if perr != nil {
			ce := contract.AsError(perr)
			// The analysis is as complete as it was: only the record
			// is missing, so the status stays.
			res.Warnings = append(res.Warnings, fmt.Sprintf("the result was not preserved (%s: %s); the result is printed in full", ce.Code, ce.Message))
		} else {
			pd, _ := pres.Data.(map[string]any)
			data["evidence"] = map[string]any{"evidence_id": pd["evidence_id"], "manifest": pd["manifest"]}
		}
		res.Data = data
	}
	cancelled := ctx.Err() != nil
	if f.asJSON {
		body, _ := contract.Marshal(res, nil)
		if err := printBody(env.Stdout, body); err != nil {
			return err
		}
	} else {
		for _, w := range res.Warnings {
			fmt.Fprintln(env.Stderr, "warning:", w)
		}
		if f.preserve {
			body, _ = json.Marshal(data)
		}
		// One write per 64 KiB, not one per table cell: a page of
		// rows is printed in a few system calls.
		bw := bufio.NewWriterSize(env.Stdout, 64<<10)
		err := render(bw, body)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
		var page struct {
			Next       string `json:"next_cursor"`
			Rows       []json.RawMessage
			Unresolved []bin.Unresolved
		}
		_ = json.Unmarshal(body, &page)
		if f.unlocatedFails && len(page.Rows) == 0 {
			var cov struct{ Upstream map[string]string }
			cb, _ := json.Marshal(res.Coverage)
			_ = json.Unmarshal(cb, &cov)
			if ue := bin.UnknownCodeError(cov.Upstream, page.Unresolved); ue != nil {
				return f.failure(env, ue)
			}
		}
		if page.Next != "" {
			fmt.Fprintf(env.Stderr, "more rows: repeat with --cursor %s\n", page.Next)
		}
		if ev, ok := data["evidence"].(map[string]any); ok {
			fmt.Fprintf(env.Stderr, "preserved: %s\n", ev["evidence_id"])
		}
	}
	if cancelled {
		return exitCode(130)
	}
	return nil
}

func newBinCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bin",
		Short: "Binary evidence: inspect, symbols, strings, disasm, diff (the bin tools)",
		Long: `Binary evidence over ELF, PE and Mach-O files through the same tools an MCP
client calls (inspect_binary, list_symbols, search_strings, disassemble,
compare_binaries): same arguments, bounds and errors. --json prints the
envelope; otherwise a table. Paged commands print the next cursor on stderr.`,
	}
	cmd.AddCommand(newBinInspectCmd(env), newBinSymbolsCmd(env), newBinStringsCmd(env), newBinDisasmCmd(env), newBinDiffCmd(env))
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return failed(binFlagError(err)) })
	return cmd
}

// binFlagFields are the tool arguments of the bin flags whose name differs
// from the argument's.
var binFlagFields = map[string]string{"max": "max_instructions", "min-length": "min_length", "encoding": "encodings", "verdict": "verdicts", "kind": "kinds"}

// binFlagError is the INVALID_ARGUMENT error for a flag value the flag
// parser rejects (--limit 2.5), as the tool's schema would reject the
// argument over MCP: field is the argument's path; the value is not
// echoed. An unknown flag or one without its value is INVALID_ARGUMENT
// too.
func binFlagError(err error) error {
	var inv *pflag.InvalidValueError
	var req *pflag.ValueRequiredError
	var nx *pflag.NotExistError
	switch {
	case errors.As(err, &inv):
		name := inv.GetFlag().Name
		field, ok := binFlagFields[name]
		if !ok {
			field = strings.ReplaceAll(name, "-", "_")
		}
		typ := map[string]string{"int": "integer", "bool": "boolean", "stringSlice": "array"}[inv.GetFlag().Value.Type()]
		if typ == "" {
			typ = inv.GetFlag().Value.Type()
		}
		e := contract.Errorf(contract.CodeInvalidArgument, "--%s takes an %s; the value given does not parse as one (the tool's %s argument)", name, typ, field)
		e.Field = "/" + field
		e.Expected = map[string]any{"type": typ}
		return e
	case errors.As(err, &req):
		return contract.Errorf(contract.CodeInvalidArgument, "a flag needs a value: %s", req.Error())
	case errors.As(err, &nx):
		return contract.Errorf(contract.CodeInvalidArgument, "%s; `inquest bin COMMAND --help` lists the flags", nx.Error())
	}
	return contract.Errorf(contract.CodeInvalidArgument, "%s", err.Error())
}

func newBinInspectCmd(env *Env) *cobra.Command {
	var f binFlags
	var digests bool
	var facets []string
	cmd := &cobra.Command{
		Use:   "inspect FILE...",
		Short: "inspect_binary: header, dynamic facts, build id, hardening, and the sections (or other --facet lists)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			// Every FILE is inspected; a failed one prints its error
			// envelope (details.index, details.path) and the batch goes
			// on; the exit status is 1 when any failed (130 when
			// cancelled, which stops the batch).
			var status error
			for i, p := range files {
				args := map[string]any{"path": p}
				f.apply(cmd, args, true)
				if digests {
					args["digests"] = true
				}
				if len(facets) > 0 {
					args["facets"] = facets
				}
				if !cmd.Flags().Changed("facet") {
					// A universal file's default listing is its
					// slices (nothing for other files).
					args["facets"] = []string{"sections", "members"}
				}
				if len(files) > 1 {
					f.item, f.path = &i, p
					if !f.asJSON {
						fmt.Fprintf(env.Stdout, "== [%d] %s\n", i, p)
					}
				}
				f.prechecked = vouchInspectArgs(args)
				err := runTool(cmd, env, &f, "inspect_binary", args, renderInspection)
				if code, ok := err.(exitCode); ok && code == 130 || cmd.Context().Err() != nil {
					return exitCode(130)
				}
				if err != nil && status == nil {
					status = err
				}
			}
			return status
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVar(&digests, "digests", false, "also compute the file's sha256 and each section's sha256 and entropy (reads the whole file)")
	cmd.Flags().StringSliceVar(&facets, "facet", []string{"sections"}, "lists to print: sections, segments, imports, exports, libraries, members, go_deps, dwarf_producers")
	return cmd
}

func renderInspection(w io.Writer, raw json.RawMessage) error {
	var d struct {
		File struct {
			Path   string `json:"caller_input_path"`
			Size   string `json:"size"`
			SHA256 string `json:"sha256"`
		} `json:"file"`
		In struct {
			Header struct {
				Format, Class, Endianness, Entry string
				Machine, Type                    *struct{ Raw, Name string }
				OSABI                            *struct{ Raw, Name string } `json:"os_abi"`
			} `json:"header"`
			Dynamic *struct {
				Needed, RPath, RunPath []string
				SOName, Interpreter    string
			} `json:"dynamic"`
			BuildID *binBuildID `json:"build_id"`
			GoBuild *struct {
				GoVersion string `json:"go_version"`
				Path      string
			} `json:"go_build_info"`
			Debug *struct {
				Present       bool
				Units         *int
				Languages     []string
				SkeletonUnits int      `json:"skeleton_units"`
				DWONames      []string `json:"dwo_names"`
			} `json:"debug_info"`
			Facets    map[string]struct{ State, Reason string }
			Hardening []struct {
				Name, Verdict string
				Basis         []string
			} `json:"hardening"`
			Unresolved []struct{ Structure, Offset, Reason string } `json:"unresolved"`
		} `json:"inspection"`
		Counts   map[string]*int `json:"counts"` // null: the facet is unresolved
		Rows     []json.RawMessage
		MappedBy *struct {
			State     string
			Count     int
			Complete  bool
			Processes []struct {
				PID  int
				Name *string
			}
		} `json:"mapped_by"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return err
	}
	h := d.In.Header
	name := func(f *struct{ Raw, Name string }) string {
		if f == nil {
			return "unknown"
		}
		if f.Name != "" {
			return f.Name
		}
		return f.Raw
	}
	sum := d.File.SHA256
	if sum == "" {
		sum = "not requested (--digests)"
	}
	fmt.Fprintf(w, "%s  %s bytes  sha256 %s\n", cell(d.File.Path), d.File.Size, sum)
	if h.Format == "macho_fat" {
		return renderFat(w, d.Counts["members"], d.Rows)
	}
	osabi := "  os/abi " + cell(name(h.OSABI))
	if h.OSABI == nil && h.Format != "elf" {
		osabi = "" // only ELF has one (PE's is its subsystem)
	}
	fmt.Fprintf(w, "format %s %s %s-endian  machine %s  type %s%s  entry %s\n", h.Format, orUnknown(h.Class), orUnknown(h.Endianness), cell(name(h.Machine)), cell(name(h.Type)), osabi, orUnknown(h.Entry))
	if dy := d.In.Dynamic; dy != nil {
		// A null list (the dynamic section was not read) is unknown,
		// not empty.
		list := func(v []string) string {
			if v == nil {
				return "unknown"
			}
			return cellList(v)
		}
		// An absent string is none when the structure that would hold
		// it was read (PT_INTERP among the program headers, DT_SONAME
		// in the dynamic section), else unknown.
		str := func(v string, read bool) string {
			switch {
			case v != "":
				return strconv.Quote(v)
			case read:
				return "none"
			}
			return "unknown"
		}
		if h.Format == "pe" {
			fmt.Fprintf(w, "needed %s\n", list(dy.Needed))
		} else {
			fmt.Fprintf(w, "interpreter %s  needed %s  rpath %s  runpath %s  soname %s\n", str(dy.Interpreter, d.In.Facets["segments"].State == "complete" || h.Format != "elf"), list(dy.Needed), list(dy.RPath), list(dy.RunPath), str(dy.SOName, dy.Needed != nil))
		}
	}
	count := func(k string) string {
		if d.In.Facets[k].State == "not_applicable" {
			return "n/a"
		}
		if n := d.Counts[k]; n != nil {
			return strconv.Itoa(*n)
		}
		return "unknown"
	}
	fmt.Fprintf(w, "sections %s  segments %s  imports %s  exports %s\n", count("sections"), count("segments"), count("imports"), count("exports"))
	if line := buildIDLine(d.In.BuildID, d.In.Facets["build_id"]); line != "" {
		fmt.Fprintln(w, line)
	}
	if g := d.In.GoBuild; g != nil {
		fmt.Fprintf(w, "go %s  path %s\n", cell(g.GoVersion), cell(g.Path))
	}
	if line := dwarfLine(d.In.Debug, d.In.Facets["debug_info"]); line != "" {
		fmt.Fprintln(w, line)
	}
	if m := d.MappedBy; m != nil && m.State == "known" {
		var who []string
		for _, p := range m.Processes {
			n := "?"
			if p.Name != nil {
				n = *p.Name
			}
			who = append(who, fmt.Sprintf("%s[%d]", cell(n), p.PID))
		}
		at := ""
		if !m.Complete {
			at = "at least "
		}
		fmt.Fprintf(w, "mapped by %s%d live process(es) %s\n", at, m.Count, strings.Join(who, " "))
	}
	// The verdicts first, as checksec prints them: they answer the
	// question most often asked of a binary before its section rows.
	if len(d.In.Hardening) > 0 {
		htw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(htw, "HARDENING\tVERDICT\tBASIS")
		for _, c := range d.In.Hardening {
			fmt.Fprintf(htw, "%s\t%s\t%s\n", cell(c.Name), hardeningVerdict(c.Name, c.Verdict), cell(strings.Join(c.Basis, "; ")))
		}
		htw.Flush()
	}
	var tw *tabwriter.Writer
	facet := ""
	for _, r := range d.Rows {
		var row struct {
			Facet                                  string
			Name, Address, Size, Flags, SHA256     string
			Type, Offset, VirtualAddress, FileSize string
			MemorySize                             string `json:"memory_size"`
			Library, Version                       string
			Entropy                                *float64
		}
		_ = json.Unmarshal(r, &row)
		if row.Facet != facet {
			if tw != nil {
				tw.Flush()
			}
			facet = row.Facet
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			switch facet {
			case "sections":
				fmt.Fprintln(tw, "SECTION\tADDRESS\tSIZE\tFLAGS\tENTROPY\tSHA256")
			default:
				fmt.Fprintln(tw, strings.ToUpper(facet))
			}
		}
		switch facet {
		case "sections":
			e := ""
			if row.Entropy != nil {
				e = fmt.Sprintf("%.3f", *row.Entropy)
			}
			sum := row.SHA256
			if len(sum) > 16 {
				sum = sum[:16]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(row.Name), row.Address, row.Size, cell(row.Flags), e, sum)
		default:
			var m map[string]any
			_ = json.Unmarshal(r, &m)
			delete(m, "facet")
			b, _ := json.Marshal(m)
			fmt.Fprintf(tw, "%s\n", cell(string(b)))
		}
	}
	if tw != nil {
		tw.Flush()
	}
	for _, u := range d.In.Unresolved {
		fmt.Fprintf(w, "unresolved: %s at offset %s: %s\n", cell(u.Structure), u.Offset, cell(u.Reason))
	}
	return nil
}

// dwarfLine prints the DWARF summary: "dwarf none", "dwarf 373 units
// (C11, Go)" (with ", 1 split-DWARF skeletons (dwo [a.dwo])" when some
// units are skeletons, and "(languages unknown: in the .dwo files, not
// read)" when those skeletons leave them to the .dwo), "dwarf present (units not read: --facet dwarf_producers)"
// when the units were not requested, "dwarf unknown (reason)" when they
// could not be read; "" when there is no summary (not inspected).
func dwarfLine(d *struct {
	Present       bool
	Units         *int
	Languages     []string
	SkeletonUnits int      `json:"skeleton_units"`
	DWONames      []string `json:"dwo_names"`
}, facet struct{ State, Reason string }) string {
	switch {
	case d == nil:
		return ""
	case !d.Present && d.Units != nil:
		return "dwarf none"
	case facet.State == "not_requested":
		return "dwarf present (units not read: --facet dwarf_producers reads them)"
	case d.Units != nil:
		langs := ""
		if len(d.Languages) > 0 {
			langs = " (" + cell(strings.Join(d.Languages, ", ")) + ")"
		} else if d.Languages == nil {
			// Split DWARF: the languages are in the unread .dwo files.
			langs = " (languages unknown: in the .dwo files, not read)"
		}
		skel := ""
		if d.SkeletonUnits > 0 {
			skel = fmt.Sprintf(", %d split-DWARF skeletons", d.SkeletonUnits)
			if len(d.DWONames) > 0 {
				skel += " (dwo " + cellList(d.DWONames) + ")"
			}
		}
		return fmt.Sprintf("dwarf %d units%s%s", *d.Units, langs, skel)
	}
	return "dwarf present, units unknown (" + cell(orUnknown(facet.Reason)) + ")"
}

// hardeningVerdict is a verdict cell: RELRO as checksec and readelf
// users name it (Full RELRO, Partial RELRO, No RELRO) when the verdict is
// full, partial or no; every other verdict as inspect_binary gives it.
func hardeningVerdict(name, verdict string) string {
	if name == "relro" {
		switch verdict {
		case "full":
			return "Full RELRO"
		case "partial":
			return "Partial RELRO"
		case "no", "none":
			return "No RELRO"
		}
	}
	return cell(verdict)
}

// binBuildID is inspect_binary's build_id object.
type binBuildID struct {
	GNU  string `json:"gnu_build_id"`
	Go   string `json:"go_build_id"`
	UUID string `json:"uuid"`
	PDB  *struct{ Path, GUID, Age string }
}

// buildIDLine prints the build ids present ("build id gnu=… go=…"), "build
// id none" when the build_id facet was read completely and holds none,
// "build id unknown (…)" when it was not, and "" when it does not apply.
func buildIDLine(b *binBuildID, facet struct{ State, Reason string }) string {
	var ids []string
	if b != nil {
		for _, kv := range [][2]string{{"gnu", b.GNU}, {"go", b.Go}, {"uuid", b.UUID}} {
			if kv[1] != "" {
				ids = append(ids, kv[0]+"="+cell(kv[1]))
			}
		}
		if b.PDB != nil {
			ids = append(ids, fmt.Sprintf("pdb=%s guid=%s age=%s", cell(b.PDB.Path), cell(b.PDB.GUID), cell(b.PDB.Age)))
		}
	}
	why := facet.State
	if facet.Reason != "" {
		why += ": " + facet.Reason
	}
	switch {
	case facet.State == "not_applicable":
		return ""
	case len(ids) > 0 && facet.State == "complete":
		return "build id " + strings.Join(ids, " ")
	case len(ids) > 0:
		return "build id " + strings.Join(ids, " ") + " (others unknown: " + cell(why) + ")"
	case facet.State == "complete":
		return "build id none"
	}
	return "build id unknown (" + cell(orUnknown(why)) + ")"
}

// renderFat prints a universal Mach-O file: how many slices, how to
// select one, and a summary of each slice the members rows carry.
func renderFat(w io.Writer, n *int, rows []json.RawMessage) error {
	count := "an unknown number of"
	if n != nil {
		count = strconv.Itoa(*n)
	}
	var archs []string
	type slice struct {
		Facet, Arch, Offset, Size string
		CPU                       struct{ Name, Raw string }
		In                        *struct {
			Header struct {
				Entry string
				Type  *struct{ Name, Raw string }
			}
			Sections, Segments, Imports, Exports []json.RawMessage
			BuildID                              *binBuildID `json:"build_id"`
			Facets                               map[string]struct{ State, Reason string }
			Hardening                            []struct{ Name, Verdict string }
		} `json:"inspection"`
	}
	var slices []slice
	for _, r := range rows {
		var m slice
		if json.Unmarshal(r, &m) != nil || m.Facet != "members" {
			continue
		}
		slices = append(slices, m)
		if m.Arch != "" {
			archs = append(archs, m.Arch)
		}
	}
	fmt.Fprintf(w, "format macho_fat: a universal file of %s slices; inspect one with --arch NAME", count)
	if len(archs) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(archs, ", "))
	}
	fmt.Fprintln(w)
	if len(slices) == 0 {
		fmt.Fprintln(w, "each slice's summary: --facet members")
	}
	for _, m := range slices {
		fmt.Fprintf(w, "slice %s  cpu %s  offset %s  size %s", cell(orUnknown(m.Arch)), cell(orUnknown(m.CPU.Name)), m.Offset, m.Size)
		if m.In == nil {
			fmt.Fprintln(w, "  (not inspected: the slice's bytes were not read)")
			continue
		}
		num := func(facet string, v []json.RawMessage) string {
			// A partial list (ELF/Mach-O sections whose contents
			// lie past the end) still has every entry.
			if st := m.In.Facets[facet].State; st == "" || st == "unresolved" {
				return "unknown"
			}
			return strconv.Itoa(len(v))
		}
		typ := "unknown"
		if t := m.In.Header.Type; t != nil {
			typ = cell(t.Name)
		}
		fmt.Fprintf(w, "  type %s  entry %s  sections %s  segments %s  imports %s  exports %s\n", typ, orUnknown(m.In.Header.Entry), num("sections", m.In.Sections), num("segments", m.In.Segments), num("imports", m.In.Imports), num("exports", m.In.Exports))
		if line := buildIDLine(m.In.BuildID, m.In.Facets["build_id"]); line != "" {
			fmt.Fprintln(w, "  "+line)
		}
		var hs []string
		for _, c := range m.In.Hardening {
			hs = append(hs, cell(c.Name)+" "+cell(c.Verdict))
		}
		if len(hs) > 0 {
			fmt.Fprintln(w, "  hardening "+strings.Join(hs, ", "))
		}
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// binSlice is data.slice: the universal Mach-O file's slice a result
// comes from.
type binSlice struct{ Arch, Offset, Size string }

// printSlice names the slice of a universal file the rows come from (the
// host's unless --arch chose one); nothing for any other file.
func printSlice(w io.Writer, s *binSlice) {
	if s != nil {
		fmt.Fprintf(w, "slice %s (offset %s, %s bytes of the universal file; --arch selects another)\n", s.Arch, s.Offset, s.Size)
	}
}

func newBinSymbolsCmd(env *Env) *cobra.Command {
	var f binFlags
	var table, defined, contains, regex string
	cmd := &cobra.Command{
		Use:   "symbols FILE",
		Short: "list_symbols: static and dynamic symbols, filtered and paged",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			args := map[string]any{"path": a[0]}
			setFlag(cmd, args, "table", "table", table)
			setFlag(cmd, args, "defined", "defined", defined)
			setFlag(cmd, args, "name", "name_contains", contains)
			setFlag(cmd, args, "regex", "name_regex", regex)
			f.apply(cmd, args, true)
			return runTool(cmd, env, &f, "list_symbols", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					Slice *binSlice
					Rows  []struct {
						Name, Table, Address, Size, Type, Binding, Section, Library, Version string
						DefaultVersion                                                       *bool `json:"default_version"`
						// Unknown names the fields (name, version) that
						// could not be read; they print as "unknown".
						Unknown map[string]string
					}
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				printSlice(w, d.Slice)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ADDRESS\tSIZE\tTYPE\tBIND\tSECTION\tTABLE\tNAME")
				for _, r := range d.Rows {
					n := cell(r.Name)
					if _, ok := r.Unknown["name"]; ok {
						n = "unknown"
					}
					if _, ok := r.Unknown["version"]; ok {
						n += "@unknown"
					} else if r.Version != "" {
						// readelf's name@@version (default) and name@version.
						at := "@"
						if r.DefaultVersion != nil && *r.DefaultVersion {
							at = "@@"
						}
						n += at + cell(r.Version)
					}
					if r.Library != "" {
						n += " (" + cell(r.Library) + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Address, r.Size, cell(r.Type), cell(r.Binding), cell(r.Section), r.Table, n)
				}
				return tw.Flush()
			})
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringVar(&table, "table", "", "all, static or dynamic")
	cmd.Flags().StringVar(&defined, "defined", "", "all, defined or undefined")
	cmd.Flags().StringVar(&contains, "name", "", "name substring")
	cmd.Flags().StringVar(&regex, "regex", "", "RE2 name regex")
	return cmd
}

func newBinStringsCmd(env *Env) *cobra.Command {
	f := binFlags{noArch: true}
	var encodings []string
	var minLen int
	var section, regex, rng string
	cmd := &cobra.Command{
		Use:   "strings FILE",
		Short: "search_strings: ASCII and UTF-16LE strings with offsets",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			args := map[string]any{"path": a[0]}
			setFlag(cmd, args, "encoding", "encodings", encodings)
			setFlag(cmd, args, "min-length", "min_length", minLen)
			setFlag(cmd, args, "section", "section", section)
			setFlag(cmd, args, "regex", "regex", regex)
			if cmd.Flags().Changed("range") {
				// FROM:TO; the tool's schema rejects anything else.
				from, to, _ := strings.Cut(rng, ":")
				args["range"] = map[string]any{"from": from, "to": to}
			}
			f.apply(cmd, args, true)
			return runTool(cmd, env, &f, "search_strings", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					Rows []struct{ Offset, Address, Section, Encoding, Text string }
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "OFFSET\tADDRESS\tSECTION\tENC\tTEXT")
				for _, r := range d.Rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Offset, r.Address, cell(r.Section), r.Encoding, cell(r.Text))
				}
				return tw.Flush()
			})
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringSliceVar(&encodings, "encoding", nil, "ascii and/or utf16le (default both)")
	cmd.Flags().IntVar(&minLen, "min-length", 0, "minimum length in characters (2-1024, default 4)")
	cmd.Flags().StringVar(&section, "section", "", "search only this section")
	cmd.Flags().StringVar(&regex, "regex", "", "RE2 filter on the text")
	cmd.Flags().StringVar(&rng, "range", "", "FROM:TO: only strings starting at file offsets [FROM, TO) (decimal), as a cancelled search's coverage.scanned gives")
	return cmd
}

func newBinDisasmCmd(env *Env) *cobra.Command {
	var f binFlags
	var symbol, section, start, end, syntax string
	var max int
	var all bool
	cmd := &cobra.Command{
		Use:   "disasm FILE (--symbol NAME | --section NAME | --start 0xADDR [--end 0xADDR] | --all)",
		Short: "disassemble: x86-64/arm64 by symbol or address range",
		Long:  "Disassemble by symbol, by section or by address range: --symbol, --section or --start is required (--end needs --start; --symbol stands alone), except with --all, which without them lists every section that holds code, in file order, as objdump -d does.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			args := map[string]any{"path": a[0]}
			setFlag(cmd, args, "symbol", "symbol", symbol)
			setFlag(cmd, args, "section", "section", section)
			setFlag(cmd, args, "start", "start", start)
			setFlag(cmd, args, "end", "end", end)
			setFlag(cmd, args, "syntax", "syntax", syntax)
			setFlag(cmd, args, "max", "max_instructions", max)
			f.apply(cmd, args, true)
			if all {
				return runDisasmAll(cmd, env, &f, args)
			}
			return runTool(cmd, env, &f, "disassemble", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					Slice *binSlice
					Rows  []disasmRow
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				printSlice(w, d.Slice)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, r := range d.Rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Address, r.Bytes, cell(rowText(r.Text, r.Error, r.Target, r.TargetSymbol)))
					for _, rl := range r.Relocations {
						fmt.Fprintf(tw, "\t\t  %s: %s\t%s\n", rl.Address, cell(rl.Type), cell(rl.Target))
					}
				}
				return tw.Flush()
			})
		},
	}
	f.noLimit = true
	f.unlocatedFails = true
	f.add(cmd, true)
	cmd.Flags().StringVar(&symbol, "symbol", "", "symbol name")
	cmd.Flags().StringVar(&section, "section", "", "section to disassemble (relocatable objects: addresses relative to it, .text by default)")
	cmd.Flags().StringVar(&start, "start", "", "start address (0x...)")
	cmd.Flags().StringVar(&end, "end", "", "end address (0x..., exclusive)")
	cmd.Flags().StringVar(&syntax, "syntax", "", "gnu, intel or go")
	cmd.Flags().IntVar(&max, "max", 0, "instructions per page (1-5000, default 200)")
	cmd.Flags().BoolVar(&all, "all", false, "print every page to the end, streamed, one line per instruction as objdump -d does (without --symbol, --section or --start: every code section; --max: rows per call, default 5000)")
	return cmd
}

func newBinDiffCmd(env *Env) *cobra.Command {
	var f binFlags
	var kinds, verdicts []string
	var contains string
	cmd := &cobra.Command{
		Use:   "diff LEFT RIGHT",
		Short: "compare_binaries: sections, symbols and imports with their proofs",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			args := map[string]any{"left": a[0], "right": a[1]}
			setFlag(cmd, args, "kind", "kinds", kinds)
			setFlag(cmd, args, "verdict", "verdicts", verdicts)
			setFlag(cmd, args, "name", "name_contains", contains)
			f.apply(cmd, args, true)
			return runTool(cmd, env, &f, "compare_binaries", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					LeftSlice  *binSlice      `json:"left_slice"`
					RightSlice *binSlice      `json:"right_slice"`
					Summary    map[string]any `json:"summary"`
					Rows       []struct {
						Kind, Name, Verdict string
						Proof               struct{ Correspondence, Content string }
					}
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				if d.LeftSlice != nil {
					fmt.Fprint(w, "left ")
					printSlice(w, d.LeftSlice)
				}
				if d.RightSlice != nil {
					fmt.Fprint(w, "right ")
					printSlice(w, d.RightSlice)
				}
				s, _ := json.Marshal(d.Summary["by_kind"])
				fmt.Fprintf(w, "summary %s\n", s)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KIND\tVERDICT\tNAME\tCONTENT PROOF")
				for _, r := range d.Rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Kind, r.Verdict, cell(r.Name), cell(r.Proof.Content))
				}
				return tw.Flush()
			})
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringSliceVar(&kinds, "kind", nil, "section, symbol and/or import")
	cmd.Flags().StringSliceVar(&verdicts, "verdict", nil, "equal, changed, added, removed and/or not_comparable")
	cmd.Flags().StringVar(&contains, "name", "", "name substring")
	return cmd
}

// cellList renders a list of user-controlled strings (library names,
// paths) as one table cell: each passed through cell, comma separated,
// in brackets.
func cellList(v []string) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = cell(x)
	}
	return "[" + strings.Join(out, ", ") + "]"
}
