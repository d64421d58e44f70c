package bin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Interrupted is DisassembleAll's error when its context ends between
// pages: Cursor resumes the listing after the last row emitted (the
// disassemble tool's cursor: a page of any max_instructions, or another
// DisassembleAll, continues from it) and Err is the context's error.
type Interrupted struct {
	Cursor string
	Err    error
}

func (i *Interrupted) Error() string { return "interrupted: " + i.Err.Error() }

// Unwrap returns the context's error.
func (i *Interrupted) Unwrap() error { return i.Err }

// MaxAllPage is the largest page DisassembleAll decodes at once (the
// disassemble tool's own max_instructions ceiling).
const MaxAllPage = 5000

// DisassembleAll runs the disassemble tool's listing from args (its
// arguments as JSON, already validated against its input schema, e.g.
// by tool.Registry.Validate; a cursor resumes where that page ends) to
// the end of the requested code, in one call: the file is opened, parsed
// and symbolized once and each page of at most page instructions (1 to
// MaxAllPage; max_instructions in args is only part of the cursor's
// identity) is decoded from where the previous one ended. Every row is
// passed to emit in address order, as the tool's pages carry it; every
// distinct limitation (the tool's warnings other than paging notices) is
// passed to warn once, when first found. Memory is bounded by one page.
// It returns emit's first error, an *Interrupted (with the resume cursor,
// wrapping the context's error) when ctx ends between pages (the rows
// emitted are complete rows), or the tool's own
// typed error (*contract.Error: a missing file, an unknown symbol, an
// invalid cursor; UnknownCodeError when the code cannot be located, as
// in a truncated file).
func (e Env) DisassembleAll(ctx context.Context, args json.RawMessage, page int, emit func(*Instruction) error, warn func(string)) (err error) {
	if page < 1 || page > MaxAllPage {
		e := contract.Errorf(contract.CodeInvalidArgument, "the page size must be 1 to %d instructions, not %d", MaxAllPage, page)
		e.Field = "/max_instructions"
		return e
	}
	var a disasmArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return contract.Errorf(contract.CodeInvalidArgument, "the arguments do not decode: %v", err)
	}
	c := &invocation{env: e, ctx: ctx, tool: "disassemble", raw: args, res: contract.NewResult(Source, e.now(), nil), limit: DefaultLimit}
	defer c.close()
	defer mappedFault(&err)
	if err := e.disassemble(c, a); err != nil {
		return vanished(err, a.Cursor != "")
	}
	warned := map[string]bool{}
	flush := func() {
		for _, w := range c.res.Warnings {
			if !warned[w] {
				warned[w] = true
				warn(w)
			}
		}
	}
	if c.insns == nil {
		// The code could not be resolved to bytes (the tool answered
		// with an unknown, as a truncated file's missing section table
		// leaves it): its limitations say why, and the listing fails
		// with the unresolved structures, as objdump exits 1.
		flush()
		if p := c.data; p != nil {
			if ue := UnknownCodeError(p.Coverage.Upstream, p.Unresolved); ue != nil {
				return ue
			}
		}
		return nil
	}
	pg := e.pager(ctx, c.tool, c.raw, c.files...)
	pos, err := pg.resume(a.Cursor)
	if err != nil {
		return err
	}
	first := true // the call's first page: its first row is labelled
	for {
		if err := ctx.Err(); err != nil {
			return &Interrupted{Cursor: pg.next(pos), Err: err}
		}
		rows, next, err := c.insns(pos, page)
		if err != nil && ctx.Err() != nil && len(rows) == 0 {
			return &Interrupted{Cursor: pg.next(pos), Err: ctx.Err()}
		}
		if err != nil {
			return contract.AsError(err)
		}
		if c.onFinish != nil {
			c.onFinish()
		}
		flush()
		labelRows(rows, c.symIdx, c.symSect, c.symSectName, c.symSectAddr, first)
		first = false
		for i := range rows {
			if err := emit(&rows[i]); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		pos = *next
	}
}

// labelRows sets the Label of each row that starts a symbol of x (x's
// symbols are sorted by address, one per address: the one objdump
// names), and, when first, of the listing's first row whatever it is
// (its symbol and offset, as objdump heads a section that starts inside
// one, or before the first symbol of its section sect: the symbol that
// follows, with a negative offset; in a section with no symbol of its
// own, the section's name secName and the offset from its address
// secAddr; a listing resumed from a cursor is headed so too). Rows are in address order; a row whose address does not parse
// is left unlabelled.
func labelRows(rows []Instruction, x *symIndex, sect int, secName string, secAddr uint64, first bool) {
	if x == nil || len(rows) == 0 {
		return
	}
	lo, err := parseHex(rows[0].Address)
	if err != nil {
		return
	}
	i := sort.Search(len(x.syms), func(i int) bool { return x.syms[i].value >= lo })
	if first {
		rows[0].Label = x.name(lo)
		if s, ok := x.nearest(lo); !ok || s.sect != sect {
			rows[0].Label = firstLabel(x, i, lo, sect, secName, secAddr)
		}
	}
	for r := range rows {
		if i >= len(x.syms) {
			return
		}
		a, err := parseHex(rows[r].Address)
		if err != nil {
			continue
		}
		for i < len(x.syms) && x.syms[i].value < a {
			i++
		}
		if i < len(x.syms) && x.syms[i].value == a {
			rows[r].Label = x.syms[i].display()
			i++
		}
	}
}

// firstLabel heads a listing starting at lo whose nearest preceding
// symbol is not of its section sect, as objdump's find_symbol_for_address
// with require_sec and objdump_print_addr_with_sym choose: the last
// symbol of sect at or before lo ("<main+0x10>"), else the first after
// it with a negative offset ("<abort@@GLIBC_2.2.5-0x1f>"), else the
// section's name with lo's offset from its address ("<.text>",
// "<.text+0x20>"), never a symbol of another section (a stripped
// binary's .text after __cxa_finalize@plt). i is the index of the first
// symbol at or after lo.
func firstLabel(x *symIndex, i int, lo uint64, sect int, secName string, secAddr uint64) string {
	j := i
	if j < len(x.syms) && x.syms[j].value == lo {
		j++
	}
	for j--; j >= 0 && x.syms[j].value >= secAddr; j-- {
		if y := x.syms[j]; y.sect == sect {
			if y.value == lo {
				return y.display()
			}
			return fmt.Sprintf("%s+0x%x", y.display(), lo-y.value)
		}
	}
	for k := i; k < len(x.syms); k++ {
		if y := x.syms[k]; y.sect == sect && y.value > lo {
			return fmt.Sprintf("%s-0x%x", y.display(), y.value-lo)
		}
	}
	if secName == "" {
		return x.name(lo)
	}
	switch {
	case lo > secAddr:
		return fmt.Sprintf("%s+0x%x", secName, lo-secAddr)
	case lo < secAddr:
		return fmt.Sprintf("%s-0x%x", secName, secAddr-lo)
	}
	return secName
}
