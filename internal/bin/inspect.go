package bin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Format names reported in Header.Format.
const (
	FormatELF = "elf"
	FormatPE  = "pe"
	// FormatDOS is an MZ file whose PE signature is absent (a DOS, NE, LE
	// or LX executable) or unresolved (the DOS header or e_lfanew's target
	// is cut off): Header.DOS says which.
	FormatDOS      = "dos"
	FormatMachO    = "macho"
	FormatMachOFat = "macho_fat"
)

// Facet coverage states.
const (
	// FacetComplete: every structure the facet reads was resolved; an empty
	// list then means absence.
	FacetComplete = "complete"
	// FacetPartial: some structures were resolved, some were not (see
	// Inspection.Unresolved); an absent item is unknown, not absent.
	FacetPartial = "partial"
	// FacetUnresolved: the facet's structures could not be read at all.
	FacetUnresolved = "unresolved"
	// FacetNotApplicable: the format has no such structure.
	FacetNotApplicable = "not_applicable"
	// FacetNotRequested: the structures are present but the call did not
	// ask for what reading them costs (the reason names the argument
	// that does); the facts resting on them are unknown, not absent.
	FacetNotRequested = "not_requested"
)

// Field is one header observation: the raw on-disk value (hex), its
// symbolic name where the format defines one, and the header field it was
// read from.
type Field struct {
	Raw    string `json:"raw"`
	Name   string `json:"name,omitempty"`
	Source string `json:"source"`
}

func field(v uint64, name, source string) *Field {
	return &Field{Raw: hexU(v), Name: name, Source: source}
}

// Header is what recognition establishes from magic numbers and the fixed
// header alone, before the rest of the file is admitted.
type Header struct {
	Format     string `json:"format"`
	Class      string `json:"class,omitempty"`
	Endianness string `json:"endianness,omitempty"`
	Machine    *Field `json:"machine,omitempty"`
	OSABI      *Field `json:"os_abi,omitempty"`
	Type       *Field `json:"type,omitempty"`
	// Entry is the entry point virtual address ("0x..."), from e_entry,
	// AddressOfEntryPoint+ImageBase, or LC_MAIN entryoff (a file offset,
	// named so in EntrySource).
	Entry       string `json:"entry,omitempty"`
	EntrySource string `json:"entry_source,omitempty"`
	Flags       *Field `json:"flags,omitempty"`
	// DOS is the MZ header of a PE or DOS executable.
	DOS *DOSHeader `json:"dos,omitempty"`
}

// Section is one section: identity, placement, and a digest and entropy of
// its file bytes when it has any.
type Section struct {
	Index   int    `json:"index"`
	Name    string `json:"name"`
	Segment string `json:"segment,omitempty"`
	Type    string `json:"type,omitempty"`
	Address string `json:"address"`
	Offset  string `json:"offset"`
	// Size is the section size in bytes (sh_size, VirtualSize, size).
	Size string `json:"size"`
	// FileSize is the number of bytes the section occupies in the file.
	FileSize string `json:"file_size"`
	// UncompressedSize is the ELF compression header's ch_size for an
	// SHF_COMPRESSED section; digest and entropy are of the compressed
	// file bytes.
	UncompressedSize string `json:"uncompressed_size,omitempty"`
	Flags            string `json:"flags"`
	FlagsRaw         string `json:"flags_raw"`
	// Content is "file_bytes" (digest and entropy are of these bytes),
	// "none" (no file bytes: SHT_NOBITS, zerofill, uninitialized data) or
	// "unresolved" (the bytes lie outside the file).
	Content string `json:"content"`
	// Entropy is the Shannon entropy of the file bytes in bits per byte.
	Entropy *float64 `json:"entropy,omitempty"`
	SHA256  string   `json:"sha256,omitempty"`

	data []byte
}

