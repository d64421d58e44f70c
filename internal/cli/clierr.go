package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/spf13/cobra"
)

// The one translator from a tool's error to what a person at the command
// line reads. A tool error names the argument it rejects by the JSON
// Pointer of the tool's arguments (field: "/metric_ids/0", "/path",
// "/sources/0/format"); the person typed a flag (--metric) or a
// positional argument (FILE). typedArg maps the pointer back to what set
// it, for the command that ran, and cliError rewrites the error for
// standard error: the message names the flag instead of the pointer, the
// accepted values are listed in words and a "next:" line gives the
// command to run next. The error envelope itself (--json, MCP) keeps its
// field paths unchanged.

// fieldArgs names, per command (its path under inquest, e.g. "bin
// inspect"), what the person typed for a tool argument whose pointer
// begins with the key. Keys drop array indexes ("/sources/0/format" is
// looked up as "/sources/format"). Arguments a command sets from a flag of
// the same name (/limit and --limit) need no entry: typedArg finds the
// flag itself.
var fieldArgs = sync.OnceValue(func() map[string]map[string]string {
	return map[string]map[string]string{
		"ps": {"/filter/name": "--name", "/filter/name_bytes": "--name"},
		"history": {"/metric_ids": "--metric", "/target/process_ref": "--ref", "/target/pid": "--pid",
			"/target": "--pid", "target": "--pid", "/mode": "--raw"},
		"top": {"/metric_id": "--metric", "/last_seconds": "--last", "/filter/name": "--name"},
		"analyze": {"/sources/format": "--format", "/sources/path": "PATH", "/sources/evidence_id": "--evidence",
			"/sources": "PATH", "/limits/max_rows": "--page-size", "/limits": "--limits", "/page_size": "--page-size"},
		"lsof":    {"/pid": "PID", "/process_ref": "PID"},
		"threads": {"/pid": "PID", "/process_ref": "PID"},
		"sockets": {"/process_ref": "--pid", "/filter/state": "--state", "/filter/protocol": "--proto",
			"/filter/owner_name": "--owner", "/filter/path_bytes": "--path"},
		"fuser":         {"/path": "PATH", "/path_bytes": "PATH"},
		"bin inspect":   {"/path": "FILE", "/paths": "FILE", "/facets": "--facet", "/include_digests": "--digests"},
		"bin symbols":   {"/path": "FILE", "/name_contains": "--name", "/name_regex": "--regex"},
		"bin strings":   {"/path": "FILE", "/encodings": "--encoding", "/min_length": "--min-length"},
		"bin disasm":    {"/path": "FILE", "/max_instructions": "--max", "/symbol": "--symbol", "/start": "--start", "/end": "--end", "/section": "--section"},
		"bin diff":      {"/left": "LEFT", "/right": "RIGHT", "/kinds": "--kind", "/verdicts": "--verdict", "/name_contains": "--name"},
		"har show":      {"/path": "FILE", "/websocket_frames": "--frames", "/group_entries": "--group"},
		"har diff":      {"/left": "LEFT", "/right": "RIGHT"},
		"wait exit":     {"/target/process_ref": "--ref", "/target": "--pid"},
		"wait metric":   {"/target/process_ref": "--ref", "/target": "--pid", "/metric_id": "METRIC"},
		"wait present":  {"/name": "NAME"},
		"evidence show": {"/evidence_id": "EVIDENCE_ID"},
		"log show":      {"/path": "FILE"},
		"log export":    {"/path": "FILE"},
		"track add":     {"/process_ref": "--pid"},
		"track remove":  {"/process_ref": "--pid"},
		"capture": {"/argv": "ARGV", "/provider": "--provider", "/target/argv": "ARGV", "/target/budget": "--workload-budget",
			"/target/cwd": "--cwd", "/target/env": "--env", "/experiment": "--experiment", "/limits": "--limits"},
		"record start":   {"/interval_seconds": "--interval"},
		"evidence query": {"/created_from": "--from", "/created_to": "--to"},
		"settings set":   {"/key": "KEY", "/value": "VALUE"},
		"settings unset": {"/key": "KEY"},
		"record stop":    {"/recording_session_id": "RECORDING_SESSION_ID"},
		"confirm":        {"/operation_id": "OPERATION_ID"},
	}
})

