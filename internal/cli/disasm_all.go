package cli

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/bin"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

// allPageSize is the page `disasm --all` reads per call when --max is not
// given: the tool's largest page, so a section takes the fewest calls.
const allPageSize = 5000

// disasmRow is one instruction row of a disassemble page as the CLI
// prints it.
type disasmRow struct {
	Address, Bytes, Text, Error, Target string
	TargetSymbol                        string `json:"target_symbol"`
	Relocations                         []struct{ Address, Type, Target string }
}

// rowText is the text column of a row: its instruction text (or its
// error in parentheses) and its target as objdump writes it: a branch's
// symbol in angle brackets ("call 2639f  <abort>"), a RIP-relative
// operand's address and symbol as a comment ("lea 0xed3(%rip),%rax  #
// 2004 <_IO_stdin_used+0x4>", the address alone when no symbol precedes
// it).
func rowText(text, errText, target, targetSym string) string {
	if errText != "" {
		text = "(" + errText + ")"
	}
	if target != "" && ripRelative(text) {
		text += "  # " + strings.TrimPrefix(target, "0x")
		if targetSym != "" {
			text += " <" + targetSym + ">"
		}
		return text
	}
	if targetSym != "" {
		text += "  <" + targetSym + ">"
	}
	return text
}

// ripRelative reports whether an instruction's text has a RIP-relative
// memory operand (AT&T "(%rip)", Intel "[rip"): its target is the
// operand's address, which objdump prints as a "#" comment.
func ripRelative(text string) bool {
	return strings.Contains(text, "(%rip)") || strings.Contains(text, "[rip")
}

// appendLabel appends objdump -d's symbol header line for a row that
// starts a symbol ("\n0000000000001129 <main>:\n": a blank line, the
// address in digits hex digits, zero-padded: 16 for a 64-bit file, 8 for
// a 32-bit one, as objdump pads to the architecture's address size; the
// symbol in angle brackets), or nothing when label is "".
func appendLabel(line []byte, address, label string, digits int) []byte {
	if label == "" {
		return line
	}
	a := strings.TrimPrefix(address, "0x")
	line = append(line, '\n')
	for i := len(a); i < digits; i++ {
		line = append(line, '0')
	}
	line = append(line, a...)
	line = append(line, " <"...)
	line = append(line, cell(label)...)
	return append(line, ">:\n"...)
}

// runDisasmAll is `inquest bin disasm --all`: it lists the whole
// requested code (a symbol, a section or an address range) from the given
// --cursor (or the start) to its end in one call (bin.Env.DisassembleAll:
// the file parsed once, each page decoded from where the last ended) and
// streams every row to stdout as it is decoded, one line per instruction
// ("ADDRESS:\tBYTES\tTEXT", a relocation on its own indented line), as
// objdump -d prints a section: each symbol's rows are headed by a blank
// line and "0000000000001129 <main>:" (the listing's first row too,
// "<main+0x10>:" when it starts inside one), and a RIP-relative operand
// ends with "# ADDRESS <symbol>". The arguments are validated against the
// disassemble tool's schema first (the same errors as a page). Memory is
// bounded by one page (--max rows, 5,000 by default). Each limitation is
// printed once on stderr, when found. --json and --preserve, which
// describe one page, are refused with INVALID_ARGUMENT naming the flag.
// A listing cancelled by SIGINT stops after the rows printed, prints the
// cursor that resumes after them on stderr ("interrupted: resume with
// --all --cursor C") and exits 130. A --cursor of a page resumes with
// any --max (a disassembly cursor holds a byte offset, not a page size).
func runDisasmAll(cmd *cobra.Command, env *Env, f *binFlags, args map[string]any) error {
	for _, flag := range []string{"json", "preserve"} {
		if cmd.Flags().Changed(flag) {
			e := contract.Errorf(contract.CodeInvalidArgument, "--all streams every page as text; --%s describes one page: drop --all (and page with --cursor) or drop --%s", flag, flag)
			return reportFailure(env, cmd, f.asJSON, e)
		}
	}
	if err := utf8Paths(args); err != nil {
		return err
	}
	page := allPageSize
	if m, ok := args["max_instructions"].(int); ok {
		page = m
	}
	raw, _ := json.Marshal(args)
	ctx := cmd.Context()
	rt := &Runtime{Registry: tool.NewRegistry()}
	defer rt.Close()
	opts := runtimeOptions{Stderr: env.Stderr, NoHost: true, BinTools: []string{"disassemble"}}
	if err := buildBin(ctx, rt, opts); err != nil {
		return err
	}
	whole := args["symbol"] == nil && args["section"] == nil && args["start"] == nil
	if whole {
		if _, ok := args["cursor"]; ok {
			e := badFlag("--cursor", "a --cursor resumes one section's listing: give its --section too (the interrupted listing's resume line names it)")
			return reportFailure(env, cmd, f.asJSON, e)
		}
		// objdump -d: every section that holds code, in file order.
		return disasmSections(cmd, env, f, rt, opts, args, page)
	}
	if err := rt.Registry.Validate("disassemble", raw); err != nil {
		return f.failure(env, err)
	}
	return disasmListing(cmd, env, f, rt, opts, raw, page, "", nil)
}

