package testbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	cMu    sync.Mutex
	cDir   string
	cBuilt = map[string]string{}
)

// BuildC compiles the C program src with gcc (flags appended to the
// command line, e.g. "-pthread") once per test binary and returns the
// executable's path, named name. t is skipped when gcc is missing
// (.ci/run installs it); a compile error fails t with gcc's output.
// Cleanup removes the executables.
func BuildC(t testing.TB, name, src string, flags ...string) string {
	t.Helper()
	if _, e := exec.LookPath("gcc"); e != nil {
		t.Skip("gcc not installed (.ci/run installs it)")
	}
	sum := sha256.Sum256([]byte(name + "\x00" + src + "\x00" + filepath.Join(flags...)))
	key := hex.EncodeToString(sum[:8])
	cMu.Lock()
	defer cMu.Unlock()
	if p, ok := cBuilt[key]; ok {
		return p
	}
	if cDir == "" {
		d, err := os.MkdirTemp("", "inquest-cprog")
		if err != nil {
			t.Fatal(err)
		}
		cDir = d
	}
	dir := filepath.Join(cDir, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	c := out + ".c"
	if err := os.WriteFile(c, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-O1", "-o", out, c}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	cBuilt[key] = out
	return out
}