// flagAlternatives names, per command, the flags that set the same tool
// argument (top's --by is --aggregate under another name): an error about
// that argument names whichever of them the person typed.
var flagAlternatives = sync.OnceValue(func() map[string]map[string][]string {
	return map[string]map[string][]string{
		"top":     {"/aggregate": {"--by", "--aggregate"}},
		"analyze": {"/limits/max_rows": {"--limits", "--page-size"}},
		"capture": {"/limits/max_rows": {"--limits", "--page-size"}},
	}
})

// commandKey is cmd's path under the root ("bin inspect"), the key of
// fieldArgs.
func commandKey(cmd *cobra.Command) string {
	p := cmd.CommandPath()
	if i := strings.IndexByte(p, ' '); i >= 0 {
		return p[i+1:]
	}
	return ""
}

// pointerSegments splits a JSON Pointer ("/sources/0/format", or a bare
// name such as "target") into its segments without array indexes.
func pointerSegments(ptr string) []string {
	var segs []string
	for s := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		if s == "" {
			continue
		}
		if _, err := strconv.Atoi(s); err == nil {
			continue
		}
		segs = append(segs, strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~"))
	}
	return segs
}

// positionalWords are the placeholders of cmd's usage line (FILE, PID,
// LEFT, ...): its upper-case words.
func positionalWords(cmd *cobra.Command) []string {
	var out []string
	for f := range strings.FieldsSeq(cmd.Use) {
		f = strings.Trim(f, "[]().|")
		f = strings.TrimSuffix(f, "...")
		if f != "" && strings.ToUpper(f) == f && strings.IndexFunc(f, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0 && !strings.HasPrefix(f, "-") {
			out = append(out, f)
		}
	}
	return out
}

// positionalSynonyms are the placeholders a tool argument's name may be
// typed as, best first.
var positionalSynonyms = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"path":        {"FILE", "PATH"},
		"paths":       {"FILE", "PATH"},
		"path_bytes":  {"PATH", "FILE"},
		"pid":         {"PID"},
		"process_ref": {"PID", "REF"},
	}
})

