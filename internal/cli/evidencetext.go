package cli

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/spf13/cobra"
)

// printEvidence prints an `inquest evidence` result: with --json the
// envelope; otherwise render's text on standard output and the result's
// warnings on standard error, as the other text commands do.
func printEvidence(cmd *cobra.Command, env *Env, res *contract.Result, render func(w io.Writer, d map[string]any)) error {
	if jsonMode(cmd, nil) {
		return printEnvelope(env, res, nil)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(env.Stderr, "warning:", noteCell(w))
	}
	var d map[string]any
	if err := remarshal(res.Data, &d); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(env.Stdout, 64<<10)
	render(bw, d)
	return bw.Flush()
}

// localStamp prints an RFC 3339 instant as local "YYYY-MM-DD HH:MM:SS"
// (the form --from takes back); anything else unchanged, absent as "-".
func localStamp(v any) string {
	s, _ := v.(string)
	if s == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return cell(s)
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// strOr returns v as text for a table cell: strings escaped, numbers
// (float64 from JSON) as integers, absent or null as "-".
func strOr(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return cell(x)
	}
	return fmtVal(v)
}

// renderEvidenceQuery prints query_evidence rows as a table, newest first:
// EVIDENCE_ID CREATED TOOLSET OPERATION ARTIFACTS SIZE FORMATS STATUS. A
// record whose manifest cannot be read shows its problem as its status.
// The next page's command, when there is one, goes to stderr.
func renderEvidenceQuery(stderr io.Writer) func(io.Writer, map[string]any) {
	return func(w io.Writer, d map[string]any) {
		rows, _ := d["rows"].([]any)
		if len(rows) == 0 {
			fmt.Fprintln(stderr, "no evidence records match")
			return
		}
		cells := [][]string{{"EVIDENCE_ID", "CREATED", "TOOLSET", "OPERATION", "ARTIFACTS", "SIZE", "FORMATS", "STATUS"}}
		for _, r := range rows {
			m, _ := r.(map[string]any)
			size := "-"
			if s, ok := m["total_bytes"].(string); ok {
				size = humanBytes(s)
			}
			formats := "-"
			if fs, ok := m["formats"].([]any); ok && len(fs) > 0 {
				var names []string
				for _, f := range fs {
					names = append(names, strOr(f))
				}
				formats = strings.Join(names, ",")
			}
			status := strOr(m["status"])
			if p, ok := m["problem"].(string); ok && p != "" {
				status = "unreadable: " + noteCell(p)
			}
			cells = append(cells, []string{strOr(m["evidence_id"]), localStamp(m["created_at"]), strOr(m["toolset"]), strOr(m["operation"]), strOr(m["artifact_count"]), size, formats, status})
		}
		writeAligned(w, cells, []bool{true, true, true, true, false, false, true, true})
		if np, ok := d["next_page"].(map[string]any); ok {
			if argv, ok := np["argv"].([]any); ok {
				var a []string
				for _, s := range argv {
					a = append(a, fmt.Sprint(s))
				}
				fmt.Fprintf(stderr, "more records: %s\n", shellJoin(a))
			}
		}
	}
}

// renderEvidenceShow prints one record's manifest as labelled lines and
// tables: identity, producers, arguments, artifacts with their SHA-256 and
// object path, and the full local provenance (argv, cwd, host paths).
func renderEvidenceShow(w io.Writer, d map[string]any) {
	m, _ := d["manifest"].(map[string]any)
	paths, _ := d["object_paths"].(map[string]any)
	line := func(label string, v any) { fmt.Fprintf(w, "%-14s %s\n", label+":", strOr(v)) }
	line("Evidence ID", m["evidence_id"])
	fmt.Fprintf(w, "%-14s %s (%s)\n", "Created:", localStamp(m["created_at"]), strOr(m["created_at"]))
	line("Toolset", m["toolset"])
	line("Operation", m["operation"])
	line("Status", m["status"])
	for _, k := range []string{"arguments", "limits", "coverage", "producers", "provenance"} {
		v, ok := m[k]
		if !ok || v == nil {
			continue
		}
		if c, isMap := v.(map[string]any); isMap && len(c) == 0 {
			// An empty section is said to be empty, not left as a
			// heading with nothing under it.
			fmt.Fprintf(w, "\n%s: none\n", strings.ToUpper(k[:1])+k[1:])
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", strings.ToUpper(k[:1])+k[1:])
		writeTree(w, v, "  ")
	}
	arts, _ := m["artifacts"].([]any)
	fmt.Fprintf(w, "\nArtifacts (%d):\n", len(arts))
	if len(arts) == 0 {
		return
	}
	cells := [][]string{{"NAME", "ROLE", "FORMAT", "SIZE", "SHA256", "OBJECT"}}
	for _, a := range arts {
		am, _ := a.(map[string]any)
		size := "-"
		if n, ok := am["size_bytes"].(float64); ok {
			size = humanBytes(strconv.FormatFloat(n, 'f', 0, 64))
		}
		name, _ := am["name"].(string)
		cells = append(cells, []string{strOr(am["name"]), strOr(am["role"]), strOr(am["format"]), size, strOr(am["sha256"]), strOr(paths[name])})
	}
	var b strings.Builder
	writeAligned(&b, cells, []bool{true, true, true, false, true, true})
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			fmt.Fprint(w, "  "+l)
		}
	}
}

