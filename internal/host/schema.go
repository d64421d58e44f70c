package host

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/jsonenc"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Schemas of the proc tools are written one way: a readable multi-line Go
// raw string beside the tool's arguments struct, shared fragments as the
// Go constants below, and enums spliced in by schema (the one helper) from
// the $NAME placeholders it lists.

// schema splices the enum placeholders into s and returns it as a JSON
// Schema: $PROC_FIELDS (list_processes projection), $METRIC_IDS (every
// metric), $PROCESS_METRIC_IDS (process metrics), $PROCESS_SORT_KEYS (pid,
// name and the process metrics), $CAPTURE_KINDS, $CAPTURE_FIELDS (every
// capture row field), $INFO_FIELDS (get_process_info fields) and
// $MAX_WAIT_MS.
func schema(s string) json.RawMessage {
	if strings.IndexByte(s, '$') < 0 {
		// No placeholder: most schemas, several declared at package
		// initialisation, which must not build the catalogs.
		return json.RawMessage(s)
	}
	return json.RawMessage(splice(s, schemaEnums(), captureFieldsEnum))
}

// splice returns s with each placeholder of subs (old, new pairs; the
// first that matches at a position wins, as strings.Replacer decides) and
// $CAPTURE_FIELDS replaced by captureFields(), called only when s has
// that placeholder (every capture kind's fields are built for the
// schemas that list them). Only the '$' bytes are looked at: a schema is
// kilobytes and a command builds every proc tool's, where a
// strings.Replacer walks its trie at every byte.
func splice(s string, subs []string, captureFields func() string) string {
	var b strings.Builder
	b.Grow(len(s) + 1024)
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		matched := false
		for j := 0; j+1 < len(subs); j += 2 {
			if strings.HasPrefix(s, subs[j]) {
				b.WriteString(subs[j+1])
				s = s[len(subs[j]):]
				matched = true
				break
			}
		}
		if !matched && strings.HasPrefix(s, "$CAPTURE_FIELDS") {
			b.WriteString(captureFields())
			s = s[len("$CAPTURE_FIELDS"):]
			matched = true
		}
		if !matched {
			b.WriteByte('$')
			s = s[1:]
		}
	}
}

// schemaEnums are the placeholders of schema's fixed catalogs and their
// JSON (old, new pairs), built once: every proc tool declaration (package
// variables and each ToolsFor call) splices them.
var schemaEnums = sync.OnceValue(func() []string {
	return []string{
		"$PROC_FIELDS", enumJSON(append([]string{ProjectionAll}, ProcessFields...)),
		"$METRIC_IDS", enumJSON(sample.MetricIDs("")),
		"$PROCESS_SORT_KEYS", enumJSON(append([]string{"pid", "name"}, sample.MetricIDs(sample.TargetProcess)...)),
		"$PROCESS_METRIC_IDS", enumJSON(sample.MetricIDs(sample.TargetProcess)),
		"$CAPTURE_KINDS", enumJSON(capture.Kinds),
		"$INFO_FIELDS", enumJSON(capture.InfoFields),
		"$MAX_WAIT_MS", strconv.Itoa(MaxWaitMS),
	}
})

// captureFields caches the JSON of AllCaptureFields for captureFieldsEnum.
var captureFields struct {
	sync.Mutex
	kinds int
	json  string
}

// captureFieldsEnum returns the JSON array of AllCaptureFields. CaptureFields
// gains kinds in package init functions (list_logs' rows), after package
// variables that declare tools, and a kind's fields are fixed once added:
// the JSON is rebuilt whenever the number of kinds changed since it was
// last built.
func captureFieldsEnum() string {
	captureFields.Lock()
	defer captureFields.Unlock()
	if captureFields.json == "" || captureFields.kinds != len(CaptureFields) {
		captureFields.json = enumJSON(AllCaptureFields())
		captureFields.kinds = len(CaptureFields)
	}
	return captureFields.json
}

// enumJSON is the JSON array of vals, as encoding/json.Marshal writes it
// (jsonenc.String: no reflection built for a short command).
func enumJSON(vals []string) string {
	if vals == nil {
		return "null"
	}
	n := 2
	for _, v := range vals {
		n += len(v) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.String(b, v)
	}
	return string(append(b, ']'))
}

// readOnly are the annotations of a proc tool that only reads.
var readOnly = tool.Annotations{ReadOnly: true, Idempotent: true}