// typedArg is what the person typed for the tool argument at pointer ptr
// when running cmd: a flag ("--metric") or a positional placeholder
// ("FILE"); "" when nothing on cmd's command line sets it (an `inquest
// call` JSON argument: the pointer is then what the person typed).
func typedArg(cmd *cobra.Command, ptr string) string {
	if cmd == nil || ptr == "" || commandKey(cmd) == "call" {
		return ""
	}
	segs := pointerSegments(ptr)
	if len(segs) == 0 {
		return ""
	}
	if alts := flagAlternatives()[commandKey(cmd)][ptr]; alts != nil {
		// several flags set this argument: the one the person typed
		for _, a := range alts {
			if f := cmd.Flags().Lookup(strings.TrimPrefix(a, "--")); f != nil && f.Changed {
				return a
			}
		}
	}
	if m := fieldArgs()[commandKey(cmd)]; m != nil {
		for n := len(segs); n > 0; n-- {
			key := "/" + strings.Join(segs[:n], "/")
			if a, ok := m[key]; ok {
				return a
			}
			if n == 1 {
				if a, ok := m[segs[0]]; ok {
					return a
				}
			}
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		name := strings.ReplaceAll(segs[i], "_", "-")
		if f := cmd.Flags().Lookup(name); f != nil && !f.Hidden {
			return "--" + name
		}
	}
	words := positionalWords(cmd)
	for i := len(segs) - 1; i >= 0; i-- {
		cands := append([]string{strings.ToUpper(segs[i])}, positionalSynonyms()[segs[i]]...)
		for _, c := range cands {
			if slices.Contains(words, c) {
				return c
			}
		}
	}
	// analyze: an operation field the person gave in --arguments.
	if commandKey(cmd) == "analyze" && cmd.Flags().Lookup("arguments") != nil {
		return "--arguments " + strings.Join(segs, ".")
	}
	return ""
}

// typedValue is the value the person gave flag (e.g. "--order") on cmd's
// command line, or "" when the flag was not set or is a switch.
func typedValue(cmd *cobra.Command, flag string) string {
	name, ok := strings.CutPrefix(flag, "--")
	if !ok || strings.ContainsRune(name, ' ') {
		return ""
	}
	f := cmd.Flags().Lookup(name)
	if f == nil || !f.Changed || f.Value.Type() == "bool" {
		return ""
	}
	v := f.Value.String()
	if strings.HasSuffix(f.Value.Type(), "Slice") || strings.HasSuffix(f.Value.Type(), "Array") {
		v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	}
	return v
}

// cliError is e as the person at cmd's command line reads it: the same
// code, the message with the tool's argument pointer replaced by the
// flag or placeholder they typed, and the lines reportFailure prints
// below it (what they typed, what is accepted, details, the next
// command). e is not modified.
func cliError(cmd *cobra.Command, e *contract.Error) (msg string, lines []string) {
	msg = e.Message
	if alts := oneOfRequired(cmd, e); alts != "" {
		msg = "one of these is required: " + alts
	}
	typed := typedArg(cmd, e.Field)
	if typed != "" {
		msg = replacePointer(msg, e.Field, typed)
		if segs := pointerSegments(e.Field); len(segs) > 0 && strings.Contains(segs[len(segs)-1], "_") && !strings.Contains(segs[len(segs)-1], "/") {
			// the message names the argument bare ("evidence_id must
			// be ..."); a plain word (state, limit) stays a word
			msg = replacePointer(msg, segs[len(segs)-1], typed)
		}
		if strings.Contains(msg, "target {process_ref} or {pid}") && cmd.Flags().Lookup("pid") != nil {
			alt := "--pid PID"
			if cmd.Flags().Lookup("ref") != nil {
				alt += " or --ref REF"
			}
			msg = strings.ReplaceAll(msg, "give target {process_ref} or {pid}", "give "+alt)
		}
		label := "flag"
		if !strings.HasPrefix(typed, "--") {
			label = "argument"
		}
		line := label + ": " + typed
		v := typedValue(cmd, typed)
		if v == "" {
			v = positionalValue(cmd, e, typed)
		}
		if v != "" {
			line += " " + strconv.Quote(v)
		}
		if typed == "--format" {
			msg = strings.Replace(msg, "; declare format", "; declare it with --format", 1)
		}
		lines = append(lines, line)
	} else if e.Field != "" {
		lines = append(lines, "field: "+e.Field)
	} else if f, ok := e.Details["field"].(string); ok && cmd != nil && f != "" {
		// a command's own check (badFlag, flagValueError): the flag or
		// argument it names, with the value typed
		label := "flag"
		if !strings.HasPrefix(f, "-") {
			label = "argument"
		}
		line := label + ": " + f
		v := typedValue(cmd, f)
		if v == "" && strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") {
			if fl := cmd.Flags().ShorthandLookup(strings.TrimPrefix(f, "-")); fl != nil {
				v = typedValue(cmd, "--"+fl.Name)
			}
		}
		if _, counted := e.Details["arguments"]; v == "" && !counted && !strings.HasPrefix(f, "-") {
			v = positionalValue(cmd, e, f)
		}
		if v != "" {
			line += " " + strconv.Quote(v)
		}
		lines = append(lines, line)
		typed = f
	}
	if e.Expected != nil && !strings.HasPrefix(msg, "one of these is required: -") {
		lines = append(lines, "accepted: "+expectedText(e.Expected))
	}
	if len(e.Details) > 0 {
		keys := make([]string, 0, len(e.Details))
		for k := range e.Details {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "field" && typed == e.Details["field"] {
				continue
			}
			lines = append(lines, strings.ReplaceAll(k, "_", " ")+": "+detailText(e.Details[k]))
		}
	}
	if n := nextCommand(cmd, e, typed); n != "" {
		lines = append(lines, "next: "+n)
	}
	return msg, lines
}

