package bin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"regexp"
	"unicode/utf16"
)

// Encodings searched by SearchStrings.
const (
	EncASCII   = "ascii"
	EncUTF16LE = "utf16le"
)

// MaxStringText bounds the text returned for one string; longer strings are
// returned cut at this many characters with Truncated set and Length exact.
const MaxStringText = 1024

// MaxRegexChars bounds how much of one string a regex filter examines
// (1,048,576 characters): a regex is matched against the whole string up to
// this many characters, not only the MaxStringText returned. A longer string
// whose searched prefix does not match is counted as partly searched; the
// result is then partial with coverage.regex_partly_searched.
const MaxRegexChars = 1 << 20

// StringMatch is one printable run: its file offset, the virtual address
// and section when the offset lies in a section with an address, the
// encoding, its length in characters, and its text.
type StringMatch struct {
	Offset    string `json:"offset"`
	Address   string `json:"address,omitempty"`
	Section   string `json:"section,omitempty"`
	Encoding  string `json:"encoding"`
	Length    string `json:"length"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`

	start int
	end   int // byte offset after the run
}

// StringQuery selects strings: encodings, minimum length in characters, an
// optional compiled regex, and the byte region [Lo, Hi) of the file. When
// StartHi is above 0, only strings starting before file offset StartHi are
// yielded (a string may still extend past it, up to Hi): the range a
// cancelled scan examined, replayed.
type StringQuery struct {
	Encodings []string
	MinLength int
	Regex     *regexp.Regexp
	Lo, Hi    int
	StartHi   int
}

func printable(c byte) bool { return c == '\t' || (c >= 0x20 && c < 0x7f) }

// stringScanner yields runs of one encoding in offset order from pos.
type stringScanner struct {
	data  []byte
	pos   int
	hi    int
	enc   string
	min   int
	peekd *StringMatch
	done  bool
}

func (s *stringScanner) peek() *StringMatch {
	if s.peekd != nil || s.done {
		return s.peekd
	}
	d := s.data
	if s.enc == EncASCII {
		for i := s.pos; i < s.hi; {
			if !printable(d[i]) {
				i++
				continue
			}
			j := i
			for j < s.hi && printable(d[j]) {
				j++
			}
			if j-i >= s.min {
				s.pos = j
				s.peekd = &StringMatch{Encoding: EncASCII, start: i, end: j, Length: decU(uint64(j - i)), Text: clip(string(d[i:j]))}
				s.peekd.Truncated = j-i > MaxStringText
				return s.peekd
			}
			i = j
		}
	} else {
		for i := s.pos; i+1 < s.hi; {
			if !(printable(d[i]) && d[i+1] == 0) {
				i++
				continue
			}
			j := i
			for j+1 < s.hi && printable(d[j]) && d[j+1] == 0 {
				j += 2
			}
			n := (j - i) / 2
			if n >= s.min {
				s.pos = j
				u := make([]uint16, 0, min(n, MaxStringText))
				for k := i; k < j && len(u) < MaxStringText; k += 2 {
					u = append(u, uint16(d[k]))
				}
				s.peekd = &StringMatch{Encoding: EncUTF16LE, start: i, end: j, Length: decU(uint64(n)), Text: string(utf16.Decode(u)), Truncated: n > MaxStringText}
				return s.peekd
			}
			i++
		}
	}
	s.done = true
	return nil
}

func (s *stringScanner) next() *StringMatch {
	m := s.peek()
	s.peekd = nil
	return m
}

func clip(s string) string {
	if len(s) > MaxStringText {
		return s[:MaxStringText]
	}
	return s
}

// searchStrings returns up to limit matches starting at file offset from,
// in offset order, the offset of the next match (-1 when none remain) and
// how many examined strings were longer than MaxRegexChars and did not
// match in their searched prefix (only when q.Regex is set): those were
// searched only partly. in supplies section names and addresses for
// offsets. When ctx ends mid-scan it returns the matches found so far,
// the offset up to which every string was examined (a search resumed
// there misses none) and ctx's error.
func searchStrings(ctx context.Context, in *Inspection, data []byte, q StringQuery, from, limit int) ([]StringMatch, int, int, error) {
	var scanners []*stringScanner
	for _, e := range q.Encodings {
		scanners = append(scanners, &stringScanner{data: data, pos: max(from, q.Lo), hi: q.Hi, enc: e, min: q.MinLength})
	}
	var out []StringMatch
	partly := 0
	checked := 0 // the farthest scan position at the last poll of ctx
	for n := 0; ; n++ {
		// Poll every cancelCheckEvery strings and every
		// cancelCheckBytes scanned, so long strings do not delay it.
		far := 0
		for _, s := range scanners {
			far = max(far, s.pos)
		}
		if (n%cancelCheckEvery == 0 || far-checked >= cancelCheckBytes) && ctx.Err() != nil {
			return out, examined(scanners), partly, ctx.Err()
		} else if far-checked >= cancelCheckBytes {
			checked = far
		}
		var best *stringScanner
		for _, s := range scanners {
			if m := s.peek(); m != nil && (best == nil || m.start < best.peek().start) {
				best = s
			}
		}
		if best == nil || q.StartHi > 0 && best.peek().start >= q.StartHi {
			return out, -1, partly, nil
		}
		m := best.peek()
		if q.Regex != nil {
			ok, cut := regexMatch(q.Regex, data, m)
			if !ok {
				if cut {
					partly++
				}
				best.next()
				continue
			}
		}
		if len(out) == limit {
			return out, m.start, partly, nil
		}
		best.next()
		m.Offset = decU(uint64(m.start))
		locate(in, m)
		out = append(out, *m)
	}
}

