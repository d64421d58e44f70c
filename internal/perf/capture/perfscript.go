package capture

import (
	"bufio"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
)

// PerfScriptFields is the -F field list FoldPerfScript reads:
// `perf script -F comm,ip,sym` prints one header line per sample (the
// thread's comm, followed by a space) and, for a sample recorded with -g,
// one tab-indented "ADDRESS SYMBOL" line per callchain frame, leaf first,
// then a blank line.
const PerfScriptFields = "comm,ip,sym"

// FoldStats counts what FoldPerfScript read.
type FoldStats struct {
	// Samples is the number of samples folded (each counts 1, as perf's
	// own stackcollapse script counts them).
	Samples int64 `json:"samples"`
	// Stacks is the number of distinct folded stacks.
	Stacks int `json:"stacks"`
	// Frames is the number of callchain frames read.
	Frames int64 `json:"frames"`
	// SkippedLines counts lines that are neither a header, a frame nor
	// blank (e.g. a frame line without an address); they are not folded.
	SkippedLines int64 `json:"skipped_lines"`
}

// ErrNoSamples is returned by FoldPerfScript when the input has no sample.
var ErrNoSamples = errors.New("perf script printed no samples")

// FoldPerfScript folds `perf script -F comm,ip,sym` text from r into
// collapsed stacks written to w, one "comm;root;...;leaf COUNT" line per
// distinct stack in byte order: the same lines perf's stackcollapse.py
// (`perf script -s .../stackcollapse.py`) prints with its defaults. The
// comm has spaces replaced by "_"; a symbol perf could not resolve is
// "[unknown]"; ";" inside a symbol becomes ":". Lines longer than 1 MiB are
// an error.
func FoldPerfScript(r io.Reader, w io.Writer) (FoldStats, error) {
	var st FoldStats
	counts := map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var comm string
	var frames []string
	in := false
	flush := func() {
		if !in {
			return
		}
		parts := make([]string, 0, len(frames)+1)
		parts = append(parts, strings.ReplaceAll(comm, " ", "_"))
		for i := len(frames) - 1; i >= 0; i-- {
			parts = append(parts, frames[i])
		}
		counts[strings.Join(parts, ";")]++
		st.Samples++
		in, frames = false, frames[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == '\t' || line[0] == ' ' && in:
			if !in {
				st.SkippedLines++
				continue
			}
			f := strings.TrimSpace(line)
			addr, sym, ok := strings.Cut(f, " ")
			if _, err := strconv.ParseUint(addr, 16, 64); err != nil {
				st.SkippedLines++
				continue
			}
			sym = strings.TrimSpace(sym)
			if !ok || sym == "" {
				sym = "[unknown]"
			}
			frames = append(frames, strings.ReplaceAll(sym, ";", ":"))
			st.Frames++
		default:
			flush()
			comm, in = strings.TrimSpace(line), true
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return st, err
	}
	if st.Samples == 0 {
		return st, ErrNoSamples
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	st.Stacks = len(keys)
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		bw.WriteString(k)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatInt(counts[k], 10))
		bw.WriteByte('\n')
	}
	return st, bw.Flush()
}
