package bin

import (
	"bytes"
	"strconv"
)

// goBuildIDPrefix and goBuildIDEnd delimit the build id the Go linker
// writes, as a quoted Go string, at the start of the text section of a
// binary that has no ELF note for it (PE, Mach-O): `\xff Go build ID:
// "…"\n \xff` (cmd/internal/buildid).
var (
	goBuildIDPrefix = []byte("\xff Go build ID: \"")
	goBuildIDEnd    = []byte("\"\n \xff")
)

// goBuildIDWindow is how much `go tool buildid` searches: the first 32 KiB
// of the file, then (Mach-O) of the __text section.
const goBuildIDWindow = 32 << 10

// goRawBuildID finds the Go build id in b as `go tool buildid` does
// (readRaw): found reports the prefix; a prefix without its end or with a
// string that does not unquote is malformed (found, ok false).
func goRawBuildID(b []byte) (id string, found, ok bool) {
	i := bytes.Index(b, goBuildIDPrefix)
	if i < 0 {
		return "", false, false
	}
	j := bytes.Index(b[i+len(goBuildIDPrefix):], goBuildIDEnd)
	if j < 0 {
		return "", true, false
	}
	id, err := strconv.Unquote(string(b[i+len(goBuildIDPrefix)-1 : i+len(goBuildIDPrefix)+j+1]))
	if err != nil {
		return "", true, false
	}
	return id, true, true
}

// textGoBuildID sets in.BuildID.Go for a PE or Mach-O file from the
// file's first 32 KiB, else the first 32 KiB of its text section (text:
// ".text" or "__text"), and returns the build_id facet state: partial when
// the id is malformed, or when it was not found and the text section's
// bytes lie past the end of the file (an unresolved entry says why). Not
// finding it in bytes that were read is complete: not a Go binary, or one
// linked without a build id.
func textGoBuildID(in *Inspection, data []byte, text string) string {
	if in.BuildID == nil {
		in.BuildID = &BuildID{}
	}
	id, found, ok := goRawBuildID(data[:min(len(data), goBuildIDWindow)])
	var sec *Section
	for i := range in.Sections {
		if s := &in.Sections[i]; s.Name == text && (text != "__text" || s.Segment == "__TEXT") {
			sec = s
			break
		}
	}
	if !found && sec != nil {
		if sec.Content == "unresolved" {
			off, _ := parseDec(sec.Offset)
			in.unresolved("Go build id", off, 0, "the text section "+text+" lies past the end of the file: whether it starts with a Go build id is unknown")
			return FacetPartial
		}
		id, found, ok = goRawBuildID(sec.data[:min(len(sec.data), goBuildIDWindow)])
	}
	if found && !ok {
		in.unresolved("Go build id", 0, 0, "the \"\\xff Go build ID: \" marker is not followed by a terminated, quoted id")
		return FacetPartial
	}
	in.BuildID.Go = id
	return FacetComplete
}

// setGoBuildID runs textGoBuildID and lowers a complete build_id facet to
// its state.
func setGoBuildID(in *Inspection, data []byte, text string) {
	if st := textGoBuildID(in, data, text); st != FacetComplete && in.Facets["build_id"].State == FacetComplete {
		in.facet("build_id", st, "the Go build id at the start of "+text+" is unknown")
	}
}