// Segment is one ELF program header or Mach-O segment.
type Segment struct {
	Index    int    `json:"index"`
	Type     string `json:"type"`
	Name     string `json:"name,omitempty"`
	Offset   string `json:"offset"`
	Address  string `json:"address"`
	FileSize string `json:"file_size"`
	MemSize  string `json:"mem_size"`
	Flags    string `json:"flags"`
	FlagsRaw string `json:"flags_raw"`
	Align    string `json:"align,omitempty"`
}

// Dynamic holds the dynamic-linking facts: DT_NEEDED/DT_RPATH/DT_RUNPATH/
// DT_SONAME and PT_INTERP for ELF; LC_LOAD_DYLIB/LC_RPATH/LC_ID_DYLIB/
// LC_LOAD_DYLINKER for Mach-O; the import directory's DLLs for PE.
type Dynamic struct {
	Needed      []string `json:"needed"`
	RPath       []string `json:"rpath"`
	RunPath     []string `json:"runpath"`
	SOName      string   `json:"soname,omitempty"`
	Interpreter string   `json:"interpreter,omitempty"`
	Flags       string   `json:"flags,omitempty"`
	Flags1      string   `json:"flags_1,omitempty"`
}

// Import is one imported symbol and where it was declared.
type Import struct {
	Name    string `json:"name"`
	Library string `json:"library,omitempty"`
	Version string `json:"version,omitempty"`
	Ordinal string `json:"ordinal,omitempty"`
	// Source names the table: ".dynsym", "import directory",
	// "delay import directory", "symtab (undefined)".
	Source string `json:"source"`
	// VersionSource is "DT_VERNEED" as Symbol's.
	VersionSource string `json:"version_source,omitempty"`
	// Unknown maps a field that could not be read ("version": the
	// version and library, when .gnu.version_r or .gnu.version_d is
	// unreadable) to the reason; that field is then absent.
	Unknown map[string]string `json:"unknown,omitempty"`
}

// Export is one exported (defined, global) symbol. A PE export whose
// address lies inside the export directory is a forwarder: Address is
// empty and Forwarder names the target ("DLL.Function").
type Export struct {
	Name      string `json:"name"`
	Address   string `json:"address,omitempty"`
	Forwarder string `json:"forwarder,omitempty"`
	Ordinal   string `json:"ordinal,omitempty"`
	// Version and DefaultVersion are the ELF symbol version of a
	// .dynsym export and whether it is the default (name@@version) or
	// a non-default one (name@version), as Symbol's; absent when the
	// export has no named version (and for PE and Mach-O).
	Version        string `json:"version,omitempty"`
	DefaultVersion *bool  `json:"default_version,omitempty"`
	Source         string `json:"source"`
	// Unknown is as Import's.
	Unknown map[string]string `json:"unknown,omitempty"`
}

// PDB is the CodeView RSDS record of a PE debug directory.
type PDB struct {
	Path string `json:"path"`
	GUID string `json:"guid"`
	Age  string `json:"age"`
}

// BuildID holds the identifiers a linker recorded: the GNU build id note
// (NT_GNU_BUILD_ID), the Go build id note, the Mach-O LC_UUID, or the PE
// debug directory's PDB path and GUID.
type BuildID struct {
	GNU   string `json:"gnu_build_id,omitempty"`
	Go    string `json:"go_build_id,omitempty"`
	UUID  string `json:"uuid,omitempty"`
	PDB   *PDB   `json:"pdb,omitempty"`
	Notes []Note `json:"notes,omitempty"`
}

// Note is one ELF note (owner, type, descriptor size).
type Note struct {
	Owner    string `json:"owner"`
	Type     string `json:"type"`
	DescSize string `json:"desc_size"`
	Section  string `json:"section"`
}

// GoBuildInfo is debug/buildinfo's view of an embedded Go build info blob.
type GoBuildInfo struct {
	GoVersion string      `json:"go_version"`
	Path      string      `json:"path"`
	Main      *GoModule   `json:"main,omitempty"`
	Deps      []GoModule  `json:"deps"`
	Settings  []GoSetting `json:"settings"`
}

