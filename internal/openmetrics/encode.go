package openmetrics

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// Format is an exposition format.
type Format int

// Exposition formats.
const (
	// OpenMetrics is the OpenMetrics 1.0 text format: TYPE, UNIT and HELP
	// per family, counters' samples named _total, timestamps in seconds
	// with millisecond decimals, and a final "# EOF" line.
	OpenMetrics Format = iota
	// Text is the Prometheus text format 0.0.4 (what `promtool check
	// metrics` and a plain curl read): HELP and TYPE on the sample name,
	// no UNIT, timestamps in integer milliseconds, no "# EOF".
	Text
)

// Content types of the formats, as served on /metrics.
const (
	ContentTypeOpenMetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8"
	ContentTypeText        = "text/plain; version=0.0.4; charset=utf-8"
)

// ContentType returns the HTTP Content-Type of format f.
func (f Format) ContentType() string {
	if f == Text {
		return ContentTypeText
	}
	return ContentTypeOpenMetrics
}

// Encoder writes one exposition. Families must be written whole, one
// after another (Header, then every sample of that family), each label
// set's samples in time order. Errors are sticky: Close returns the first.
type Encoder struct {
	w   *bufio.Writer
	f   Format
	buf []byte
}

// NewEncoder returns an encoder writing format f to w (buffered; Close
// flushes).
func NewEncoder(w io.Writer, f Format) *Encoder {
	return &Encoder{w: bufio.NewWriterSize(w, 1<<16), f: f, buf: make([]byte, 0, 256)}
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// Header writes the metadata of a family named name (the family name; a
// counter's samples carry name_total): TYPE, UNIT (OpenMetrics only,
// when unit is not "") and HELP.
func (e *Encoder) Header(name, typ, unit, help string) {
	help = helpEscaper.Replace(help)
	if e.f == Text {
		sn := name
		if typ == TypeCounter {
			sn += "_total"
		}
		e.w.WriteString("# HELP " + sn + " " + help + "\n# TYPE " + sn + " " + typ + "\n")
		return
	}
	e.w.WriteString("# TYPE " + name + " " + typ + "\n")
	if unit != "" {
		e.w.WriteString("# UNIT " + name + " " + unit + "\n")
	}
	e.w.WriteString("# HELP " + name + " " + help + "\n")
}

// FamilyHeader writes f's metadata (Header).
func (e *Encoder) FamilyHeader(f Family) { e.Header(f.Name, f.Type, f.Unit, f.Help) }

// Sample writes one sample of family f: labels as rendered by
// ProcessLabels ("" for none), the catalog value v (slot bits: integer
// or float64 bits by f.Metric.Repr) and its time in ms since the Unix
// epoch. A non-finite number is not written (ok false): the value is
// unavailable, never a made-up one.
func (e *Encoder) Sample(f Family, labels string, v uint64, ms int64) (ok bool) {
	b := e.buf[:0]
	b = append(b, f.SampleName()...)
	b = append(b, labels...)
	b = append(b, ' ')
	var good bool
	if b, good = AppendValue(b, f, v); !good {
		return false
	}
	b = append(b, ' ')
	b = e.appendTime(b, ms)
	b = append(b, '\n')
	e.w.Write(b)
	e.buf = b
	return true
}

// Gauge writes one sample of an untimed gauge (the exporter's own
// metrics): name labels value, no timestamp (the scrape's time).
func (e *Encoder) Gauge(name, labels string, v int64) {
	b := e.buf[:0]
	b = append(b, name...)
	b = append(b, labels...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, v, 10)
	b = append(b, '\n')
	e.w.Write(b)
	e.buf = b
}

func (e *Encoder) appendTime(b []byte, ms int64) []byte {
	if e.f == Text {
		return strconv.AppendInt(b, ms, 10)
	}
	s, frac := floorDiv(ms, 1000), floorMod(ms, 1000)
	b = strconv.AppendInt(b, s, 10)
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}

// Close ends the exposition ("# EOF" in OpenMetrics) and flushes; it
// returns the first write error.
func (e *Encoder) Close() error {
	if e.f == OpenMetrics {
		e.w.WriteString("# EOF\n")
	}
	return e.w.Flush()
}

// AppendValue appends the exposition form of catalog value v of family f:
// an integer in decimal; nanoseconds (f.Nanos) as exact decimal seconds;
// a number in the shortest form that parses back to the same float64.
// ok is false for a non-finite number (nothing appended).
func AppendValue(b []byte, f Family, v uint64) ([]byte, bool) {
	if f.Metric.Repr == sample.ReprNumber {
		x := sample.AsFloat(v)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, false
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64), true
	}
	if !f.Nanos {
		return strconv.AppendUint(b, v, 10), true
	}
	b = strconv.AppendUint(b, v/1e9, 10)
	if frac := v % 1e9; frac != 0 {
		var d [10]byte
		d[0] = '.'
		for i := 9; i >= 1; i-- {
			d[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return b, true
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// ProcessLabels renders the label set of one process lifetime: name (the
// process name, escaped; bytes that are not UTF-8 become U+FFFD, as
// Prometheus takes only UTF-8 label values), pid, and start_time (the process start in
// seconds since the Unix epoch, with millisecond decimals, the precision
// recordings keep). These are the only labels: no command line, user or
// other field that may carry secrets.
func ProcessLabels(name string, pid int32, start time.Time) string {
	ms := start.UnixMilli()
	b := make([]byte, 0, 64+len(name))
	b = append(b, `{name="`...)
	b = append(b, labelEscaper.Replace(strings.ToValidUTF8(name, "\uFFFD"))...)
	b = append(b, `",pid="`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `",start_time="`...)
	b = strconv.AppendInt(b, floorDiv(ms, 1000), 10)
	frac := floorMod(ms, 1000)
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10), '"', '}')
	return string(b)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
