package perf

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	jtext "github.com/go-json-experiment/json/jsontext"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/jsontext"
)

// maxNS is the largest trace-window bound (9223372036854775807).
const maxNS = math.MaxInt64

func boundSchema(desc string) js {
	return js{
		"description": desc,
		"oneOf": []any{
			js{"type": "integer", "minimum": json.Number("-9223372036854775808"), "maximum": json.Number("9223372036854775807")},
			js{"type": "string", "pattern": "^(0|-?[1-9][0-9]{0,18})$"},
		},
	}
}

// traceFields are inspect_trace_window's own arguments.
type traceFields struct {
	StartNS decimal `json:"start_ns"`
	EndNS   decimal `json:"end_ns"`
	View    string  `json:"view,omitempty"`
}

type traceArgs struct {
	operationArgs
	traceFields
}

// decimal is an int64 argument given as a JSON integer or a canonical
// decimal string (trace clocks reach -2^63..2^63-1, beyond the integers a
// JSON number carries exactly; a trace's clock may be negative). It keeps the argument's text, decoded
// once; value validates it. It encodes as the canonical decimal string, so
// next_page carries exact values.
type decimal string

// UnmarshalJSON keeps the text of a JSON number or string.
func (d *decimal) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*d = decimal(s)
		return nil
	}
	*d = decimal(b)
	return nil
}

// MarshalJSON encodes d as its canonical decimal string when it is valid.
func (d decimal) MarshalJSON() ([]byte, error) {
	if v, err := d.value(""); err == nil {
		return json.Marshal(strconv.FormatInt(v, 10))
	}
	return json.Marshal(string(d))
}

// value is d as an int64 in -2^63..2^63-1; otherwise INVALID_ARGUMENT at
// /key.
func (d decimal) value(key string) (int64, error) {
	s := string(d)
	if !boundedExponent(s) {
		return 0, fieldErr(contract.CodeInvalidArgument, "/"+key, "%s must be an integer from -9223372036854775808 through 9223372036854775807", key)
	}
	if r, ok := new(big.Rat).SetString(s); ok && r.IsInt() && r.Num().IsInt64() {
		return r.Num().Int64(), nil
	}
	return 0, fieldErr(contract.CodeInvalidArgument, "/"+key, "%s must be an integer from -9223372036854775808 through 9223372036854775807", key)
}

func traceWindowOperation() *Operation {
	return bindOperation(&Operation{
		Name:        "inspect_trace_window",
		Title:       "Inspect a trace window",
		Description: "Select the events of one Chrome trace-event JSON file that overlap [start_ns, end_ns) on the trace clock, as events or per thread or category. Required: sources (exactly one), start_ns, end_ns (integers or decimal strings).",
		MinSources:  1, MaxSources: 1,
		Formats: []string{FormatChromeTrace},
		Fields: []Field{
			{"start_ns", boundSchema("Inclusive window start, ns.")},
			{"end_ns", boundSchema("Exclusive window end, ns.")},
			{"view", js{"enum": []string{"events", "threads", "categories"}, "description": "Rows: events (default), threads or categories."}},
		},
		Required: []string{"start_ns", "end_ns"},
	}, func(ctx context.Context, req *Request, a *traceArgs) (*Output, error) {
		return runTraceWindow(ctx, req, &a.traceFields)
	})
}

// traceEvent is one Chrome trace event (Trace Event Format: ph, ts and dur
// in microseconds, pid, tid, name, cat, args).
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	Pid  json.RawMessage `json:"pid"`
	Tid  json.RawMessage `json:"tid"`
	Args json.RawMessage `json:"args"`
	// didNotFinish marks an X event without dur, which (like the catapult
	// importer) ends at the trace's last timestamp.
	didNotFinish bool
	// pidText and tidText are idString of Pid and Tid when hasIDs (the
	// decoder shares them between events).
	pidText, tidText string
	hasIDs           bool
	// hasName and hasCat are false when name or cat is absent or null:
	// unknown, reported as null (an empty string is a given value).
	hasName, hasCat bool
}

