package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinFlagsZeroRejected: a flag given as zero or empty reaches the
// tool's schema (INVALID_ARGUMENT) instead of silently meaning "default".
func TestBinFlagsZeroRejected(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	har := filepath.Join(t.TempDir(), "a.har")
	os.WriteFile(har, []byte(`{"log":{"version":"1.2","creator":{"name":"t"},"entries":[]}}`), 0o644)
	for _, args := range [][]string{
		{"bin", "symbols", "--json", "--limit", "0", fixture},
		{"bin", "symbols", "--json", "--name", "", fixture},
		{"bin", "strings", "--json", "--limit", "0", fixture},
		{"bin", "strings", "--json", "--min-length", "0", fixture},
		{"bin", "strings", "--json", "--regex", "", fixture},
		{"bin", "disasm", "--json", "--start", "0x1040", "--max", "0", fixture},
		{"bin", "diff", "--json", "--limit", "0", fixture, fixture},
		{"bin", "diff", "--json", "--name", "", fixture, fixture},
		{"har", "show", "--json", "--limit", "0", har},
		{"har", "diff", "--json", "--limit", "0", har, har},
	} {
		out, errs, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(out+errs, "INVALID_ARGUMENT") {
			t.Errorf("%v: exit %d, want INVALID_ARGUMENT: %s %s", args, code, out, errs)
		}
	}
	// disasm pages by --max; --limit is not one of its flags.
	if _, _, code := runCLI(t, "bin", "disasm", "--start", "0x1040", "--limit", "5", fixture); code == 0 {
		t.Errorf("disasm --limit: exit 0, want a usage error")
	}
}

// TestHARShowTable: statuses render as "200×2, 404×1" (not Go map
// syntax) and control characters in URLs are escaped in table cells.
func TestHARShowTable(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	e := func(status, url string) string {
		return `{"request":{"method":"GET","url":"` + url + `"},"response":{"status":` + status + `,"content":{"size":1}},"time":1}`
	}
	har := filepath.Join(t.TempDir(), "a.har")
	doc := `{"log":{"version":"1.2","creator":{"name":"t"},"entries":[` + strings.Join([]string{e("404", "https://x.test/a"), e("200", "https://x.test/a"), e("200", "https://x.test/a"), e("200", `https://x.test/\u001b[31mred`)}, ",") + `]}}`
	os.WriteFile(har, []byte(doc), 0o644)
	out, errs, code := runCLI(t, "har", "show", har)
	if code != 0 {
		t.Fatalf("har show: %d %s", code, errs)
	}
	if !strings.Contains(out, "200×2, 404×1") || strings.Contains(out, "map[") {
		t.Errorf("statuses not rendered as counts:\n%s", out)
	}
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `\x1b[31mred`) {
		t.Errorf("control character in URL not escaped:\n%q", out)
	}
}

// TestBinNonUTF8Path: a FILE whose name is not UTF-8 is refused naming
// FILE and the remedy (a JSON argument cannot carry its bytes), for each
// bin command that takes one, instead of "does not exist".
func TestBinNonUTF8Path(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad\xff\xfename")
	if err := os.WriteFile(p, []byte("\x7fELF"), 0o644); err != nil {
		t.Skipf("this file system refuses non-UTF-8 names: %v", err)
	}
	for _, args := range [][]string{{"bin", "inspect", p}, {"bin", "strings", p}, {"bin", "symbols", p}, {"har", "show", p}} {
		var out, errb strings.Builder
		code := Run(t.Context(), args, strings.NewReader(""), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), "not valid UTF-8") || !strings.Contains(errb.String(), "FILE") {
			t.Errorf("%v: exit %d, stderr %q", args[:2], code, errb.String())
		}
	}
}

// TestEvidenceStoreNotADirectory: evidence location and sweep on an
// INQUEST_DATA_DIR that is a file say so (INVALID_ARGUMENT naming the
// path) instead of reporting an absent store.
func TestEvidenceStoreNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("INQUEST_DATA_DIR", f)
	for _, args := range [][]string{{"evidence", "location"}, {"evidence", "sweep"}} {
		var out, errb strings.Builder
		code := Run(t.Context(), args, strings.NewReader(""), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), "is not a directory") || strings.Contains(out.String(), `"exists": false`) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}