// GoModule is one module of Go build info.
type GoModule struct {
	Path    string    `json:"path"`
	Version string    `json:"version"`
	Sum     string    `json:"sum,omitempty"`
	Replace *GoModule `json:"replace,omitempty"`
}

// GoSetting is one build setting of Go build info.
type GoSetting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Hardening verdicts.
const (
	VerdictYes           = "yes"
	VerdictPartial       = "partial"
	VerdictNo            = "no"
	VerdictNotApplicable = "not_applicable"
	// VerdictUnknown: the structures the verdict rests on were unresolved.
	VerdictUnknown = "unknown"
	// VerdictFull, VerdictPartial and VerdictNone grade RELRO as
	// checksec's Full RELRO, Partial RELRO and No RELRO do: full is
	// PT_GNU_RELRO with immediate binding (DT_BIND_NOW, DF_BIND_NOW in
	// DT_FLAGS or DF_1_NOW in DT_FLAGS_1), partial is PT_GNU_RELRO with
	// lazy binding, none is no PT_GNU_RELRO.
	VerdictFull = "full"
	VerdictNone = "none"
)

// Check is one hardening verdict and the exact tags, header fields or
// symbols it rests on.
type Check struct {
	Name    string   `json:"name"`
	Verdict string   `json:"verdict"`
	Basis   []string `json:"basis"`
}

// Unresolved is a structure that could not be resolved: what it is, where
// it starts in the file, and why.
type Unresolved struct {
	Structure string `json:"structure"`
	Offset    string `json:"offset"`
	Size      string `json:"size,omitempty"`
	Reason    string `json:"reason"`
}

// FacetCoverage is the coverage of one facet of an inspection.
type FacetCoverage struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// FatMember is one architecture slice of a Mach-O universal file.
type FatMember struct {
	CPU *Field `json:"cpu"`
	// Arch is the slice's name as the arch argument selects it (lipo's
	// name: arm64, x86_64, ...); absent for a CPU type without one.
	Arch       string      `json:"arch,omitempty"`
	SubCPU     string      `json:"cpu_subtype"`
	Offset     string      `json:"offset"`
	Size       string      `json:"size"`
	Align      string      `json:"align"`
	Inspection *Inspection `json:"inspection,omitempty"`
}

// Inspection is the result of Inspect: every fact, the structures that
// could not be resolved, and each facet's coverage.
type Inspection struct {
	Header      Header       `json:"header"`
	Admitted    bool         `json:"admitted"`
	Sections    []Section    `json:"sections"`
	Segments    []Segment    `json:"segments"`
	Dynamic     *Dynamic     `json:"dynamic,omitempty"`
	Libraries   []string     `json:"libraries"`
	Imports     []Import     `json:"imports"`
	Exports     []Export     `json:"exports"`
	BuildID     *BuildID     `json:"build_id,omitempty"`
	GoBuildInfo *GoBuildInfo `json:"go_build_info,omitempty"`
	Debug       *DebugInfo   `json:"debug_info,omitempty"`
	Hardening   []Check      `json:"hardening"`
	Members     []FatMember  `json:"members,omitempty"`
	// Slice names the universal file's slice these facts come from,
	// when an arch was selected.
	Slice      *Slice                   `json:"slice,omitempty"`
	Unresolved []Unresolved             `json:"unresolved"`
	Facets     map[string]FacetCoverage `json:"facets"`
	// Digests is "computed" when sections carry sha256 and entropy, or
	// "not_requested" when the call did not ask for them (their absence
	// then says nothing about the sections).
	Digests string `json:"digests"`

	noDigest bool
	pending  []digestJob
	// dynsyms reads an ELF file's .dynsym once for the readers that use
	// it (imports and exports, hardening); nil before the section header
	// table is admitted.
	dynsyms func() ([]elf.Symbol, error)
	// decompressClaim sums the uncompressed sizes of the SHF_COMPRESSED
	// sections admitted for decompression; oversized names the sections
	// whose claim would pass MaxDecompressedBytes (never decompressed).
	decompressClaim uint64
	oversized       map[string]bool
	// gnuProperty holds the NT_GNU_PROPERTY_TYPE_0 notes elfNotes read.
	gnuProperty []gnuPropertyNote
}