// disasmSections is `bin disasm FILE --all` without --symbol, --section
// or --start: as objdump -d, every section that holds code and has file
// bytes (codeSection), in section-table order, each listed whole under
// "Disassembly of section NAME:". The sections are read from
// inspect_binary's sections facet. A file with no such section fails
// with INVALID_ARGUMENT naming FILE.
func disasmSections(cmd *cobra.Command, env *Env, f *binFlags, rt *Runtime, opts runtimeOptions, args map[string]any, page int) error {
	ctx := cmd.Context()
	path, _ := args["path"].(string)
	// The file is listed section by section, each opened again: its
	// state is checked before each and after the last, so a file
	// replaced or rewritten during the listing fails with INPUT_CHANGED
	// instead of listing two files as one.
	before, statErr := os.Stat(path)
	sections, err := codeSections(ctx, rt, args)
	if err != nil {
		return f.failure(env, err)
	}
	if len(sections) == 0 {
		return f.failure(env, badFlag("FILE", "the file has no section that holds code with file bytes; inspect_binary lists its sections"))
	}
	changed := func(where string) error {
		now, err := os.Stat(path)
		if statErr != nil || err != nil || !bin.Unchanged(before, now) {
			return contract.Errorf(contract.CodeInputChanged, "FILE changed during the listing (%s): what was printed before is of the earlier file; list it again", where).WithDetail("field", "FILE")
		}
		return nil
	}
	for i, name := range sections {
		if testHookBeforeSection != nil {
			testHookBeforeSection(name)
		}
		if err := changed("before section " + name); err != nil {
			return f.failure(env, err)
		}
		a := make(map[string]any, len(args)+1)
		for k, v := range args {
			a[k] = v
		}
		a["section"] = name
		raw, _ := json.Marshal(a)
		if err := rt.Registry.Validate("disassemble", raw); err != nil {
			return f.failure(env, err)
		}
		fmt.Fprintf(env.Stdout, "\nDisassembly of section %s:\n", cell(name))
		if err := disasmListing(cmd, env, f, rt, opts, raw, page, name, sections[i+1:]); err != nil {
			return err
		}
	}
	if err := changed("after the last section"); err != nil {
		return f.failure(env, err)
	}
	return nil
}

// testHookBeforeSection, when set (by tests), runs before each section of
// a whole-file listing is checked and listed.
var testHookBeforeSection func(section string)