// usToNS converts a decimal microsecond value to integer nanoseconds
// exactly (digits beyond nanoseconds are truncated toward zero).
func usToNS(n json.Number) (int64, bool) {
	s := string(n)
	if s == "" || !boundedExponent(s) {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(1000, 1))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// fastUsToNS handles the common integer and short-decimal forms without
// big.Rat.
func fastUsToNS(n json.Number) (int64, bool) {
	s := string(n)
	ip, fp, hasDot := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE+") || len(ip) == 0 || len(ip) > 15 || len(fp) > 3 || (hasDot && len(fp) == 0) {
		return usToNS(n)
	}
	i, err := strconv.ParseInt(ip, 10, 64)
	if err != nil {
		return usToNS(n)
	}
	f := int64(0)
	if len(fp) > 0 {
		fs := fp + strings.Repeat("0", 3-len(fp))
		v, err := strconv.ParseInt(fs, 10, 64)
		if err != nil || v < 0 {
			return usToNS(n)
		}
		f = v
	}
	if strings.HasPrefix(ip, "-") {
		return i*1000 - f, true
	}
	return i*1000 + f, true
}

// exactNS reports whether the microsecond literal n converts to integer
// nanoseconds without dropping sub-nanosecond digits.
func exactNS(n json.Number) bool {
	s := string(n)
	_, fp, _ := strings.Cut(s, ".")
	if !strings.ContainsAny(s, "eE") && len(strings.TrimRight(fp, "0")) <= 3 {
		return true
	}
	if !boundedExponent(s) {
		return false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	return r.Mul(r, big.NewRat(1000, 1)).IsInt()
}

// traceDecoder reads one trace event object at a time from a jsontext
// stream without decoding through reflection: name, cat and ph (JSON
// strings or null), ts and dur (JSON numbers, strings holding a JSON
// number, or null; kept as their literal), pid and tid (any JSON value,
// kept raw) and args (kept raw, in a buffer reused for the next event:
// only metadata events read it, before the next event is decoded). Keys
// match exactly (as JavaScript importers read them); for a repeated key
// the last value wins. Strings and pid/tid literals repeat across
// events, so up to maxInterned distinct ones are shared.
type traceDecoder struct {
	strs map[string]string
	raws map[string]rawID
	args []byte
	tmp  []byte
}

const maxInterned = 1 << 16

// heldEventBytes is what one held trace event costs (its traceEvent and
// start, rounded up).
const heldEventBytes = 256

// decode reads the next event into ev. On error it returns what was
// wrong with the event ("is cut off or is not a JSON object", "has a
// name that is not a string").
func (d *traceDecoder) decode(dec *jtext.Decoder, ev *traceEvent) (string, error) {
	const cutOff = "is cut off or is not a JSON object"
	if dec.PeekKind() != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return cutOff, err
		}
		return "is not a JSON object", errNotObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return cutOff, err
	}
	for dec.PeekKind() != '}' {
		k, err := dec.ReadValue()
		if err != nil {
			return cutOff, err
		}
		field := traceFieldOf(k)
		v, err := dec.ReadValue()
		if err != nil {
			return cutOff, err
		}
		switch field {
		case "name", "cat", "ph":
			var s string
			switch v.Kind() {
			case '"':
				s = d.str(v)
			case 'n':
			default:
				return "has a " + field + " that is not a string", errNotObject
			}
			known := v.Kind() == '"'
			switch field {
			case "name":
				ev.Name, ev.hasName = s, known
			case "cat":
				ev.Cat, ev.hasCat = s, known
			default:
				ev.Ph = s
			}
		case "ts", "dur":
			var n json.Number
			switch v.Kind() {
			case '0':
				n = json.Number(v)
			case '"':
				u := d.str(v)
				if nv := jtext.Value(u); u == "" || u != strings.TrimSpace(u) || nv.Kind() != '0' || !nv.IsValid() {
					return "has a " + field + " string that is not a JSON number", errNotObject
				}
				n = json.Number(u)
			case 'n':
			default:
				return "has a " + field + " that is not a number", errNotObject
			}
			if field == "ts" {
				ev.Ts = n
			} else {
				ev.Dur = n
			}
		case "pid", "tid":
			r, text := d.raw(v)
			if field == "pid" {
				ev.Pid, ev.pidText = r, text
			} else {
				ev.Tid, ev.tidText = r, text
			}
		case "args":
			d.args = append(d.args[:0], v...)
			ev.Args = d.args
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return cutOff, err
	}
	ev.hasIDs = true
	return "", nil
}

