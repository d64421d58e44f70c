package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/inquest-dev/inquest/internal/contract"
)

// ResultLogEnv names the environment variable that, set to a directory,
// makes every Registry append each successful result it returns to
// DIR/TOOL.jsonl: one line per result, the envelope as JSON. Tests set it
// (for the processes they start too) to check every real result against
// the tool's published output schema; nothing else reads it. A file stops
// growing at resultLogMax bytes; a write failure is ignored (the log is a
// test aid, never part of a result).
const ResultLogEnv = "INQUEST_RESULT_LOG"

// resultLogMax bounds one tool's log file.
const resultLogMax = 8 << 20

var resultLogDir = sync.OnceValue(func() string { return os.Getenv(ResultLogEnv) })

var resultLogMu sync.Mutex

// logResult appends res to the result log when ResultLogEnv is set.
func logResult(name string, res *contract.Result) {
	dir := resultLogDir()
	if dir == "" || res == nil {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		return
	}
	resultLogMu.Lock()
	defer resultLogMu.Unlock()
	path := filepath.Join(dir, name+".jsonl")
	if fi, err := os.Stat(path); err == nil && fi.Size() > resultLogMax {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(b, '\n'))
}

// CheckResultLog validates every result logged in dir (ResultLogEnv)
// against the output schema schemaOf returns for its tool, as an MCP
// client does with structuredContent, and checks the rules every result
// keeps: a partial result says why (partialHasReason), data repeats no
// envelope member (DataRepeats), and every sentence about a next call
// matches the fields returned (NextCallMismatches). It returns how many results of each
// tool it checked and one line per failure (at most three per tool, each
// naming the tool, the log line and the validator's reason, clipped to a
// few hundred bytes). A tool with no published schema, a line that is not
// JSON and a schema that does not compile are failures too.
func CheckResultLog(dir string, schemaOf func(name string) json.RawMessage) (map[string]int, []string) {
	counts := map[string]int{}
	var problems []string
	logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, p := range logs {
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		raw := schemaOf(name)
		var js jsonschema.Schema
		if len(raw) == 0 || json.Unmarshal(raw, &js) != nil {
			problems = append(problems, name+": no output schema")
			continue
		}
		rs, err := js.Resolve(nil)
		if err != nil {
			problems = append(problems, name+": output schema does not compile: "+err.Error())
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			problems = append(problems, name+": "+err.Error())
			continue
		}
		bad := 0
		for i, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var v any
			err := json.Unmarshal(line, &v)
			if err != nil {
				err = fmt.Errorf("not JSON: %w", err)
			} else {
				err = rs.Validate(v)
				if err != nil {
					err = fmt.Errorf("does not match its output schema: %w", err)
				}
				if err == nil {
					err = partialHasReason(v)
				}
				if err == nil {
					if dup := DataRepeats(v); len(dup) > 0 {
						err = fmt.Errorf("data repeats the envelope's %s: one copy of each fact, in the envelope", strings.Join(dup, ", "))
					}
				}
				if err == nil {
					if m := NextCallMismatches(line); len(m) > 0 {
						err = fmt.Errorf("%s", strings.Join(m, "; "))
					}
				}
				counts[name]++
			}
			if err != nil {
				if bad++; bad <= 3 {
					msg := err.Error()
					if len(msg) > 400 {
						msg = msg[:400] + "..."
					}
					problems = append(problems, fmt.Sprintf("%s: result %d of %s %s", name, i+1, p, msg))
				}
			}
		}
	}
	return counts, problems
}

// envelopeFacts are the envelope members that state a fact about the
// whole result (its status, warnings, coverage and next call): data
// never carries a member of the same name (the envelope is where the
// docs name them, and a second copy can only drift).
var envelopeFacts = []string{"status", "warnings", "coverage", "next_action"}

// DataRepeats returns the envelope members (status, warnings, coverage,
// next_action) that a decoded success envelope v repeats under data, in
// that order; nil when data repeats none or v is not an envelope.
func DataRepeats(v any) []string {
	env, _ := v.(map[string]any)
	data, _ := env["data"].(map[string]any)
	var dup []string
	for _, k := range envelopeFacts {
		if _, ok := data[k]; ok {
			dup = append(dup, k)
		}
	}
	return dup
}

// partialHasReason reports an error for a partial envelope whose only
// warnings are paging notes (or none): partial means some evidence could
// not be read, and paging is not missing evidence, so a page with more
// pages after it is complete with page.more and next_action.
func partialHasReason(v any) error {
	env, _ := v.(map[string]any)
	if env["status"] != "partial" {
		return nil
	}
	ws, _ := env["warnings"].([]any)
	for _, w := range ws {
		if s, _ := w.(string); !IsPagingNote(s) {
			return nil
		}
	}
	return fmt.Errorf("status partial with no warning but paging notes %q: paging is not missing evidence", ws)
}

// IsPagingNote reports whether a warning only says that more pages follow
// or that the byte budget ended a page (BudgetWarning, "more rows
// remain", "more manifests remain"): a note that never makes a result
// partial.
func IsPagingNote(w string) bool {
	return w == BudgetWarning || strings.Contains(w, "more rows remain") || strings.Contains(w, "more manifests remain")
}
