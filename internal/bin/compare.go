package bin

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
)

// Comparison verdicts: what compare_binaries says of one compared entry.
const (
	// CmpEqual: corresponding entries whose complete content digests match.
	CmpEqual = "equal"
	// CmpChanged: corresponding entries whose complete content digests differ.
	CmpChanged = "changed"
	// CmpAdded: present only in the right file, whose peer inventory (the
	// left table) was read completely.
	CmpAdded = "added"
	// CmpRemoved: present only in the left file, the right table complete.
	CmpRemoved = "removed"
	// CmpNotComparable: correspondence or content could not be established.
	CmpNotComparable = "not_comparable"
)

// Comparison kinds.
const (
	KindSection = "section"
	KindSymbol  = "symbol"
	KindImport  = "import"
)

// Proof is what a comparison verdict rests on, kept as separate facts:
// Correspondence (why the two entries are the same object), Content (what
// the digests establish) and Unknown (what remains unestablished).
type Proof struct {
	Correspondence string `json:"correspondence"`
	Content        string `json:"content"`
	Unknown        string `json:"unknown,omitempty"`
}

// Side is one file's view of a compared entry.
type Side struct {
	Address string `json:"address,omitempty"`
	Size    string `json:"size,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Section string `json:"section,omitempty"`
}

// Delta is one compared entry.
type Delta struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	Left    *Side  `json:"left,omitempty"`
	Right   *Side  `json:"right,omitempty"`
	// Moved is set when corresponding entries have equal content at
	// different addresses.
	Moved bool  `json:"moved,omitempty"`
	Proof Proof `json:"proof"`
}

// compareSide is one binary prepared for comparison.
type compareSide struct {
	in *Inspection
	ss *symbolSet
}

func compareBinaries(l, r compareSide) []Delta {
	var out []Delta
	out = append(out, compareSections(l, r)...)
	out = append(out, compareSymbols(l, r)...)
	out = append(out, compareImports(l, r)...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return kindOrder(out[i].Kind) < kindOrder(out[j].Kind)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func kindOrder(k string) int {
	switch k {
	case KindSection:
		return 0
	case KindSymbol:
		return 1
	}
	return 2
}

func sectionKey(s Section) string {
	if s.Segment != "" {
		return s.Segment + "," + s.Name
	}
	return s.Name
}

func compareSections(l, r compareSide) []Delta {
	group := func(in *Inspection) map[string][]int {
		m := map[string][]int{}
		for i, s := range in.Sections {
			if s.Name == "" && s.Type == "SHT_NULL" {
				continue
			}
			m[sectionKey(s)] = append(m[sectionKey(s)], i)
		}
		return m
	}
	lm, rm := group(l.in), group(r.in)
	lComplete := l.in.Facets["sections"].State == FacetComplete
	rComplete := r.in.Facets["sections"].State == FacetComplete
	var out []Delta
	names := unionKeys(lm, rm)
	for _, n := range names {
		li, ri := lm[n], rm[n]
		d := Delta{Kind: KindSection, Name: n}
		switch {
		case len(li) > 1 || len(ri) > 1:
			d.Verdict = CmpNotComparable
			d.Proof = Proof{Correspondence: "the section name is not unique in at least one file", Content: "not compared", Unknown: "which of the same-named sections correspond"}
		case len(li) == 0:
			d.Right = sectionSide(r.in.Sections[ri[0]])
			if lComplete {
				d.Verdict = CmpAdded
				d.Proof = Proof{Correspondence: "no section of this name in the left section table, which was read completely", Content: "not applicable"}
			} else {
				d.Verdict = CmpNotComparable
				d.Proof = Proof{Correspondence: "absent from the left section table, which was read only partially", Content: "not compared", Unknown: "whether the left file has this section"}
			}
		case len(ri) == 0:
			d.Left = sectionSide(l.in.Sections[li[0]])
			if rComplete {
				d.Verdict = CmpRemoved
				d.Proof = Proof{Correspondence: "no section of this name in the right section table, which was read completely", Content: "not applicable"}
			} else {
				d.Verdict = CmpNotComparable
				d.Proof = Proof{Correspondence: "absent from the right section table, which was read only partially", Content: "not compared", Unknown: "whether the right file has this section"}
			}
		default:
			ls, rs := l.in.Sections[li[0]], r.in.Sections[ri[0]]
			d.Left, d.Right = sectionSide(ls), sectionSide(rs)
			corr := "same section name, unique in both section tables"
			switch {
			case ls.Content == "unresolved" || rs.Content == "unresolved":
				d.Verdict = CmpNotComparable
				d.Proof = Proof{Correspondence: corr, Content: "the section bytes of at least one file lie outside the file", Unknown: "content equality"}
			case ls.Content == "file_bytes" && rs.Content == "file_bytes":
				if ls.SHA256 == rs.SHA256 {
					d.Verdict = CmpEqual
					d.Proof = Proof{Correspondence: corr, Content: "sha256 of the complete section file bytes is equal"}
					d.Moved = ls.Address != rs.Address
				} else {
					d.Verdict = CmpChanged
					d.Proof = Proof{Correspondence: corr, Content: "sha256 of the complete section file bytes differs"}
				}
			case ls.Content == "none" && rs.Content == "none":
				if ls.Size == rs.Size {
					d.Verdict = CmpEqual
					d.Proof = Proof{Correspondence: corr, Content: "neither section has file bytes (zero-initialized) and their sizes are equal"}
				} else {
					d.Verdict = CmpChanged
					d.Proof = Proof{Correspondence: corr, Content: "neither section has file bytes and their sizes differ"}
				}
			default:
				d.Verdict = CmpChanged
				d.Proof = Proof{Correspondence: corr, Content: "one section has file bytes, the other none"}
			}
		}
		out = append(out, d)
	}
	return out
}

func sectionSide(s Section) *Side {
	return &Side{Address: s.Address, Size: s.Size, SHA256: s.SHA256}
}

func unionKeys[V any](a, b map[string]V) []string {
	var n []string
	for k := range a {
		n = append(n, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n = append(n, k)
		}
	}
	sort.Strings(n)
	return n
}

// symbolDigest hashes the bytes of s's extent inside its section, or
// reports why it cannot.
func symbolDigest(in *Inspection, s Symbol) (string, string) {
	if s.sect < 0 || s.sect >= len(in.Sections) {
		return "", "the symbol is not in a section"
	}
	sec := in.Sections[s.sect]
	if s.size == 0 {
		return "", "the symbol has no size: its content extent is unknown"
	}
	switch sec.Content {
	case "none":
		return "zero:" + decU(s.size), ""
	case "unresolved":
		return "", "the section bytes lie outside the file"
	}
	base, err := parseHex(sec.Address)
	if err != nil || s.value < base || s.value-base > uint64(len(sec.data)) || s.size > uint64(len(sec.data))-(s.value-base) {
		return "", "the symbol extent is outside its section's file bytes"
	}
	sum := sha256.Sum256(sec.data[s.value-base : s.value-base+s.size])
	return hex.EncodeToString(sum[:]), ""
}

// definedSymbols returns the defined symbols with names, one table per
// name: .symtab entries win over .dynsym entries at the same address.
func definedSymbols(ss *symbolSet) map[string][]Symbol {
	m := map[string][]Symbol{}
	for _, s := range ss.syms {
		if !s.Defined || s.Name == "" || s.nameUnknown != "" || s.sect < 0 || s.Type == "STT_SECTION" || s.Type == "STT_FILE" {
			continue
		}
		dup := false
		for _, o := range m[s.Name] {
			if o.value == s.value {
				dup = true
			}
		}
		if !dup {
			m[s.Name] = append(m[s.Name], s)
		}
	}
	return m
}

func compareSymbols(l, r compareSide) []Delta {
	lm, rm := definedSymbols(l.ss), definedSymbols(r.ss)
	lComplete := len(l.ss.unresolved) == 0 && len(l.ss.tables) > 0
	rComplete := len(r.ss.unresolved) == 0 && len(r.ss.tables) > 0
	var out []Delta
	for _, n := range unionKeys(lm, rm) {
		ls, rs := lm[n], rm[n]
		d := Delta{Kind: KindSymbol, Name: n}
		switch {
		case len(ls) > 1 || len(rs) > 1:
			d.Verdict = CmpNotComparable
			d.Proof = Proof{Correspondence: "the symbol name is defined at more than one address in at least one file", Content: "not compared", Unknown: "which same-named symbols correspond"}
		case len(ls) == 0:
			d.Right = &Side{Address: rs[0].Address, Size: rs[0].Size, Section: rs[0].Section}
			if lComplete {
				d.Verdict = CmpAdded
				d.Proof = Proof{Correspondence: "no defined symbol of this name in the left symbol tables, which were read completely", Content: "not applicable"}
			} else {
				d.Verdict = CmpNotComparable
				d.Proof = Proof{Correspondence: "absent from left symbol tables that were not read completely", Content: "not compared", Unknown: "whether the left file defines this symbol"}
			}
		case len(rs) == 0:
			d.Left = &Side{Address: ls[0].Address, Size: ls[0].Size, Section: ls[0].Section}
			if rComplete {
				d.Verdict = CmpRemoved
				d.Proof = Proof{Correspondence: "no defined symbol of this name in the right symbol tables, which were read completely", Content: "not applicable"}
			} else {
				d.Verdict = CmpNotComparable
				d.Proof = Proof{Correspondence: "absent from right symbol tables that were not read completely", Content: "not compared", Unknown: "whether the right file defines this symbol"}
			}
		default:
			a, b := ls[0], rs[0]
			ld, lwhy := symbolDigest(l.in, a)
			rd, rwhy := symbolDigest(r.in, b)
			d.Left = &Side{Address: a.Address, Size: a.Size, Section: a.Section, SHA256: trimZero(ld)}
			d.Right = &Side{Address: b.Address, Size: b.Size, Section: b.Section, SHA256: trimZero(rd)}
			corr := "same symbol name, defined once in each file"
			extent := "sha256 of the symbol's bytes [address, address+size)"
			if a.derived || b.derived {
				extent += " with size derived from the next symbol (the table records no size)"
			}
			switch {
			case lwhy != "" || rwhy != "":
				d.Verdict = CmpNotComparable
				why := lwhy
				if why == "" {
					why = rwhy
				}
				d.Proof = Proof{Correspondence: corr, Content: why, Unknown: "content equality"}
			case ld == rd:
				d.Verdict = CmpEqual
				d.Proof = Proof{Correspondence: corr, Content: extent + " is equal"}
				d.Moved = a.value != b.value
			default:
				d.Verdict = CmpChanged
				d.Proof = Proof{Correspondence: corr, Content: extent + " differs"}
				if a.size != b.size {
					d.Proof.Content += " (sizes differ)"
				}
			}
		}
		out = append(out, d)
	}
	return out
}

func trimZero(d string) string {
	if len(d) > 5 && d[:5] == "zero:" {
		return ""
	}
	return d
}

func compareImports(l, r compareSide) []Delta {
	key := func(in *Inspection) map[string]bool {
		m := map[string]bool{}
		for _, i := range in.Imports {
			n := i.Name
			if n == "" {
				n = "#" + i.Ordinal
			}
			if i.Library != "" {
				n += " (" + i.Library + ")"
			}
			m[n] = true
		}
		return m
	}
	lm, rm := key(l.in), key(r.in)
	lc := l.in.Facets["imports"].State == FacetComplete
	rc := r.in.Facets["imports"].State == FacetComplete
	var out []Delta
	for _, n := range unionKeys(lm, rm) {
		d := Delta{Kind: KindImport, Name: n}
		switch {
		case lm[n] && rm[n]:
			d.Verdict = CmpEqual
			d.Proof = Proof{Correspondence: "same imported name and library in both import tables", Content: "an import has no content beyond its name and library"}
		case rm[n] && lc:
			d.Verdict = CmpAdded
			d.Proof = Proof{Correspondence: "absent from the left import table, which was read completely", Content: "not applicable"}
		case lm[n] && rc:
			d.Verdict = CmpRemoved
			d.Proof = Proof{Correspondence: "absent from the right import table, which was read completely", Content: "not applicable"}
		default:
			d.Verdict = CmpNotComparable
			d.Proof = Proof{Correspondence: "absent from an import table that was read only partially", Content: "not compared", Unknown: "whether the other file imports it"}
		}
		out = append(out, d)
	}
	return out
}

// inventoryKinds maps an inventory named in compare_binaries'
// coverage.upstream ("left.sections" ends in "sections") to the delta
// kinds it decides: symbol content is read through the section bytes.
var inventoryKinds = map[string][]string{"sections": {KindSection, KindSymbol}, "symbols": {KindSymbol}, "imports": {KindImport}}

// selectionLimits returns, sorted, the upstream inventories (keys of
// upstream) that decide a kind the selection includes (every kind when
// kinds is empty). A partial inventory that decides no selected kind
// leaves the selection complete: that the parent inventory is partial and
// that this selection is complete are separate facts.
func selectionLimits(upstream map[string]string, kinds []string) []string {
	var out []string
	for k := range upstream {
		inv := k[strings.LastIndexByte(k, '.')+1:]
		for _, kind := range inventoryKinds[inv] {
			if len(kinds) == 0 || slices.Contains(kinds, kind) {
				out = append(out, k)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