var errNotObject = errors.New("not a trace event")

// traceFieldOf is the trace event field a raw object key names, or "".
func traceFieldOf(k jtext.Value) string {
	if bytes.IndexByte(k, '\\') >= 0 {
		u, _ := jtext.AppendUnquote(nil, k)
		k = u
	} else if len(k) >= 2 {
		k = k[1 : len(k)-1]
	}
	switch string(k) {
	case "name":
		return "name"
	case "cat":
		return "cat"
	case "ph":
		return "ph"
	case "ts":
		return "ts"
	case "dur":
		return "dur"
	case "pid":
		return "pid"
	case "tid":
		return "tid"
	case "args":
		return "args"
	}
	return ""
}

// str is the value of the JSON string literal v (invalid UTF-8 replaced
// by U+FFFD, as encoding/json does), shared when seen before.
func (d *traceDecoder) str(v jtext.Value) string {
	var u []byte
	if in := v[1 : len(v)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		u = in
	} else {
		d.tmp, _ = jtext.AppendUnquote(d.tmp[:0], v)
		u = d.tmp
	}
	if s, ok := d.strs[string(u)]; ok {
		return s
	}
	s := string(u)
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	if len(d.strs) < maxInterned {
		d.strs[s] = s
	}
	return s
}

// raw is a copy of v and its idString, shared when seen before.
func (d *traceDecoder) raw(v jtext.Value) (json.RawMessage, string) {
	if r, ok := d.raws[string(v)]; ok {
		return r.raw, r.text
	}
	r := rawID{json.RawMessage(append([]byte(nil), v...)), ""}
	r.text = idString(r.raw)
	if d.raws == nil {
		d.raws = map[string]rawID{}
	}
	if len(d.raws) < maxInterned {
		d.raws[string(r.raw)] = r
	}
	return r.raw, r.text
}

// rawID is a pid or tid value and its text.
type rawID struct {
	raw  json.RawMessage
	text string
}

// threadID is a thread of a trace: the pid and tid as text (idString),
// and whether each is unknown (absent or null in the event).
type threadID struct {
	pid, tid     string
	noPid, noTid bool
}

// thread is ev's pid and tid as text.
func (ev *traceEvent) thread() threadID {
	if ev.hasIDs {
		return threadID{ev.pidText, ev.tidText, unknownID(ev.Pid), unknownID(ev.Tid)}
	}
	return threadID{idString(ev.Pid), idString(ev.Tid), unknownID(ev.Pid), unknownID(ev.Tid)}
}

