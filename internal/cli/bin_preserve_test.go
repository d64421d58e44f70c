package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inquest-dev/inquest/internal/evidence"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestBinPreserveThroughPreserveEvidence: --preserve runs the tool, then
// preserve_evidence on its analysis_id; the record holds every row (not
// only the page printed) and data.evidence names it.
func TestBinPreserveThroughPreserveEvidence(t *testing.T) {
	store := t.TempDir()
	t.Setenv("INQUEST_DATA_DIR", store)
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	out, errs, code := runCLI(t, "bin", "symbols", "--json", "--limit", "2", "--preserve", fixture)
	var env struct {
		Data struct {
			AnalysisID string `json:"analysis_id"`
			Evidence   struct {
				ID string `json:"evidence_id"`
			} `json:"evidence"`
		} `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil || env.Data.Evidence.ID == "" || env.Data.AnalysisID == "" {
		t.Fatalf("symbols --preserve: %d %s %s", code, out, errs)
	}
	st, err := evidence.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := st.Get(env.Data.Evidence.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Toolset != "bin" || m.Operation != "list_symbols" || fmt.Sprint(m.Coverage["rows"]) == "2" {
		t.Errorf("record %s %s coverage %v", m.Toolset, m.Operation, m.Coverage)
	}
	// Table output announces the record on stderr.
	_, errs, code = runCLI(t, "bin", "inspect", "--preserve", fixture)
	if code != 0 || !strings.Contains(errs, "preserved: ev-") {
		t.Errorf("inspect --preserve: %d %s", code, errs)
	}
}

// TestBinPreserveChecksStoreFirst (issue 23 case 4): with an evidence
// directory that cannot be created (a file in its path), --preserve fails
// at once with the store's own code, REPOSITORY_IO_FAILED with
// details.cause ENOTDIR, before any analysis, and says how to recover.
func TestBinPreserveChecksStoreFirst(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(blocker, "store"))
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	out, _, code := runCLI(t, "bin", "symbols", "--json", "--preserve", fixture)
	if code != 1 || !strings.Contains(out, "REPOSITORY_IO_FAILED") || !strings.Contains(out, `"cause": "ENOTDIR"`) || !strings.Contains(out, "nothing was analysed") || strings.Contains(out, `"rows"`) {
		t.Fatalf("unusable store: %d %s", code, out)
	}
	// Without --preserve the same call works: the store is not needed.
	if _, _, code := runCLI(t, "bin", "symbols", "--json", fixture); code != 0 {
		t.Errorf("without --preserve: exit %d", code)
	}
}

// TestBinPreserveUnsafeStore: --preserve into an evidence directory the
// store refuses as unsafe (writable by others; owned by another user when
// the test runs as root) fails with the store's own PERMISSION_DENIED,
// as docs/errors.md says, before any analysis.
func TestBinPreserveUnsafeStore(t *testing.T) {
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"writable by others": open}
	if os.Geteuid() == 0 {
		other := filepath.Join(t.TempDir(), "other")
		if err := os.Mkdir(other, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		dirs["another user's"] = other
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			t.Setenv("INQUEST_DATA_DIR", dir)
			out, _, code := runCLI(t, "bin", "symbols", "--json", "--preserve", fixture)
			var m struct {
				Error struct {
					Code      string `json:"code"`
					Message   string `json:"message"`
					Retryable bool   `json:"retryable"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("%d %s", code, out)
			}
			if code != 1 || m.Error.Code != "PERMISSION_DENIED" || m.Error.Retryable || !strings.Contains(m.Error.Message, "--preserve") || strings.Contains(out, `"rows"`) {
				t.Fatalf("unsafe store: %d %s", code, out)
			}
		})
	}
}

// cancelAfter is a context whose Err turns to context.Canceled after its
// first n calls: a deterministic stand-in for SIGINT arriving mid-scan.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestBinStringsCancelledPrintsPartial (issue 23 case 3): `bin strings
// --regex` cancelled mid-scan (as SIGINT cancels the command's context)
// prints the matches of the scanned range, warns that the call was
// cancelled with the range, and exits 130.
func TestBinStringsCancelledPrintsPartial(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	var b strings.Builder
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "s%07d\n", i)
	}
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(6)
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"bin", "strings", "--json", "--encoding", "ascii", "--regex", "000$", "--limit", "1000", p}, strings.NewReader(""), &out, &errb)
	var env struct {
		Status   string   `json:"status"`
		Warnings []string `json:"warnings"`
		Coverage struct {
			Cancelled bool `json:"cancelled"`
			Scanned   *struct{ From, To string }
		} `json:"coverage"`
		Data struct {
			Rows []map[string]any `json:"rows"`
		} `json:"data"`
	}
	if err := json.Unmarshal(out.Bytes(), &env); err != nil {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if code != 130 || env.Status != "partial" || !env.Coverage.Cancelled || env.Coverage.Scanned == nil || len(env.Data.Rows) == 0 || !strings.Contains(strings.Join(env.Warnings, " "), "cancelled") {
		t.Fatalf("exit %d status %s coverage %+v rows %d warnings %v", code, env.Status, env.Coverage, len(env.Data.Rows), env.Warnings)
	}
}

// TestBinPreserveWriteFailureKeepsResult (issue 23 case 4): when the
// store opens but the record cannot be written (a 1 MiB file system, a
// 3 MB input), the computed result is still printed, with the write
// failure as a warning.
func TestBinPreserveWriteFailureKeepsResult(t *testing.T) {
	dir := testbuild.SmallTmpfs(t, "1m")
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(dir, "store"))
	var b strings.Builder
	for i := range 300_000 {
		fmt.Fprintf(&b, "s%07d\n", i)
	}
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, "bin", "strings", "--json", "--encoding", "ascii", "--regex", "99999$", "--preserve", p)
	var env struct {
		Status   string   `json:"status"`
		Warnings []string `json:"warnings"`
		Data     struct {
			Rows     []map[string]any `json:"rows"`
			Evidence any              `json:"evidence"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if code != 0 || env.Status != "complete" || len(env.Data.Rows) != 3 || env.Data.Evidence != nil || !strings.Contains(strings.Join(env.Warnings, " "), "was not preserved") {
		t.Fatalf("exit %d status %s rows %d evidence %v warnings %v", code, env.Status, len(env.Data.Rows), env.Data.Evidence, env.Warnings)
	}
}