// digestJob is one section whose digest and entropy are computed by
// flushDigests.
type digestJob struct {
	idx int
	b   []byte
}

// MaxDecompressedBytes bounds the bytes of SHF_COMPRESSED ELF sections
// (zlib or zstd, as the compression header's ch_size claims) one call
// decompresses (256 MiB): a section whose claim passes it is listed under
// unresolved and not read, and facets resting on it are partial.
const MaxDecompressedBytes uint64 = 256 << 20

// Facet names used in Inspection.Facets.
var facetNames = []string{"header", "sections", "segments", "dynamic", "imports", "exports", "build_id", "go_build_info", "debug_info", "hardening"}

func newInspection() *Inspection {
	in := &Inspection{Sections: []Section{}, Segments: []Segment{}, Libraries: []string{}, Imports: []Import{}, Exports: []Export{}, Hardening: []Check{}, Unresolved: []Unresolved{}, Facets: map[string]FacetCoverage{}}
	return in
}

func (in *Inspection) unresolved(structure string, off, size uint64, reason string) {
	u := Unresolved{Structure: structure, Offset: strconv.FormatUint(off, 10), Reason: reason}
	if size > 0 {
		u.Size = strconv.FormatUint(size, 10)
	}
	in.Unresolved = append(in.Unresolved, u)
}

func (in *Inspection) facet(name, state, reason string) {
	in.Facets[name] = FacetCoverage{State: state, Reason: reason}
}

// Complete reports whether every applicable facet is complete.
func (in *Inspection) Complete() bool {
	for _, f := range in.Facets {
		if f.State == FacetPartial || f.State == FacetUnresolved {
			return false
		}
	}
	return len(in.Unresolved) == 0
}

// Recognize identifies the format of data from its magic number alone. It
// returns the format name, or an UNSUPPORTED_FORMAT *contract.Error naming
// the accepted formats.
func Recognize(data []byte) (string, error) {
	if len(data) >= 2 && data[0] == 'M' && data[1] == 'Z' {
		// The MZ family: inspectPE reads on to tell a PE image from a
		// DOS executable (FormatDOS).
		return FormatPE, nil
	}
	if len(data) >= 4 {
		switch {
		case bytes.Equal(data[:4], []byte("\x7fELF")):
			return FormatELF, nil
		case isCOFFObject(data):
			return FormatPE, nil
		}
		be := binary.BigEndian.Uint32(data)
		le := binary.LittleEndian.Uint32(data)
		switch {
		case be == 0xfeedface || be == 0xfeedfacf || le == 0xfeedface || le == 0xfeedfacf:
			return FormatMachO, nil
		case be == 0xcafebabe && len(data) >= 8:
			// Java class files share the magic; their next word (minor,
			// major version) is at least 45, a fat file's nfat_arch is small.
			if n := binary.BigEndian.Uint32(data[4:]); n >= 1 && n < 45 {
				return FormatMachOFat, nil
			}
		}
	}
	return "", contract.Errorf(contract.CodeUnsupportedFormat, "the file is not a recognized ELF, PE or Mach-O binary (no known magic number)").
		WithDetail("accepted_formats", []string{FormatELF, FormatPE, FormatDOS, FormatMachO, FormatMachOFat})
}

// Inspect recognizes and admits data and returns every fact it can
// establish. Structure it cannot resolve is listed in Unresolved with its
// offset and reflected in Facets; Inspect never panics on hostile input
// (a panic inside a debug/* reader becomes an unresolved entry). The error
// is UNSUPPORTED_FORMAT when no format is recognized, or CANCELLED.
func Inspect(ctx context.Context, data []byte) (*Inspection, error) {
	return inspect(ctx, data, true)
}