// codeSections returns the names of the sections of args' file that hold
// code and have file bytes, in section-table order, read from
// inspect_binary's sections facet (every page): an ELF section with
// SHF_EXECINSTR (sh_flags 0x4), a PE section with IMAGE_SCN_CNT_CODE or
// IMAGE_SCN_MEM_EXECUTE (0x20, 0x20000000), a Mach-O section with
// S_ATTR_PURE_INSTRUCTIONS or S_ATTR_SOME_INSTRUCTIONS (0x80000000,
// 0x400), as objdump's code-section flag. Errors are the tool's.
func codeSections(ctx context.Context, rt *Runtime, args map[string]any) ([]string, error) {
	if err := buildBin(ctx, rt, runtimeOptions{NoHost: true, BinTools: []string{"inspect_binary"}}); err != nil {
		return nil, err
	}
	a := map[string]any{"path": args["path"], "facets": []string{"sections"}, "limit": 1000}
	if v, ok := args["arch"]; ok {
		a["arch"] = v
	}
	var names []string
	for {
		raw, _ := json.Marshal(a)
		res, err := rt.Registry.Call(ctx, "inspect_binary", raw)
		if err != nil {
			return nil, err
		}
		body, isErr := contract.Marshal(res, nil)
		var page struct {
			Error    *contract.Error
			Coverage struct {
				Facets struct {
					Sections struct{ State, Reason string }
				}
			}
			Data struct {
				Inspection struct {
					Header struct{ Format string }
				}
				Rows []struct {
					Name, Content string
					FileSize      string `json:"file_size"`
					FlagsRaw      string `json:"flags_raw"`
				}
				NextCursor string `json:"next_cursor"`
			}
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		if isErr && page.Error != nil {
			return nil, page.Error
		}
		if sc := page.Coverage.Facets.Sections; sc.State != "complete" {
			// As a --section listing of an unreadable section table.
			return nil, contract.Errorf(contract.CodeDecodeFailed, "the code to disassemble was not located: the section table is %s (%s)", sc.State, sc.Reason)
		}
		var mask uint64
		switch page.Data.Inspection.Header.Format {
		case bin.FormatELF:
			mask = 0x4
		case bin.FormatPE:
			mask = 0x20 | 0x20000000
		case bin.FormatMachO:
			mask = 0x80000000 | 0x400
		}
		for _, r := range page.Data.Rows {
			flags, err := strconv.ParseUint(strings.TrimPrefix(r.FlagsRaw, "0x"), 16, 64)
			if err != nil || flags&mask == 0 || r.Content != "file_bytes" || r.FileSize == "0" || r.Name == "" {
				continue
			}
			names = append(names, r.Name)
		}
		if page.Data.NextCursor == "" {
			return names, nil
		}
		a["cursor"] = page.Data.NextCursor
	}
}

// disasmListing streams the disassemble listing of raw (validated
// arguments) to stdout, as runDisasmAll says; section, when set, is the
// section a whole-file listing is in and rest the sections it has still
// to list (the resume line names them).
func disasmListing(cmd *cobra.Command, env *Env, f *binFlags, rt *Runtime, opts runtimeOptions, raw json.RawMessage, page int, section string, rest []string) error {
	ctx := cmd.Context()
	var a struct{ Path string }
	_ = json.Unmarshal(raw, &a)
	digits := addressDigits(a.Path)
	bw := bufio.NewWriterSize(env.Stdout, 64<<10)
	var line []byte
	// writeErr is the first failed write to stdout (a full disk): the
	// command fails with it as written, not as the tool's error.
	var writeErr error
	write := func(r *bin.Instruction) error {
		line = appendLabel(line[:0], r.Address, r.Label, digits)
		line = append(line, r.Address...)
		line = append(line, ":\t"...)
		line = append(line, r.Bytes...)
		line = append(line, '\t')
		line = append(line, cell(rowText(r.Text, r.Error, r.Target, r.TargetSymbol))...)
		line = append(line, '\n')
		line = appendRelocations(line, r.Relocations)
		_, err := bw.Write(line)
		if err != nil && writeErr == nil {
			writeErr = err
		}
		return err
	}
	// dots is objdump's line for skipped zero bytes, under the skipped
	// rows' symbol header and followed by their relocations.
	dots := func(label, address string, relocs []bin.Relocation) error {
		line = appendLabel(line[:0], address, label, digits)
		line = append(line, "\t...\n"...)
		line = appendRelocations(line, relocs)
		_, err := bw.Write(line)
		if err != nil && writeErr == nil {
			writeErr = err
		}
		return err
	}
	zs := &zeroSkipper{write: write, dots: dots}
	emit := zs.push
	warn := func(w string) {
		// Rows already decoded are printed before the warning that
		// follows them.
		_ = bw.Flush()
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	err := binEnv(rt, opts).DisassembleAll(ctx, raw, page, emit, warn)
	if err == nil {
		err = zs.end()
	} else {
		// Interrupted or failed: the rows held for a zero run are
		// printed as decoded (the resume cursor follows them).
		_ = zs.release()
	}
	if writeErr != nil {
		return writeErr
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		return ferr
	}
	if err != nil && ctx.Err() != nil {
		var in *bin.Interrupted
		if errors.As(err, &in) && in.Cursor != "" {
			// As a page's "more rows" line: the command that resumes.
			if section != "" {
				fmt.Fprintf(env.Stderr, "interrupted: resume with --all --section %s --cursor %s\n", shellQuote(section), in.Cursor)
				for _, r := range rest {
					fmt.Fprintf(env.Stderr, "  then: --all --section %s\n", shellQuote(r))
				}
			} else {
				fmt.Fprintf(env.Stderr, "interrupted: resume with --all --cursor %s\n", in.Cursor)
			}
		}
		return exitCode(130)
	}
	if err != nil {
		return f.failure(env, err)
	}
	return nil
}

// appendRelocations appends a listing's relocation lines, one per
// relocation under the row it applies to: "\t\t  ADDRESS: TYPE\tTARGET".
func appendRelocations(line []byte, relocs []bin.Relocation) []byte {
	for _, rl := range relocs {
		line = append(line, "\t\t  "...)
		line = append(line, rl.Address...)
		line = append(line, ": "...)
		line = append(line, cell(rl.Type)...)
		line = append(line, '\t')
		line = append(line, cell(rl.Target)...)
		line = append(line, '\n')
	}
	return line
}

// addressDigits is the width objdump pads a symbol header's address to
// for the file at path: 8 hex digits for a 32-bit file (ELF EI_CLASS
// ELFCLASS32, a PE32 optional header (magic 0x10b), a 32-bit Mach-O
// (magic 0xfeedface)), 16 otherwise, and 16 when the header cannot be
// read (the listing then fails with the tool's own error).
func addressDigits(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 16
	}
	defer f.Close()
	var h [4096]byte
	n, _ := io.ReadFull(f, h[:])
	b := h[:n]
	switch {
	case len(b) > 4 && string(b[:4]) == "\x7fELF":
		if b[4] == 1 {
			return 8
		}
	case len(b) >= 4 && (binary.BigEndian.Uint32(b) == 0xfeedface || binary.LittleEndian.Uint32(b) == 0xfeedface):
		return 8
	case len(b) >= 0x40 && string(b[:2]) == "MZ":
		off := int(binary.LittleEndian.Uint32(b[0x3c:]))
		if off >= 0 && off+26 <= len(b) && string(b[off:off+4]) == "PE\x00\x00" && binary.LittleEndian.Uint16(b[off+24:]) == 0x10b {
			return 8
		}
	}
	return 16
}

// zeroSkipper prints a listing's rows as objdump -d does without
// --disassemble-zeroes (binutils disassemble_bytes): within a symbol's
// bytes (a region: from a row with a symbol header to the next one, or
// to the listing's end), at a row whose first byte is zero it finds the
// first non-zero byte z at or after it (before the region's end); when
// that run of zeros is 8 bytes or more, or reaches the region's end
// being under 3 bytes, it prints "\t..." instead, and resumes at the
// first row a multiple of 4 bytes into the run (at the region's end when
// the run reaches it). The rows of a possible run are held until the run
// ends, so memory is bounded by the longest run of zero bytes.
type zeroSkipper struct {
	write func(*bin.Instruction) error
	dots  func(label, address string, relocs []bin.Relocation) error
	held  []bin.Instruction
}

// push takes the listing's next row (rows in address order; a row with a
// header starts a region).
func (z *zeroSkipper) push(r *bin.Instruction) error {
	if len(z.held) > 0 {
		switch {
		case r.Label != "":
			if err := z.flush(rowAddr(r), true); err != nil {
				return err
			}
		case leadingZero(r):
			z.hold(r)
			return nil
		default:
			if err := z.flush(rowAddr(r), false); err != nil {
				return err
			}
			return z.write(r)
		}
	}
	if leadingZero(r) {
		z.hold(r)
		return nil
	}
	return z.write(r)
}

// hold keeps a copy of r (the caller reuses its rows between pages).
func (z *zeroSkipper) hold(r *bin.Instruction) {
	c := *r
	c.Relocations = append([]bin.Relocation(nil), r.Relocations...)
	z.held = append(z.held, c)
}

// end is the listing's end: a held run ends with the region, at the end
// of its last row.
func (z *zeroSkipper) end() error {
	if len(z.held) == 0 {
		return nil
	}
	last := &z.held[len(z.held)-1]
	return z.flush(rowAddr(last)+uint64(len(last.Bytes)/2), true)
}

// release prints the held rows as they are.
func (z *zeroSkipper) release() error {
	for i := range z.held {
		if err := z.write(&z.held[i]); err != nil {
			return err
		}
	}
	z.held = z.held[:0]
	return nil
}

// flush prints the held rows by objdump's rule. limit is the address of
// the row that ended the run: the region's end when atStop (a header's
// row, or the listing's end), else a row whose first byte is not zero.
func (z *zeroSkipper) flush(limit uint64, atStop bool) error {
	h := z.held
	defer func() { z.held = z.held[:0] }()
	for i := 0; i < len(h); {
		p := rowAddr(&h[i])
		nz := limit // the first non-zero byte at or after p, before limit
	scan:
		for j := i; j < len(h); j++ {
			a := rowAddr(&h[j])
			for k := 0; k+2 <= len(h[j].Bytes); k += 2 {
				if a+uint64(k/2) >= limit {
					break scan
				}
				if h[j].Bytes[k] != '0' || h[j].Bytes[k+1] != '0' {
					nz = a + uint64(k/2)
					break scan
				}
			}
		}
		n := nz - p
		if n >= 8 || atStop && nz == limit && n < 3 {
			resume := p + n&^3
			if atStop && nz == limit {
				resume = limit
			}
			var relocs []bin.Relocation
			j := i
			for ; j < len(h) && rowAddr(&h[j]) < resume; j++ {
				relocs = append(relocs, h[j].Relocations...)
			}
			if err := z.dots(h[i].Label, h[i].Address, relocs); err != nil {
				return err
			}
			i = j
			continue
		}
		if err := z.write(&h[i]); err != nil {
			return err
		}
		i++
	}
	return nil
}

// leadingZero reports whether a decoded row's first byte is zero (an
// undecodable row is printed as it is).
func leadingZero(r *bin.Instruction) bool {
	return r.Error == "" && strings.HasPrefix(r.Bytes, "00")
}

// rowAddr is a row's address (its "0x..." text parsed; 0 when it does
// not parse).
func rowAddr(r *bin.Instruction) uint64 {
	v, _ := strconv.ParseUint(strings.TrimPrefix(r.Address, "0x"), 16, 64)
	return v
}