// oneOfRequired is the alternatives of e's expected.one_of_required as
// the person at cmd's command line gives them ("--symbol, --start or
// --section"), or "" when e has none or one of them is set by no flag or
// argument of cmd.
func oneOfRequired(cmd *cobra.Command, e *contract.Error) string {
	m, _ := e.Expected.(map[string]any)
	var alts [][]string
	switch x := m["one_of_required"].(type) {
	case [][]string:
		alts = x
	case []any:
		for _, a := range x {
			var names []string
			l, _ := a.([]any)
			for _, n := range l {
				s, _ := n.(string)
				names = append(names, s)
			}
			alts = append(alts, names)
		}
	}
	if len(alts) < 2 {
		return ""
	}
	words := make([]string, len(alts))
	for i, alt := range alts {
		typed := make([]string, len(alt))
		for j, name := range alt {
			if typed[j] = typedArg(cmd, e.Field+"/"+name); typed[j] == "" {
				return ""
			}
		}
		words[i] = strings.Join(typed, " and ")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// replacePointer replaces the argument pointer ptr in msg by typed where
// it stands as a word (so "/path" in "/path/to/file" stays).
func replacePointer(msg, ptr, typed string) string {
	if ptr == "" {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, ptr)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		end := i + len(ptr)
		word := end == len(msg) || !isPointerByte(msg[end])
		b.WriteString(msg[:i])
		if word && (i == 0 || !isPointerByte(msg[i-1])) {
			b.WriteString(typed)
		} else {
			b.WriteString(ptr)
		}
		msg = msg[end:]
	}
}

func isPointerByte(c byte) bool {
	return c == '/' || c == '_' || c == '~' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// expectedText says in words what a schema's "expected" accepts: "one of
// asc, desc", "an integer from 1 to 5000", else the JSON.
// numText prints a schema bound as a person writes it: 10000000, not
// 1e+07.
func numText(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func expectedText(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		j, _ := json.Marshal(v)
		return cell(string(j))
	}
	if enum, ok := m["enum"].([]any); ok {
		parts := make([]string, 0, len(enum))
		for _, x := range enum {
			parts = append(parts, cell(fmt.Sprint(x)))
		}
		return "one of " + strings.Join(parts, ", ")
	}
	if enum, ok := m["enum"].([]string); ok {
		return "one of " + cell(strings.Join(enum, ", "))
	}
	kind := "a value"
	switch m["type"] {
	case "integer":
		kind = "an integer"
	case "number":
		kind = "a number"
	case "string":
		kind = "a string"
	case "boolean":
		kind = "true or false"
	case "array":
		kind = "a list"
	case "object":
		kind = "a JSON object"
	}
	lo, hasLo := m["minimum"]
	hi, hasHi := m["maximum"]
	switch {
	case hasLo && hasHi:
		return fmt.Sprintf("%s from %s to %s", kind, numText(lo), numText(hi))
	case hasLo:
		return fmt.Sprintf("%s of at least %s", kind, numText(lo))
	case hasHi:
		return fmt.Sprintf("%s of at most %s", kind, numText(hi))
	}
	if p, ok := m["pattern"].(string); ok {
		return fmt.Sprintf("%s matching the pattern %s", kind, cell(p))
	}
	l, hasL := m["minLength"]
	h, hasH := m["maxLength"]
	switch {
	case hasL && hasH:
		return fmt.Sprintf("%s of %s to %s characters", kind, numText(l), numText(h))
	case hasL:
		return fmt.Sprintf("%s of at least %s characters", kind, numText(l))
	case hasH:
		return fmt.Sprintf("%s of at most %s characters", kind, numText(h))
	}
	if props, ok := m["properties"].([]any); ok && m["additionalProperties"] == false {
		names := make([]string, 0, len(props))
		for _, p := range props {
			names = append(names, cell(fmt.Sprint(p)))
		}
		return "only the fields " + strings.Join(names, ", ")
	}
	if kind != "a value" && len(m) == 1 {
		return kind
	}
	j, _ := json.Marshal(v)
	return cell(string(j))
}

// detailText renders one detail value: a list as "a, b", else its JSON.
func detailText(v any) string {
	switch x := v.(type) {
	case string:
		return cell(x)
	case []string:
		return cell(strings.Join(x, ", "))
	case []any:
		parts := make([]string, 0, len(x))
		for _, p := range x {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			} else {
				j, _ := json.Marshal(p)
				parts = append(parts, string(j))
			}
		}
		return cell(strings.Join(parts, ", "))
	}
	j, _ := json.Marshal(v)
	return cell(string(j))
}

// nextCommand is the command line to run next for e on cmd: a command of
// this CLI where one answers the error (finding a PID, declaring a
// format), else the tool call the error names as `inquest call`.
func nextCommand(cmd *cobra.Command, e *contract.Error, typed string) string {
	key := commandKey(cmd)
	pidArg := typed == "PID" || typed == "--pid" || strings.HasPrefix(e.Field, "/pid") || strings.HasPrefix(e.Field, "/process_ref") || strings.HasPrefix(e.Field, "/target")
	switch {
	case (e.Code == contract.CodeReferenceInvalid || e.Code == contract.CodeProcessExited) && pidArg && key != "call":
		return "inquest ps --name NAME (running processes and their PIDs); inquest top --last 1h (ended ones too)"
	case e.Code == contract.CodeInvalidArgument && strings.Contains(e.Message, "give target {process_ref} or {pid}") && cmd.Flags().Lookup("pid") != nil:
		return "inquest ps --name NAME to find the PID, then inquest " + key + " " + strings.Join(typedFlags(cmd), " ") + " --pid PID"
	case e.Code == contract.CodeUnsupportedFormat && key == "analyze":
		f := "FORMAT"
		if list, ok := e.Details["accepted_formats"].([]any); ok && len(list) > 0 {
			f = fmt.Sprint(list[0])
		}
		if fs, ok := e.Details["accepted_formats"].([]string); ok && len(fs) > 0 {
			f = fs[0]
		}
		return "inquest analyze " + cmd.Flags().Arg(0) + " --format " + f + " PATH (if the file is in that format)"
	case e.Code == contract.CodeInvalidArgument && (typed == "FILE" || typed == "PATH") && strings.Contains(e.Message, "does not exist"):
		p := positionalValue(cmd, e, typed)
		if p == "" {
			p = typed
		}
		return "check the path: ls -ld " + shellQuote(p)
	}
	if e.NextAction != nil && e.NextAction.Tool != "" {
		j, _ := json.Marshal(e.NextAction.Arguments)
		return "inquest call " + cell(e.NextAction.Tool) + " '" + cell(string(j)) + "'"
	}
	return ""
}

// positionalValue is the value the person gave the positional
// placeholder word (FILE, PID) of cmd, or "" when it cannot be told (a
// repeated argument with several values and no index in e).
func positionalValue(cmd *cobra.Command, e *contract.Error, word string) string {
	if cmd == nil || word == "" || strings.HasPrefix(word, "-") {
		return ""
	}
	args := cmd.Flags().Args()
	idx := -1
	variadic := false
	i := 0
	for f := range strings.FieldsSeq(cmd.Use) {
		v := strings.Contains(f, "...")
		w := strings.Trim(f, "[]().|")
		if w == "" || strings.HasPrefix(w, "-") || strings.ToUpper(w) != w || strings.IndexFunc(w, func(r rune) bool { return r >= 'A' && r <= 'Z' }) < 0 {
			continue
		}
		if i == 0 && w == strings.ToUpper(cmd.Name()) {
			continue
		}
		if w == word {
			idx, variadic = i, v
			break
		}
		i++
	}
	if idx < 0 || idx >= len(args) {
		return ""
	}
	if !variadic {
		return args[idx]
	}
	if p, ok := e.Details["path"].(string); ok {
		return p
	}
	for s := range strings.SplitSeq(e.Field, "/") {
		if n, err := strconv.Atoi(s); err == nil && idx+n < len(args) {
			return args[idx+n]
		}
	}
	if len(args)-idx == 1 {
		return args[idx]
	}
	return ""
}

// shellQuote quotes s for a shell command line when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// typedFlags are the flags set on cmd's command line, as typed
// ("--metric rss_bytes"), for repeating them in a next command.
func typedFlags(cmd *cobra.Command) []string {
	var out []string
	for _, name := range []string{"metric", "from", "to", "raw", "table"} {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if f.Value.Type() == "bool" {
			out = append(out, "--"+name)
			continue
		}
		out = append(out, "--"+name+" "+typedValue(cmd, "--"+name))
	}
	return out
}