// inspect is Inspect; digests false skips section digests and entropy and
// the DWARF summary, for tools that only need section bytes.
func inspect(ctx context.Context, data []byte, digests bool) (*Inspection, error) {
	mode := dwarfOff
	if digests {
		mode = dwarfUnits
	}
	return inspectMode(ctx, data, digests, mode)
}

// dwarfMode is how much of the DWARF summary (Inspection.Debug and the
// debug_info facet) an inspection reads.
type dwarfMode int

const (
	// dwarfOff: no summary and no debug_info facet (no claim either way).
	dwarfOff dwarfMode = iota
	// dwarfPresence: whether DWARF sections are present, from the section
	// table alone; the compilation units are not read (decompressing and
	// walking .debug_info costs more than the rest of an inspection), so
	// units, producers and languages are unknown, with the reason, and
	// the facet is not_requested.
	dwarfPresence
	// dwarfUnits: the summary read from every compilation unit's root
	// entry (units, producers, languages).
	dwarfUnits
)

// inspectMode is Inspect with section digests and entropy (digests) on
// or off and the DWARF summary read as dwarf says.
func inspectMode(ctx context.Context, data []byte, digests bool, dwarf dwarfMode) (*Inspection, error) {
	format, err := Recognize(data)
	if err != nil {
		return nil, err
	}
	in := newInspection()
	in.noDigest = !digests
	in.Digests = DigestsNotRequested
	if digests {
		in.Digests = DigestsComputed
	}
	in.Header.Format = format
	switch format {
	case FormatELF:
		inspectELF(ctx, in, data)
	case FormatPE:
		inspectPE(ctx, in, data)
	case FormatMachO:
		inspectMachO(ctx, in, data)
	case FormatMachOFat:
		inspectFat(ctx, in, data)
	}
	if dwarf != dwarfOff {
		inspectDWARF(ctx, in, data, dwarf == dwarfUnits)
	}
	if err := in.flushDigests(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, contract.AsError(err)
	}
	for _, n := range facetNames {
		if _, ok := in.Facets[n]; !ok {
			switch {
			case n == "debug_info" && dwarf == dwarfOff:
				// Not requested: no claim either way.
			case format == FormatMachOFat && n != "header":
				in.facet(n, FacetNotApplicable, "a universal file's facts are per member (members[].inspection)")
			default:
				// A reader that did not decide a facet did not read the
				// bytes that decide it: unknown, never not_applicable.
				in.facet(n, FacetUnresolved, "the structures that decide this facet were not read")
			}
		}
	}
	in.unknownNotEmpty()
	return in, nil
}

// unknownNotEmpty makes the lists of an unresolved facet null instead of
// empty: an empty list reads as "none" (no sections, no needed libraries),
// where the structure that holds them was not read. The facet's reason
// (facets[name].reason) says why. A facet that is partial keeps the
// entries it read.
func (in *Inspection) unknownNotEmpty() {
	unknown := func(facet string) bool { return in.Facets[facet].State == FacetUnresolved }
	if unknown("sections") && len(in.Sections) == 0 {
		in.Sections = nil
	}
	if unknown("segments") && len(in.Segments) == 0 {
		in.Segments = nil
	}
	if unknown("imports") && len(in.Imports) == 0 {
		in.Imports = nil
	}
	if unknown("exports") && len(in.Exports) == 0 {
		in.Exports = nil
	}
	if unknown("dynamic") {
		if len(in.Libraries) == 0 {
			in.Libraries = nil
		}
		if d := in.Dynamic; d != nil {
			if len(d.Needed) == 0 {
				d.Needed = nil
			}
			if len(d.RPath) == 0 {
				d.RPath = nil
			}
			if len(d.RunPath) == 0 {
				d.RunPath = nil
			}
		}
	}
	if unknown("build_id") && in.BuildID != nil && in.BuildID.GNU == "" && in.BuildID.Go == "" && in.BuildID.UUID == "" && in.BuildID.PDB == nil && len(in.BuildID.Notes) == 0 {
		in.BuildID = nil
	}
}