// cancelCheckEvery is how many examined strings searchStrings scans
// between polls of its context (a variable so tests can poll every
// string).
var cancelCheckEvery = 4096

// cancelCheckBytes is how many bytes searchStrings scans, at most,
// between polls of its context.
const cancelCheckBytes = 1 << 20

// examined is the offset before which the scanners have yielded every
// string: the least start of a string peeked but not consumed, else the
// least scan position of a scanner not done.
func examined(scanners []*stringScanner) int {
	lo := -1
	for _, s := range scanners {
		p := s.hi
		switch {
		case s.peekd != nil:
			p = s.peekd.start
		case !s.done:
			p = s.pos
		}
		if lo < 0 || p < lo {
			lo = p
		}
	}
	return lo
}

// regexMatch matches re against m's whole text (its bytes in data), up to
// MaxRegexChars characters; cut reports that the string was longer than
// that bound.
func regexMatch(re *regexp.Regexp, data []byte, m *StringMatch) (ok, cut bool) {
	if m.end <= m.start {
		return re.MatchString(m.Text), false
	}
	if m.Encoding == EncASCII {
		end := m.end
		if end-m.start > MaxRegexChars {
			end, cut = m.start+MaxRegexChars, true
		}
		return re.Match(data[m.start:end]), cut
	}
	n := (m.end - m.start) / 2
	if n > MaxRegexChars {
		n, cut = MaxRegexChars, true
	}
	b := make([]byte, n)
	for k := range n {
		b[k] = data[m.start+2*k]
	}
	return re.Match(b), cut
}

// locate fills a match's section and address from the section table.
func locate(in *Inspection, m *StringMatch) {
	for i := range in.Sections {
		s := &in.Sections[i]
		if s.Content != "file_bytes" {
			continue
		}
		off, err1 := parseDec(s.Offset)
		size, err2 := parseDec(s.FileSize)
		if err1 != nil || err2 != nil {
			continue
		}
		if uint64(m.start) >= off && uint64(m.start) < off+size {
			m.Section = s.Name
			if a, err := parseHex(s.Address); err == nil && a != 0 {
				m.Address = hexU(a + uint64(m.start) - off)
			}
			return
		}
	}
}

// stringSection returns the file byte region [lo, hi) of the section named
// name (its name or "segment,name" key) for search_strings. A section whose
// bytes run past the end of the file is searched over the part inside it,
// and limit says what was left out. A name missing from a completely read
// section table is INVALID_ARGUMENT (field /section); missing from a partly
// read one, it is an unknownAnswer.
func stringSection(in *Inspection, size int, name string) (lo, hi int, region, limit string, err error) {
	if e := ambiguousSection(in, name); e != nil {
		return 0, 0, "", "", e
	}
	for i := range in.Sections {
		s := &in.Sections[i]
		if s.Name != name && sectionKey(*s) != name {
			continue
		}
		off, err1 := parseDec(s.Offset)
		switch {
		case s.Content == "file_bytes":
			return int(off), int(off) + len(s.data), "section " + sectionKey(*s), "", nil
		case s.Content == "unresolved" && err1 == nil && off < uint64(size):
			return int(off), size, "section " + sectionKey(*s) + " up to the end of the file",
				fmt.Sprintf("section %s (file offset %s, %s bytes) extends past the end of the file (%d bytes): only [%d, %d) was searched; strings beyond it are unknown, not absent", s.Name, s.Offset, s.FileSize, size, off, size), nil
		case s.Content == "unresolved":
			return 0, 0, "", "", contentsUnknown(in, s, "/section")
		}
	}
	if u := sectionsUnknown(in, "/section", "a section named "+strconv.Quote(name)); u != nil {
		return 0, 0, "", "", u
	}
	e := contract.Errorf(contract.CodeInvalidArgument, "no section of that name with file bytes; inspect_binary lists the sections")
	e.Field = "/section"
	return 0, 0, "", "", &sectionNotFound{e}
}

// sectionNotFound is the INVALID_ARGUMENT of a section the file does not
// have (or, in a relocatable object without .text, of no section named).
// The tool that has the caller's path turns it into the error with the
// call that lists the sections (withSectionsCall); unwrapped it is the
// plain error.
type sectionNotFound struct{ err *contract.Error }

func (s *sectionNotFound) Error() string { return s.err.Error() }
func (s *sectionNotFound) Unwrap() error { return s.err }

// withSectionsCall returns the error with next_action inspect_binary of
// the same path (and Mach-O slice, arch) listing only its sections.
func (s *sectionNotFound) withSectionsCall(path, arch string) *contract.Error {
	args := map[string]any{"path": path, "facets": []string{"sections"}}
	if arch != "" {
		args["arch"] = arch
	}
	s.err.NextAction = &contract.Action{Tool: "inspect_binary", Arguments: args}
	return s.err
}

// ambiguousSection returns INVALID_ARGUMENT (field /section) when name is a
// bare section name that sections of different segments share (a Go
// Mach-O binary has __TEXT,__rodata and __DATA_CONST,__rodata), with the
// segment,section names to choose from in details.candidates; nil when
// name selects one section, or is a segment,section name.
func ambiguousSection(in *Inspection, name string) *contract.Error {
	var keys []string
	for _, s := range in.Sections {
		if s.Name == name && s.Segment != "" && !slices.Contains(keys, sectionKey(s)) {
			keys = append(keys, sectionKey(s))
		}
	}
	if len(keys) < 2 {
		return nil
	}
	e := contract.Errorf(contract.CodeInvalidArgument, "%d sections are named %s (%s): name one as segment,section", len(keys), name, strings.Join(keys, ", "))
	e.Field = "/section"
	return e.WithDetail("candidates", keys)
}