// unknownID reports a pid or tid that is absent or null.
func unknownID(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// orNull is s, or nil (JSON null: unknown) when unknown.
func orNull(s string, unknown bool) any {
	if unknown {
		return nil
	}
	return s
}

// idString is a pid or tid as text: a JSON string's value, else the
// literal (a number as written).
func idString(raw json.RawMessage) string {
	if unknownID(raw) {
		return ""
	}
	if raw[0] != '"' {
		return string(raw)
	}
	if in := raw[1 : len(raw)-1]; len(raw) >= 2 && bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

type traceAgg struct {
	key string
	// unknown marks the category of events without cat.
	unknown   bool
	th        threadID
	name      string
	events    int64
	overlapNS int64
}

type traceWindowResult struct {
	rows       []any
	selected   int64
	threads    map[string]*traceAgg
	cats       map[string]*traceAgg
	total      int64
	unselect   int64
	unmatched  int64
	threadName map[string]string
	minTS      int64
	maxTS      int64
}

// traceScan counts what scanTrace read.
type traceScan struct {
	total, unselect, unmatched int64
	// noDur counts X events without dur; they end at the trace's last
	// timestamp (the catapult importer's didNotFinish slices).
	noDur int64
	// unclosed counts B events no E closed; like X events without dur
	// they end at the trace's last timestamp, did not finish.
	unclosed int64
	// mismatched counts E events whose name differs from the B they
	// closed (the catapult importer pairs them too, with a warning).
	mismatched int64
	// firstNS and lastNS are the earliest and latest timestamps of the
	// trace's events (span ends included); valid when hasClock.
	firstNS, lastNS int64
	hasClock        bool
	// gzip is true when the file was one gzip stream, inflated here.
	gzip bool
	// unterminated is true when the array form ended without "]" (or
	// with a trailing comma), which the Trace Event Format allows.
	unterminated bool
	truncated    int64
}

// lenientTail lets the array form of a Chrome trace end the way the
// Trace Event Format and the catapult importer allow: without the closing
// "]", with a trailing comma, and with trailing whitespace. It passes each
// chunk it reads through except the chunk's trailing run of whitespace and
// at most one comma, which it holds back until more input follows; at end
// of input it drops that run and supplies the missing "]". The result does
// not depend on how the input is chunked (FuzzLenientTail), except that a
// held run longer than 1 MiB is released as it is. The object form is passed
// through unchanged.
type lenientTail struct {
	r       io.Reader
	started bool
	array   bool
	pending []byte // whitespace and at most one comma not yet emitted
	comma   bool   // pending holds a comma
	last    byte   // last emitted non-whitespace byte
	eof     bool
	out     []byte // bytes ready for the caller
	obuf    []byte // out's buffer, reused once out is read
	buf     []byte
	fixed   bool // the tail was changed
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func (l *lenientTail) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.eof {
			return 0, io.EOF
		}
		if cap(l.buf) < len(p) {
			l.buf = make([]byte, max(len(p), 4096))
		}
		l.buf = l.buf[:cap(l.buf)]
		n, err := l.r.Read(l.buf[:len(p)])
		l.take(l.buf[:n])
		if err == io.EOF {
			l.eof = true
			if l.array && (l.last != ']' || l.comma) {
				// Drop the trailing comma and whitespace and close the
				// array unless it ends with "]" (catapult's fix-up).
				l.fixed = true
				if l.last != ']' {
					l.out = append(l.out, ']')
				}
			} else {
				l.out = append(l.out, l.pending...)
			}
			l.pending = l.pending[:0]
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}

// take queues chunk c: all of it for the object form; for the array form
// everything but its trailing run of whitespace and at most one comma
// (joined to the run still held when c is all such bytes).
func (l *lenientTail) take(c []byte) {
	l.out = l.obuf[:0]
	defer func() { l.obuf = l.out[:0] }()
	if !l.started {
		i := 0
		for i < len(c) && isJSONSpace(c[i]) {
			i++
		}
		if i == len(c) {
			l.out = append(l.out, c...)
			return
		}
		l.started, l.array = true, c[i] == '['
	}
	if !l.array {
		l.out = append(l.out, c...)
		return
	}
	// k: start of c's trailing run of whitespace and at most one comma.
	k, comma := len(c), false
	for k > 0 && (isJSONSpace(c[k-1]) || (c[k-1] == ',' && !comma)) {
		comma = comma || c[k-1] == ','
		k--
	}
	if k == 0 && !(comma && l.comma) && len(l.pending)+len(c) <= 1<<20 {
		// c only extends the held run.
		l.pending = append(l.pending, c...)
		l.comma = l.comma || comma
		return
	}
	if k == 0 && comma && l.comma {
		// A second comma (the decoder reports it): the held run up to
		// its comma is released, the rest joins c's run.
		i := bytes.IndexByte(l.pending, ',')
		l.out = append(l.out, l.pending[:i+1]...)
		l.last = ','
		l.pending = append(append([]byte(nil), l.pending[i+1:]...), c...)
		return
	}
	// The held run is followed by other bytes or has passed 1 MiB:
	// release it.
	l.out = append(l.out, l.pending...)
	l.out = append(l.out, c[:k]...)
	for i := len(l.out) - 1; i >= 0; i-- {
		if !isJSONSpace(l.out[i]) {
			l.last = l.out[i]
			break
		}
	}
	l.pending = append(l.pending[:0], c[k:]...)
	l.comma = comma
}

// scanTrace streams the trace events of r and calls emit for every
// span or instant it reconstructs. It is the Chrome trace decoder.
// X events without dur are visited last, ending at the largest timestamp
// of the trace (ev.didNotFinish).
func scanTrace(ctx context.Context, r io.Reader, memCap int64, visit func(ev *traceEvent, start, end int64, instant bool) error, meta func(ev *traceEvent)) (traceScan, error) {
	var st traceScan
	// One gzip layer is inflated, as the catapult and speedscope
	// importers do (streamed: the decoder's memory bounds hold for the
	// inflated bytes); gzip inside gzip is refused, as for profiles.
	br := bufio.NewReaderSize(r, 64<<10)
	if h, _ := br.Peek(2); len(h) == 2 && h[0] == 0x1f && h[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return st, decodeFail("the Chrome trace is not a valid gzip stream: %v", sanitize(err)).WithDetail("recognized", "gzip")
		}
		defer gz.Close()
		st.gzip = true
		br = bufio.NewReaderSize(gz, 64<<10)
		if h, _ := br.Peek(2); len(h) == 2 && h[0] == 0x1f && h[1] == 0x8b {
			return st, decodeFail("the Chrome trace is gzip inside gzip; one gzip layer is read (gunzip it once first)").WithDetail("recognized", "gzip inside gzip")
		}
	}
	// A UTF-8 byte-order mark is skipped (offsets then count from after
	// it, lead bytes later); empty, UTF-16 and UTF-32 input is named.
	bom, prob := jsontext.Sniff(br)
	if prob != nil {
		return st, decodeFail("%s", prob.Message("the Chrome trace")).WithDetail("problem", prob.Kind)
	}
	lead := int64(0)
	if bom {
		lead = int64(len(jsontext.UTF8BOM))
	}
	lt := &lenientTail{r: br}
	g := newJSONGuard(bufio.NewReaderSize(lt, 64<<10), "the Chrome trace", 0, 0)
	dec := jtext.NewDecoder(g, jtext.AllowDuplicateNames(true), jtext.AllowInvalidUTF8(true))
	form := "JSON"
	bad := func(what string) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if g.err != nil {
			return g.err
		}
		if st.gzip {
			// A damaged or truncated gzip stream, not malformed JSON.
			if _, err := br.Peek(1); err != nil && err != io.EOF {
				return decodeFail("the gzip-compressed Chrome trace could not be inflated: %v", sanitize(err)).WithDetail("recognized", "gzip")
			}
		}
		off := lead + dec.InputOffset()
		return decodeFail("the Chrome trace (%s) is malformed near byte %d: %s; the catapult trace importer rejects it too", form, off, what).WithDetail("offset", off).WithDetail("recognized", form)
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return st, bad("it does not start with a JSON value")
	}
	d := tok.Kind()
	if d != '{' && d != '[' {
		return st, decodeFail("a Chrome trace is a JSON array of events or an object with traceEvents")
	}
	// From here on one event (below the events array) may hold at most
	// limits.max_memory_bytes; bytes the guard already scanned are within
	// the first read buffer.
	g.maxElem, g.elemDepth = memCap, 1
	if d == '{' {
		form = "object form"
		g.elemDepth = 2
		found := false
		for dec.PeekKind() != '}' {
			kt, err := dec.ReadToken()
			if err != nil {
				return st, bad("an object key is invalid")
			}
			if kt.String() == "traceEvents" {
				t, err := dec.ReadToken()
				if err != nil || t.Kind() != '[' {
					return st, decodeFail("traceEvents is not an array")
				}
				found = true
				break
			}
			if err := dec.SkipValue(); err != nil {
				return st, bad("a top-level value is invalid")
			}
		}
		if !found {
			return st, decodeFail("the trace object has no traceEvents array")
		}
	} else {
		form = "array form"
	}
	var dc traceDecoder
	var ev traceEvent // one event at a time; B and deferred X events are copied
	type open struct {
		ev    traceEvent
		start int64
		seq   int64 // the B's event index
	}
	stacks := map[threadID][]open{}
	var deferred []traceEvent
	var deferredStart []int64
	// heldBytes accounts the events held until their end is known (open
	// B events and X events without dur) against limits.max_memory_bytes;
	// their strings are shared, so each counts its struct.
	var heldBytes int64
	maxTS := int64(math.MinInt64)
	minTS := int64(math.MaxInt64)
	for i := int64(0); dec.PeekKind() != ']'; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return st, ctx.Err()
		}
		ev = traceEvent{}
		if what, err := dc.decode(dec, &ev); err != nil {
			if g.err != nil {
				return st, g.err
			}
			return st, bad(fmt.Sprintf("trace event %d %s", i, what))
		}
		st.total++
		if ev.Ph == "M" {
			meta(&ev)
			continue
		}
		ts, ok := fastUsToNS(ev.Ts)
		if !ok {
			if ev.Ts == "" && (ev.Ph == "" || strings.ContainsAny(ev.Ph, "XBEiInC")) {
				return st, decodeFail("trace event %d has no numeric ts", i).WithDetail("event", i)
			}
			st.unselect++
			continue
		}
		if !exactNS(ev.Ts) || (ev.Dur != "" && !exactNS(ev.Dur)) {
			st.truncated++
		}
		maxTS = max(maxTS, ts)
		minTS = min(minTS, ts)
		switch ev.Ph {
		case "X":
			if ev.Dur == "" {
				// Like catapult: a slice that did not finish, closed at
				// the end of the trace once that is known.
				st.noDur++
				heldBytes += heldEventBytes
				if heldBytes > memCap {
					return st, contract.Errorf(contract.CodeLimitExceeded, "the trace holds more open B events and X events without dur than limits.max_memory_bytes allows")
				}
				ev.didNotFinish = true
				ev.Args = nil // args are read for metadata events only
				deferred = append(deferred, ev)
				deferredStart = append(deferredStart, ts)
				continue
			}
			dur, ok := fastUsToNS(ev.Dur)
			if !ok || dur < 0 {
				return st, decodeFail("trace event %d has an invalid dur", i).WithDetail("event", i)
			}
			maxTS = max(maxTS, satAdd(ts, dur))
			if err := visit(&ev, ts, satAdd(ts, dur), false); err != nil {
				return st, err
			}
		case "B":
			th := ev.thread()
			ev.Args = nil // args are read for metadata events only
			heldBytes += heldEventBytes
			if heldBytes > memCap {
				return st, contract.Errorf(contract.CodeLimitExceeded, "the trace holds more open B events and X events without dur than limits.max_memory_bytes allows")
			}
			stacks[th] = append(stacks[th], open{ev, ts, i})
		case "E":
			th := ev.thread()
			sk := stacks[th]
			if len(sk) == 0 {
				st.unmatched++
				continue
			}
			o := sk[len(sk)-1]
			if ts < o.start {
				// An E before the B it would close: unmatched, like
				// speedscope (which ignores it); the B stays open.
				st.unmatched++
				continue
			}
			stacks[th] = sk[:len(sk)-1]
			heldBytes -= heldEventBytes
			if !o.ev.hasName {
				o.ev.Name, o.ev.hasName = ev.Name, ev.hasName
			} else if ev.hasName && ev.Name != o.ev.Name {
				// Paired all the same, as catapult does (it warns).
				st.mismatched++
			}
			if err := visit(&o.ev, o.start, ts, false); err != nil {
				return st, err
			}
		case "i", "I", "n", "C":
			if err := visit(&ev, ts, ts, true); err != nil {
				return st, err
			}
		default:
			st.unselect++
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return st, bad("the events array does not end properly")
	}
	st.unterminated = lt.fixed
	for i := range deferred {
		if err := visit(&deferred[i], deferredStart[i], max(maxTS, deferredStart[i]), false); err != nil {
			return st, err
		}
	}
	// B events still open when the trace stopped: like catapult, slices
	// that did not finish, ending at the trace's last timestamp; visited
	// in the order of their B events.
	var unclosed []open
	for _, sk := range stacks {
		unclosed = append(unclosed, sk...)
	}
	sort.Slice(unclosed, func(i, j int) bool { return unclosed[i].seq < unclosed[j].seq })
	for i := range unclosed {
		o := &unclosed[i]
		st.unclosed++
		o.ev.didNotFinish = true
		if err := visit(&o.ev, o.start, max(maxTS, o.start), false); err != nil {
			return st, err
		}
	}
	if minTS <= maxTS {
		st.firstNS, st.lastNS, st.hasClock = minTS, maxTS, true
	}
	return st, nil
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func runTraceWindow(ctx context.Context, req *Request, a *traceFields) (*Output, error) {
	start, err := a.StartNS.value("start_ns")
	if err != nil {
		return nil, err
	}
	end, err := a.EndNS.value("end_ns")
	if err != nil {
		return nil, err
	}
	if end <= start {
		return nil, fieldErr(contract.CodeInvalidArgument, "/end_ns", "end_ns must be greater than start_ns")
	}
	view := a.View
	if view == "" {
		view = "events"
	}
	f, err := os.Open(req.Inputs[0].file)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "the source can no longer be read")
	}
	defer f.Close()
	p := newPager(req, req.Start.Row)
	threads := map[threadID]*traceAgg{}
	cats := map[string]*traceAgg{}
	names := map[threadID]string{}
	// noCat counts the events without cat (category null).
	var noCat *traceAgg
	var selected, outside int64
	hasMore := false
	visit := func(ev *traceEvent, s, e int64, instant bool) error {
		var ov int64
		if instant {
			if s < start || s >= end {
				outside++
				return nil
			}
		} else {
			if !(s < end && e > start) && !(s == e && s >= start && s < end) {
				outside++
				return nil
			}
			ov = min(e, end) - max(s, start)
			if ov < 0 {
				ov = 0
			}
		}
		selected++
		th := ev.thread()
		if len(threads) < 1<<20 {
			a := threads[th]
			if a == nil {
				a = &traceAgg{key: th.pid + "/" + th.tid, th: th}
				threads[th] = a
			}
			a.events++
			a.overlapNS += ov
		}
		if !ev.hasCat {
			if noCat == nil {
				noCat = &traceAgg{unknown: true}
			}
			noCat.events++
			noCat.overlapNS += ov
		}
		for rest, more := ev.Cat, ev.hasCat; more; {
			// Each comma-separated category (strings.Split without
			// the slice).
			var c string
			c, rest, more = strings.Cut(rest, ",")
			a := cats[c]
			if a == nil && len(cats) < 1<<20 {
				a = &traceAgg{key: c}
				cats[c] = a
			}
			if a != nil {
				a.events++
				a.overlapNS += ov
			}
		}
		if view == "events" {
			if p.full() && p.seen >= p.start {
				hasMore = true
			}
			ph, name, cat, dnf := ev.Ph, orNull(ev.Name, !ev.hasName), orNull(ev.Cat, !ev.hasCat), ev.didNotFinish
			pid, tid := orNull(th.pid, th.noPid), orNull(th.tid, th.noTid)
			if ph == "B" {
				ph = "B/E"
			}
			if p.seen >= p.start && p.full() {
				hasMore = true
			}
			idx := p.seen
			if !p.offer(func() any {
				row := map[string]any{"event": idx, "name": name, "cat": cat, "ph": ph, "pid": pid, "tid": tid,
					"ts_ns": contract.Int(s), "end_ns": contract.Int(e), "dur_ns": contract.Int(e - s), "overlap_ns": contract.Int(ov)}
				if dnf {
					row["did_not_finish"] = true
				}
				return row
			}) {
				hasMore = true
				p.seen++ // later events keep their indices
			}
		}
		return nil
	}
	meta := func(ev *traceEvent) {
		if ev.Name == "thread_name" && len(names) < 1<<20 {
			var a struct {
				Name *string `json:"name"`
			}
			if json.Unmarshal(ev.Args, &a) == nil && a.Name != nil {
				names[ev.thread()] = *a.Name
			}
		}
	}
	sc, err := scanTrace(ctx, ctxReader{ctx, f}, req.Limits.MaxMemoryBytes, visit, meta)
	if err != nil {
		return nil, err
	}
	total, unselect, unmatched, truncated := sc.total, sc.unselect, sc.unmatched, sc.truncated
	if p.err != nil {
		return nil, p.err
	}
	aggRows := func(list []*traceAgg, thread bool) []any {
		sort.Slice(list, func(i, j int) bool {
			if list[i].overlapNS != list[j].overlapNS {
				return list[i].overlapNS > list[j].overlapNS
			}
			if list[i].key != list[j].key {
				return list[i].key < list[j].key
			}
			if list[i].unknown != list[j].unknown {
				return list[j].unknown
			}
			return list[i].th.pid < list[j].th.pid
		})
		rows := make([]any, len(list))
		for i, a := range list {
			r := map[string]any{"events": contract.Int(a.events), "overlap_ns": contract.Int(a.overlapNS)}
			if thread {
				// thread_name is null when no thread_name metadata
				// event names the thread (unknown, not "").
				var name any
				if n, ok := names[a.th]; ok {
					name = n
				}
				r["pid"], r["tid"], r["thread_name"] = orNull(a.th.pid, a.th.noPid), orNull(a.th.tid, a.th.noTid), name
			} else {
				// category is null for events without cat.
				r["category"] = orNull(a.key, a.unknown)
			}
			rows[i] = r
		}
		return rows
	}
	var out *Output
	switch view {
	case "threads":
		list := make([]*traceAgg, 0, len(threads))
		for _, a := range threads {
			list = append(list, a)
		}
		out, err = page(aggRows(list, true), req)
	case "categories":
		list := make([]*traceAgg, 0, len(cats)+1)
		for _, a := range cats {
			list = append(list, a)
		}
		if noCat != nil {
			list = append(list, noCat)
		}
		out, err = page(aggRows(list, false), req)
	default:
		out = &Output{Rows: p.rows, Total: selected}
		if hasMore {
			out.Next = &evidence.Position{Row: p.start + int64(len(p.rows))}
		}
	}
	if err != nil {
		return nil, err
	}
	if view == "events" && !req.Resuming && len(p.rows) == 0 && p.start > 0 {
		return nil, fieldErr(contract.CodeInvalidArgument, "/continuation", "no events at this position")
	}
	categories := len(cats)
	if noCat != nil {
		categories++ // the null category of events without cat
	}
	out.Summary = map[string]any{"window": map[string]any{"start_ns": contract.Int(start), "end_ns": contract.Int(end), "duration_ns": contract.Int(end - start)},
		"view": view, "events_in_window": contract.Int(selected), "events_outside_window": contract.Int(outside),
		"threads": len(threads), "categories": categories, "trace_events": contract.Int(total)}
	// The trace clock's range (negative timestamps included), null for a
	// trace without timed events.
	var first, last any
	if sc.hasClock {
		first, last = contract.Int(sc.firstNS), contract.Int(sc.lastNS)
	}
	out.Summary["trace_clock"] = map[string]any{"first_ns": first, "last_ns": last}
	if sc.gzip {
		out.Summary["compression"] = "gzip"
	}
	if out.Coverage == nil {
		out.Coverage = map[string]any{}
	}
	out.Coverage["events_not_selectable"] = contract.Int(unselect)
	out.Coverage["unmatched_begin_end"] = contract.Int(unmatched)
	out.Coverage["events_outside_window"] = contract.Int(outside)
	p.noteBudget(out)
	if truncated > 0 {
		out.Coverage["sub_ns_truncated_events"] = contract.Int(truncated)
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d event(s) have ts or dur with digits below one nanosecond; they were truncated toward zero to whole nanoseconds (see coverage.sub_ns_truncated_events)", truncated))
	}
	if unmatched > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d E event(s) had no open B on their thread and were not selected; see coverage.unmatched_begin_end", unmatched))
	}
	out.Coverage["unclosed_begin_events"] = contract.Int(sc.unclosed)
	if sc.unclosed > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d B event(s) have no E; like the catapult importer they did not finish and end at the trace's last timestamp (rows with did_not_finish: true; see coverage.unclosed_begin_events)", sc.unclosed))
	}
	out.Coverage["mismatched_end_names"] = contract.Int(sc.mismatched)
	if sc.mismatched > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d E event(s) closed a B of another name; like the catapult importer each closed the innermost open B of its thread, which keeps its own name (see coverage.mismatched_end_names)", sc.mismatched))
	}
	out.Coverage["complete_events_without_dur"] = contract.Int(sc.noDur)
	if sc.noDur > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d X event(s) have no dur; like the catapult importer they did not finish and end at the trace's last timestamp (rows with did_not_finish: true; see coverage.complete_events_without_dur)", sc.noDur))
	}
	if sc.unterminated {
		out.Coverage["array_unterminated"] = true
	}
	return out, nil
}

// boundedExponent reports whether a JSON number literal is short and has an
// exponent within ±40, so big.Rat never expands 1e999999999.
func boundedExponent(s string) bool {
	if len(s) > 64 {
		return false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		return err == nil && e <= 40 && e >= -40
	}
	return true
}