// guard runs fn, turning a panic inside a debug/* reader into an
// unresolved entry for structure at off.
func guard(in *Inspection, structure string, off uint64, fn func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			in.unresolved(structure, off, 0, fmt.Sprintf("the reader stopped on inconsistent structure (%v)", r))
			ok = false
		}
	}()
	fn()
	return true
}

// digest marks s as backed by the file bytes b and queues its sha256 and
// entropy (unless digests are off). s must be appended to in.Sections
// next, at index len(in.Sections).
func (in *Inspection) digest(s *Section, b []byte) {
	s.Content = "file_bytes"
	s.data = b
	if !in.noDigest {
		in.pending = append(in.pending, digestJob{idx: len(in.Sections), b: b})
	}
}

// flushDigests computes the queued section digests and entropies on
// GOMAXPROCS workers, largest sections first. The error is INPUT_CHANGED
// when a section's pages faulted (a mapped file truncated meanwhile).
func (in *Inspection) flushDigests(ctx context.Context) error {
	jobs := in.pending
	in.pending = nil
	sort.Slice(jobs, func(i, j int) bool { return len(jobs[i].b) > len(jobs[j].b) })
	var next atomic.Int64
	var faulted atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A fault reading a mapped file that shrank under the
			// mapping stops this worker; its sections keep no digest.
			debug.SetPanicOnFault(true)
			defer func() {
				if recover() != nil {
					faulted.Store(true)
				}
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				j := jobs[i]
				sum, e := digestBytes(j.b)
				s := &in.Sections[j.idx]
				s.SHA256 = sum
				s.Entropy = &e
			}
		}()
	}
	wg.Wait()
	if faulted.Load() {
		return contract.Errorf(contract.CodeInputChanged, "the file shrank while its sections were digested; retry when it is stable")
	}
	return nil
}

// digestChunk is the span digestBytes hashes before releasing its pages.
const digestChunk = 4 << 20

// digestBytes returns the lowercase hex SHA-256 of b and its Shannon
// entropy in bits per byte (0 for empty), rounded to 4 decimals. It reads
// b in 4 MiB chunks and releases each chunk's pages after reading it when
// b lies in a file mapping (releasePages), so digesting a mapped file
// keeps at most one chunk resident.
func digestBytes(b []byte) (string, float64) {
	h := sha256.New()
	// Four histograms break the store-to-load dependency between
	// neighbouring equal bytes.
	var h4 [4][256]uint64
	for off := 0; off < len(b); off += digestChunk {
		c := b[off:min(off+digestChunk, len(b))]
		h.Write(c)
		i := 0
		for ; i+4 <= len(c); i += 4 {
			h4[0][c[i]]++
			h4[1][c[i+1]]++
			h4[2][c[i+2]]++
			h4[3][c[i+3]]++
		}
		for ; i < len(c); i++ {
			h4[0][c[i]]++
		}
		releasePages(c)
	}
	var hist [256]uint64
	for k := range hist {
		hist[k] = h4[0][k] + h4[1][k] + h4[2][k] + h4[3][k]
	}
	return hex.EncodeToString(h.Sum(nil)), entropyOf(&hist, len(b))
}

// entropy returns the Shannon entropy of b in bits per byte (0 for empty),
// rounded to 4 decimals.
func entropy(b []byte) float64 {
	_, e := digestBytes(b)
	return e
}

