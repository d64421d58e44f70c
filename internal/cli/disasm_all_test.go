package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDisasmAll lists the fixture's .text with `disasm --all` (at several
// page sizes) and page by page with --max and --cursor (--json): both
// hold the same instructions in the same order, every --max page but the
// last holds exactly --max rows, and the listing's addresses are
// objdump -d's instruction addresses of the same section, read in the
// same run. Flags that describe one page are refused with
// INVALID_ARGUMENT naming them.
func TestDisasmAll(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	type row struct{ Address, Bytes string }
	var paged []row
	cursor, second := "", ""
	for pages := 0; ; pages++ {
		args := []string{"bin", "disasm", "--json", "--section", ".text", "--max", "10", fixture}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		out, errs, code := runCLI(t, args...)
		var env struct {
			Data struct {
				Rows []row  `json:"rows"`
				Next string `json:"next_cursor"`
			} `json:"data"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &env) != nil {
			t.Fatalf("page %d: exit %d: %s %s", pages, code, out, errs)
		}
		if env.Data.Next != "" && len(env.Data.Rows) != 10 {
			t.Fatalf("page %d of --max 10 holds %d rows", pages, len(env.Data.Rows))
		}
		paged = append(paged, env.Data.Rows...)
		if pages == 0 {
			second = env.Data.Next
		}
		if cursor = env.Data.Next; cursor == "" {
			break
		}
		if pages > 1000 {
			t.Fatal("the listing does not end")
		}
	}
	if len(paged) < 30 {
		t.Fatalf("the fixture's .text holds %d instructions; the test needs several pages", len(paged))
	}
	var want []string
	if objdump, err := exec.LookPath("objdump"); err == nil {
		out, err := exec.Command(objdump, "-d", "-w", "-j", ".text", fixture).Output()
		if err != nil {
			t.Fatal(err)
		}
		insn := regexp.MustCompile(`^\s+([0-9a-f]+):\t`)
		for _, l := range strings.Split(string(out), "\n") {
			if m := insn.FindStringSubmatch(l); m != nil {
				want = append(want, "0x"+m[1])
			}
		}
	}
	for _, tt := range []struct {
		name string
		args []string
		skip int // rows of the pages before the first line
	}{{"default page", nil, 0}, {"--max 10", []string{"--max", "10"}, 0}, {"--max 1", []string{"--max", "1"}, 0}, {"--cursor of page 1", []string{"--max", "10", "--cursor", second}, 10}, {"--cursor of page 1 without --max", []string{"--cursor", second}, 10}, {"--cursor of page 1 with --max 3", []string{"--max", "3", "--cursor", second}, 10}} {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := runCLI(t, append([]string{"bin", "disasm", "--all", "--section", ".text", fixture}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if strings.HasPrefix(l, "0x") { // not a symbol's header
					lines = append(lines, l)
				}
			}
			paged, want := paged[tt.skip:], want[min(tt.skip, len(want)):]
			if len(lines) != len(paged) {
				t.Fatalf("--all printed %d lines, the pages hold %d rows", len(lines), len(paged))
			}
			for i, l := range lines {
				f := strings.SplitN(l, "\t", 3)
				if len(f) != 3 || f[0] != paged[i].Address+":" || f[1] != paged[i].Bytes {
					t.Fatalf("line %d is %q, row %d of the pages is %+v", i, l, i, paged[i])
				}
				if want != nil && (i >= len(want) || f[0] != want[i]+":") {
					t.Fatalf("line %d is %q; objdump's instruction %d is at %v", i, l, i, want[min(i, len(want)-1)])
				}
			}
			if want != nil && len(want) != len(lines) {
				t.Fatalf("%d instructions, objdump lists %d", len(lines), len(want))
			}
			if strings.Contains(errs, "page of rows") {
				t.Errorf("--all printed a paging notice: %s", errs)
			}
		})
	}
	for _, flag := range []string{"--json", "--preserve"} {
		out, errs, code := runCLI(t, "bin", "disasm", "--all", flag, "--section", ".text", fixture)
		if code != 1 || !strings.Contains(out+errs, "INVALID_ARGUMENT") || !strings.Contains(out+errs, flag) {
			t.Errorf("--all %s: exit %d: %s %s", flag, code, out, errs)
		}
	}
	_, errs, code := runCLI(t, "bin", "disasm", "--all", "--max", strconv.Itoa(5001), "--section", ".text", fixture)
	if code != 1 || !strings.Contains(errs, "--max") {
		t.Errorf("--all --max 5001: exit %d: %s", code, errs)
	}
}

// TestDisasmAllFullDisk: `disasm --all` of a section whose listing
// outgrows the output buffer, written to /dev/full, fails with the write
// error as the system gives it (exit 1), not as the tool's
// INTERNAL_ERROR, and stops at the first failed write.
func TestDisasmAllFullDisk(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	defer full.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	code := Run(context.Background(), []string{"bin", "disasm", "--all", "--section", ".text", exe}, strings.NewReader(""), full, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no space left on device") || strings.Contains(errb.String(), "INTERNAL_ERROR") {
		t.Fatalf("exit %d, stderr %q: want exit 1 and the write error", code, errb.String())
	}
}