// writeTree prints a JSON value as indented "key: value" lines, keys in
// order; arrays of scalars on one line.
func writeTree(w io.Writer, v any, indent string) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch c := x[k].(type) {
			case map[string]any:
				if len(c) == 0 {
					fmt.Fprintf(w, "%s%s: {}\n", indent, cell(k))
					continue
				}
				fmt.Fprintf(w, "%s%s:\n", indent, cell(k))
				writeTree(w, c, indent+"  ")
			case []any:
				if scalars(c) {
					fmt.Fprintf(w, "%s%s: %s\n", indent, cell(k), scalarList(c))
					continue
				}
				fmt.Fprintf(w, "%s%s:\n", indent, cell(k))
				for i, e := range c {
					fmt.Fprintf(w, "%s  [%d]\n", indent, i)
					writeTree(w, e, indent+"    ")
				}
			default:
				fmt.Fprintf(w, "%s%s: %s\n", indent, cell(k), unitText(k, c))
			}
		}
	case []any:
		fmt.Fprintf(w, "%s%s\n", indent, scalarList(x))
	default:
		fmt.Fprintf(w, "%s%s\n", indent, scalarText(x))
	}
}

func scalars(a []any) bool {
	for _, e := range a {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func scalarList(a []any) string {
	parts := make([]string, len(a))
	for i, e := range a {
		parts[i] = scalarText(e)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// unitText prints a manifest value for people: a count of bytes (a key
// ending in _bytes) in human units with the exact figure, a count of
// seconds (_seconds) as a duration, anything else as scalarText does.
func unitText(key string, v any) string {
	n, ok := v.(float64)
	if !ok || n < 0 || n != float64(int64(n)) {
		return scalarText(v)
	}
	switch {
	case strings.HasSuffix(key, "_bytes"):
		return fmt.Sprintf("%s (%s bytes)", humanBytes(strconv.FormatInt(int64(n), 10)), strconv.FormatInt(int64(n), 10))
	case strings.HasSuffix(key, "_seconds"):
		return (time.Duration(n) * time.Second).String()
	}
	return scalarText(v)
}

// scalarText prints a JSON scalar: strings escaped as table cells,
// numbers as JSON writes them, null as "null".
func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return cell(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// renderEvidenceLocation prints where the store is and what it holds, as
// labelled lines.
func renderEvidenceLocation(w io.Writer, d map[string]any) {
	fmt.Fprintf(w, "%-22s %s\n", "Store:", strOr(d["dir"]))
	if exists, _ := d["exists"].(bool); !exists {
		fmt.Fprintf(w, "%-22s %s\n", "Exists:", "no (created by the first preserve)")
		fmt.Fprintf(w, "%-22s %s\n", "Records:", strOr(d["records"]))
		return
	}
	fmt.Fprintf(w, "%-22s %s\n", "Chosen by:", strOr(d["source"]))
	fmt.Fprintf(w, "%-22s %s\n", "Index:", strOr(d["index"]))
	fmt.Fprintf(w, "%-22s %s\n", "Format version:", strOr(d["format_version"]))
	fmt.Fprintf(w, "%-22s %s\n", "Records:", strOr(d["records"]))
	fmt.Fprintf(w, "%-22s %s\n", "Unreadable manifests:", strOr(d["unreadable_manifests"]))
	unref := "unknown"
	if n, ok := d["unreferenced_objects"].(float64); ok {
		unref = fmtVal(n) + " (" + humanBytes(fmtVal(d["unreferenced_bytes"])) + ")"
	}
	fmt.Fprintf(w, "%-22s %s\n", "Unreferenced objects:", unref)
}

// renderEvidenceSweep prints what a sweep removed (or, with --dry-run,
// would remove) and what it kept.
func renderEvidenceSweep(w io.Writer, d map[string]any) {
	fmt.Fprintf(w, "%-22s %s\n", "Store:", strOr(d["dir"]))
	if exists, _ := d["exists"].(bool); !exists {
		fmt.Fprintln(w, "no store yet: nothing to sweep")
		return
	}
	verb := "Removed:"
	if dry, _ := d["dry_run"].(bool); dry {
		verb = "Would remove:"
	}
	bytesOf := func(k string) string { return humanBytes(fmtVal(d[k])) }
	fmt.Fprintf(w, "%-22s %s objects (%s)\n", verb, strOr(d["removed_objects"]), bytesOf("removed_bytes"))
	fmt.Fprintf(w, "%-22s %s objects (%s), modified in the last %s\n", "Kept, too recent:", strOr(d["recent_unreferenced_objects"]), bytesOf("recent_unreferenced_bytes"), unitText("older_than_seconds", d["older_than_seconds"]))
	fmt.Fprintf(w, "%-22s %s of %s objects\n", "Referenced:", strOr(d["referenced_objects"]), strOr(d["objects"]))
	fmt.Fprintf(w, "%-22s %s\n", "Unreadable manifests:", strOr(d["unreadable_manifests"]))
}