// entropyOf is the Shannon entropy in bits per byte of n bytes with byte
// histogram hist, rounded to 4 decimals (0 when n is 0).
func entropyOf(hist *[256]uint64, n int) float64 {
	if n == 0 {
		return 0
	}
	h := 0.0
	for _, c := range hist {
		if c == 0 {
			continue
		}
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return math.Round(h*10000) / 10000
}

// sliceAt returns data[off:off+size] when it lies inside data.
func sliceAt(data []byte, off, size uint64) ([]byte, bool) {
	if off > uint64(len(data)) || size > uint64(len(data))-off {
		return nil, false
	}
	return data[off : off+size], true
}

func hexU(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
func decU(v uint64) string { return strconv.FormatUint(v, 10) }

// goMarkerSections are the sections only the Go linker writes: the build
// info blob's own section and the pc-line table.
var goMarkerSections = map[string]bool{".go.buildinfo": true, "__go_buildinfo": true, ".gopclntab": true, "__gopclntab": true, ".note.go.buildid": true}

// goMarker names the structure that marks data as a Go binary (a Go-only
// section, or the Go build id note), or "".
func goMarker(in *Inspection) string {
	for _, s := range in.Sections {
		if goMarkerSections[s.Name] {
			return "section " + s.Name
		}
	}
	if in.BuildID != nil && in.BuildID.Go != "" {
		return "the Go build id note"
	}
	// Where there is no note (PE), the Go linker puts its build id at the
	// start of the text section.
	for _, s := range in.Sections {
		if (s.Name == ".text" || s.Name == "__text") && bytes.Contains(s.data[:min(len(s.data), 4096)], []byte("\xff Go build ID: \"")) {
			return "the Go build id at the start of " + s.Name
		}
	}
	return ""
}

// goBuildInfo reads Go build info with debug/buildinfo. The facet is
// complete with no build info only when the section table was read
// completely and no Go marker (goMarker) is present; a Go-marked file
// whose blob does not read, or a file whose sections are partly
// unresolved, leaves the facet unresolved: the build info is unknown.
func goBuildInfo(in *Inspection, data []byte) {
	var bi *debug.BuildInfo
	var err error
	if !guard(in, "Go build info", 0, func() { bi, err = buildinfo.Read(bytes.NewReader(data)) }) {
		in.facet("go_build_info", FacetUnresolved, "the Go build info reader stopped on inconsistent structure")
		return
	}
	if err != nil {
		// debug/buildinfo says "not a Go executable" both when there is no
		// blob and when its magic is damaged or its bytes are missing, so
		// absence is decided from the section table, not from its error.
		if m := goMarker(in); m != "" {
			in.unresolved("Go build info", 0, 0, "the file carries "+m+" (written only by the Go linker) but debug/buildinfo found no readable build info blob: "+err.Error())
			in.facet("go_build_info", FacetUnresolved, "a Go binary ("+m+") whose build info blob is damaged or outside the readable data")
			return
		}
		if st := in.Facets["sections"].State; st != FacetComplete {
			in.facet("go_build_info", FacetUnresolved, "no readable Go build info blob, and the sections are "+st+": whether the file is a Go binary is unknown")
			return
		}
		in.facet("go_build_info", FacetComplete, "no Go build info blob and no Go linker sections: not a Go binary")
		return
	}
	g := &GoBuildInfo{GoVersion: bi.GoVersion, Path: bi.Path, Deps: []GoModule{}, Settings: []GoSetting{}}
	if bi.Main.Path != "" {
		g.Main = goModule(&bi.Main)
	}
	for _, d := range bi.Deps {
		g.Deps = append(g.Deps, *goModule(d))
	}
	for _, s := range bi.Settings {
		g.Settings = append(g.Settings, GoSetting{Key: s.Key, Value: s.Value})
	}
	in.GoBuildInfo = g
	in.facet("go_build_info", FacetComplete, "")
}

func goModule(m *debug.Module) *GoModule {
	g := &GoModule{Path: m.Path, Version: m.Version, Sum: m.Sum}
	if m.Replace != nil {
		g.Replace = goModule(m.Replace)
	}
	return g
}

func parseHex(s string) (uint64, error) {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	return strconv.ParseUint(s, 16, 64)
}

func parseDec(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }
