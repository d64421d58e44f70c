package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"

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
	Address, Bytes, Text, Error string
	TargetSymbol                string `json:"target_symbol"`
	Relocations                 []struct{ Address, Type, Target string }
}

// rowText is the text column of r: its instruction text (or its error in
// parentheses) and its target symbol in angle brackets, as objdump writes it.
func (r *disasmRow) rowText() string {
	t := r.Text
	if r.Error != "" {
		t = "(" + r.Error + ")"
	}
	if r.TargetSymbol != "" {
		t += "  <" + r.TargetSymbol + ">"
	}
	return t
}

// runDisasmAll is `inquest bin disasm --all`: it pages through the whole
// requested code (a symbol, a section or an address range) with the
// disassemble tool in one runtime, following next_cursor from the given
// --cursor (or the start) to the end, and streams every row to stdout as
// it arrives, one line per instruction ("ADDRESS:\tBYTES\tTEXT", a
// relocation on its own indented line), as objdump -d prints a section.
// Memory is bounded by one page (--max rows, 5,000 by default). Each
// distinct warning is printed once on stderr, when first seen. --json and
// --preserve, which describe one page, are refused with INVALID_ARGUMENT
// naming the flag. A call cancelled by SIGINT stops after the rows
// already printed and exits 130.
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
	if _, ok := args["max_instructions"]; !ok {
		args["max_instructions"] = allPageSize
	}
	ctx := cmd.Context()
	rt := &Runtime{Registry: tool.NewRegistry()}
	defer rt.Close()
	if err := buildBin(ctx, rt, runtimeOptions{Stderr: env.Stderr, NoHost: true, BinTools: []string{"disassemble"}}); err != nil {
		return err
	}
	call := rt.Registry.Call
	if f.prechecked {
		call = rt.Registry.CallPrechecked
	}
	bw := bufio.NewWriterSize(env.Stdout, 64<<10)
	defer bw.Flush()
	warned := map[string]bool{}
	var line []byte
	for first := true; ; first = false {
		raw, _ := json.Marshal(args)
		res, err := call(ctx, "disassemble", raw)
		if err != nil {
			if ctx.Err() != nil && !first {
				_ = bw.Flush()
				return exitCode(130)
			}
			_ = bw.Flush()
			return f.failure(env, err)
		}
		body, _ := json.Marshal(res.Data)
		var d struct {
			Slice      *binSlice
			Rows       []disasmRow
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &d); err != nil {
			return err
		}
		for _, w := range res.Warnings {
			if !warned[w] {
				warned[w] = true
				fmt.Fprintln(env.Stderr, "warning:", w)
			}
		}
		if first {
			printSlice(bw, d.Slice)
		}
		for i := range d.Rows {
			r := &d.Rows[i]
			line = append(line[:0], r.Address...)
			line = append(line, ":\t"...)
			line = append(line, r.Bytes...)
			line = append(line, '\t')
			line = append(line, cell(r.rowText())...)
			line = append(line, '\n')
			for _, rl := range r.Relocations {
				line = append(line, "\t\t  "...)
				line = append(line, rl.Address...)
				line = append(line, ": "...)
				line = append(line, cell(rl.Type)...)
				line = append(line, '\t')
				line = append(line, cell(rl.Target)...)
				line = append(line, '\n')
			}
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			_ = bw.Flush()
			if d.NextCursor != nil {
				fmt.Fprintf(env.Stderr, "stopped: resume with --all --cursor %s\n", *d.NextCursor)
			}
			return exitCode(130)
		}
		if d.NextCursor == nil || strings.TrimSpace(*d.NextCursor) == "" {
			return bw.Flush()
		}
		args["cursor"] = *d.NextCursor
	}
}
