package repolint

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// forbidden are phrases that cite planning documents kept outside the
// repository. A comment or doc must name the behaviour instead, or point to
// the docs/ page that states it.
var forbidden = []struct {
	re     *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`(?i)\bseed 00[0-9]`), "cites a design document by number"},
	{regexp.MustCompile(`\b00[0-9] sections?\b`), "cites a design document section"},
	{regexp.MustCompile(`(?i)\bthe seed's\b`), "cites a design document"},
	{regexp.MustCompile(`\bseeds/`), "points outside the repository"},
	{regexp.MustCompile(`DESIGN\.md`), "cites a design document outside the repository"},
	{regexp.MustCompile(`\.\./shared\b`), "points outside the repository"},
	{regexp.MustCompile(`(^|\s)\(spec\)|\b[Ss]pec says\b`), "cites an unnamed specification"},
}

// specWord finds the word "specification" in any case.
var specWord = regexp.MustCompile(`(?i)\bspecifications?\b`)

// externalSpec names the external standards whose specification a line may
// cite; one of them must precede the word on the same line.
var externalSpec = regexp.MustCompile(`\b(MCP|PE/COFF|PE|COFF|ELF|Mach-O|DWARF|OpenMetrics|JSON Schema|JSON-RPC|OpenAPI|RFC|XDG Base Directory)\b`)

// violations returns why line breaks the rules, or nothing.
func violations(line string) []string {
	var out []string
	for _, f := range forbidden {
		if f.re.MatchString(line) {
			out = append(out, f.reason)
		}
	}
	for _, loc := range specWord.FindAllStringIndex(line, -1) {
		if !externalSpec.MatchString(line[:loc[0]]) {
			out = append(out, `"specification" without the external standard it belongs to earlier on the line`)
		}
	}
	return out
}

func TestViolations(t *testing.T) {
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{"// Limits are the job limits of <s> 000 section 8.", true},
		{"// (<S> 003 \"Continuations\").", true},
		{"// the host samples every second (<s>", false},
		{"// 000 section 5). Results get", true},
		{"// with the <s>'s capacities", true},
		{"see <sh>/notes", true},
		{"// Toolset names (<D> \"Toolsets\").", true},
		{"read <s>s/000.md", true},
		{"// as the (spec) says", true},
		{"// the spec says so", true},
		{"// as the specification says", true},
		{"Specification: see above", true},
		{"// specification of the MCP", true},
		{"// as the MCP specification asks of the receiver", false},
		{"// (PE/COFF specification, \"COFF File Header\")", false},
		{"// (Microsoft PE/COFF specification, \"Type Indicators\")", false},
		{"// (XDG Base Directory Specification defaults).", false},
		{"// the ELF gABI specification and the DWARF specification", false},
		{"// a PCG generator seeded with (seed, b)", false},
		{"// Bootstrap seed.", false},
		{"func spec(t *testing.T, argv ...string) Spec {", false},
		{"	spec.Filter = capture.Filter{}", false},
		{"// JSON-RPC 2.0 section 4: params", false},
		{"// RFC 4648 section 4, padded", false},
		{"// the pipe specification", true},
		{"	j, err := js.Start(hooked(spec))", false},
		{"// APE specification", true},
	} {
		// The cited names are spelled out only here, at run time, so that
		// this file does not itself read as a citation.
		line := strings.NewReplacer("<s>", "se"+"ed", "<S>", "Se"+"ed", "<D>", "DESIGN"+".md", "<sh>", "../"+"shared").Replace(tc.line)
		if got := len(violations(line)) > 0; got != tc.bad {
			t.Errorf("violations(%q) = %v, want a violation: %v", line, violations(line), tc.bad)
		}
	}
}

// checked are the file kinds written for people: code, docs, scripts and
// test scripts.
var checked = map[string]bool{".go": true, ".md": true, ".sh": true, ".txtar": true, ".toml": true, ".py": true, ".mjs": true}

// ownTestdata are the testdata trees this repository writes itself (CLI
// scripts, transcripts, error and tool-description snapshots); every other
// testdata directory holds inputs (binaries, traces, profiles, /proc
// copies) that are checked as they come.
var ownTestdata = map[string]bool{"cmd/inquest/testdata": true, "internal/cli/testdata": true}

// repoRoot returns the directory holding go.mod above the working directory.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// TestNoOutsideDocumentReferences walks the repository and names every
// file:line that cites a planning document kept outside it.
func TestNoOutsideDocumentReferences(t *testing.T) {
	root := repoRoot(t)
	self, err := filepath.Abs("words_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if d.Name() == "testdata" && !ownTestdata[rel] {
				return filepath.SkipDir
			}
			return nil
		}
		if !checked[filepath.Ext(path)] || path == self {
			return nil
		}
		files++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for n := 1; sc.Scan(); n++ {
			for _, why := range violations(sc.Text()) {
				t.Errorf("%s:%d: %s: %s", rel, n, why, strings.TrimSpace(sc.Text()))
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked only %d files under %s: the walk did not see the repository", files, root)
	}
}