// mutation are the annotations of an idempotent, non-destructive change
// (an operation_id makes a repeat return the retained outcome).
var mutation = tool.Annotations{ReadOnly: false, Destructive: false, Idempotent: true}

// noArgs is the input schema of a tool without arguments.
const noArgs = `{"type":"object","additionalProperties":false,"properties":{}}`

// pidField is the schema of a pid argument (the bridge resolves it to the
// process_ref of the lifetime running under it at call time).
const pidField = `"pid":{"type":"integer","minimum":1,"maximum":2147483647,"description":"a live PID instead of process_ref"}`

// pidNSField is the schema of pid_ns beside a pid: the PID namespace
// the pid is in (the bridge resolves the pair to the host PID).
const pidNSField = `"pid_ns":{"type":"integer"}`

// pidTargetBranch is the {pid} branch of a target oneOf.
const pidTargetBranch = `{"type":"object","additionalProperties":false,"required":["pid"],"properties":{` + pidField + `}}`

// logRefSchema is the log_ref property of the source-selecting queries.
const logRefSchema = `"log_ref":{"type":"string","minLength":1,"maxLength":128,"description":"from open_log, with source log"}`

// sourceSchema is the source property of the source-selecting queries.
const sourceSchema = `"source":{"type":"string","enum":["live","log"],"default":"live"}`

// operationFields are operation_id and expected_revision of a mutation.
const operationFields = `"operation_id":{"type":"string","minLength":1,"maxLength":128,"pattern":"^[A-Za-z0-9._:-]+$","description":"a repeat with the same arguments returns the kept outcome"},
"expected_revision":{"type":"string","minLength":1,"maxLength":64,"description":"revision from get_tracking or list_profiles"}`

// filterSchema holds the row selectors shared by read selections and the
// start_capture collection filter. path and owner_name must contain a
// non-space character (an all-space path would match every row).
const filterSchema = `"path":{"type":"string","minLength":1,"maxLength":4096,"pattern":"\\S","description":"every space-separated term occurs in the row path (case-insensitive)"},
"path_bytes":{"type":"string","minLength":4,"maxLength":5464,"pattern":"^[A-Za-z0-9+/]*={0,2}$","description":"path as base64 bytes (not UTF-8)"},
"owner_name":{"type":"string","minLength":1,"maxLength":256,"pattern":"\\S","description":"owner executable name, exact, case-insensitive (not open_files, modules)"},
"extension":{"type":"string","minLength":2,"maxLength":32,"pattern":"^\\.[^/\\\\]+$","description":"file extension with the dot, e.g. .log"}`

// filterSchemaBare is filterSchema without descriptions: the selection a
// job tool's read option takes, described once by read_capture.
const filterSchemaBare = `"path":{"type":"string","minLength":1,"maxLength":4096,"pattern":"\\S"},
"path_bytes":{"type":"string","minLength":4,"maxLength":5464,"pattern":"^[A-Za-z0-9+/]*={0,2}$"},
"owner_name":{"type":"string","minLength":1,"maxLength":256,"pattern":"\\S"},
"extension":{"type":"string","minLength":2,"maxLength":32,"pattern":"^\\.[^/\\\\]+$"}`

// Delivery is the bridge's delivery mode: the defaults a proc tool's
// description and schema state. Normal mode waits
// for jobs and pages 5,000 rows; raw mode returns job handles at once and
// pages 100 rows.
type Delivery struct {
	// Raw selects raw mode.
	Raw bool
}

// limitDefault is the default page size, as the schemas state it.
func (d Delivery) limitDefault() string {
	if d.Raw {
		return strconv.Itoa(RawPageRows)
	}
	return strconv.Itoa(MaxPageRows)
}

// waitDefault is the default wait_ms of a job or mutation, in ms.
func (d Delivery) waitDefault() string {
	if d.Raw {
		return "0"
	}
	return strconv.Itoa(DefaultWaitMS)
}

// waitField is the wait_ms property of a mutation or sliced wait.
func waitField(def string) string {
	return `"wait_ms":{"type":"integer","minimum":0,"maximum":10000,"description":"ms to wait, default ` + def + `; 0 returns at once"}`
}

// Delivery defaults of normal and raw mode (the bridge applies them).
const (
	// DefaultWaitMS is how long a normal-mode job tool waits for completion.
	DefaultWaitMS = 5000
	// MaxWaitMS keeps bridge completion inside the 10 s request envelope.
	MaxWaitMS = 10000
)
