package perf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The package's expensive fixtures (reference tools built from module
// sources, programs built and run to write profiles, `go test -bench`
// result files, the npm-installed trace importers) are built at most once
// per machine: each lives in its own directory under
// os.UserCacheDir()/inquest-test/, named by the sha256 of everything that
// determines it (sources, `go version`, the pinned module versions), so a
// second run, with or without a warm GOCACHE, reuses it. A directory is
// built under a temporary name and renamed into place, so concurrent test
// binaries never see a half-built fixture; a stale one is simply never
// named again.

var (
	goVersionOnce sync.Once
	goVersionText string
	goVersionErr  error
)

// goVersion is the output of `go version` (part of every fixture key:
// a new toolchain rebuilds the fixtures it wrote).
func goVersion() (string, error) {
	goVersionOnce.Do(func() {
		out, err := exec.Command("go", "version").Output()
		if err != nil {
			goVersionErr = fmt.Errorf("go version: %v", err)
			return
		}
		goVersionText = strings.TrimSpace(string(out))
	})
	return goVersionText, goVersionErr
}

// fixtureRoot is the directory holding the cached fixtures:
// os.UserCacheDir()/inquest-test, or a directory under os.TempDir() when
// the machine has no user cache directory.
func fixtureRoot() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "inquest-test")
	}
	return filepath.Join(os.TempDir(), "inquest-test")
}

// fixtureKey is the hex sha256 of parts (each length-prefixed, so no two
// part lists collide).
func fixtureKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cachedFixture returns the directory of the fixture name with the key
// parts (the go version is added), building it with build (into an empty
// directory) when no run has built it yet.
func cachedFixture(name string, build func(dir string) error, parts ...string) (string, error) {
	gv, err := goVersion()
	if err != nil {
		return "", err
	}
	root := fixtureRoot()
	final := filepath.Join(root, name+"-"+fixtureKey(append([]string{name, gv}, parts...)...))
	if st, err := os.Stat(filepath.Join(final, ".complete")); err == nil && st.Mode().IsRegular() {
		return final, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, name+".tmp-")
	if err != nil {
		return "", err
	}
	if err := build(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another test binary finished first: use its copy.
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(final, ".complete")); serr != nil {
			return "", err
		}
	}
	return final, nil
}

// moduleVersion is the version go.mod (at the repository root) requires
// of mod.
func moduleVersion(mod string) (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(mod) + `\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("go.mod does not require %s", mod)
	}
	return string(m[1]), nil
}

// buildModuleTool builds the command pkg of module mod at the version
// go.mod requires, in a module of its own (so the tool's own dependencies,
// such as pprof's readline, never enter this module's go.mod), and returns
// the binary's path. The binary is cached (see cachedFixture).
func buildModuleTool(name, mod, pkg string) (string, error) {
	ver, err := moduleVersion(mod)
	if err != nil {
		return "", err
	}
	dir, err := cachedFixture(name, func(dir string) error {
		src := filepath.Join(dir, "src")
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		gomod := fmt.Sprintf("module inquest.test/%s\n\ngo 1.26\n\nrequire %s %s\n", name, mod, ver)
		tools := fmt.Sprintf("//go:build tools\n\npackage tools\n\nimport _ %q\n", pkg)
		if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(src, "tools.go"), []byte(tools), 0o644); err != nil {
			return err
		}
		env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		for _, args := range [][]string{
			{"mod", "tidy"},
			{"build", "-trimpath", "-o", filepath.Join(dir, name), pkg},
		} {
			cmd := exec.Command("go", args...)
			cmd.Dir, cmd.Env = src, env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go %s for %s@%s: %v\n%s", strings.Join(args, " "), mod, ver, err, out)
			}
		}
		return nil
	}, mod, ver, pkg)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

var (
	pprofOnce sync.Once
	pprofBin  string
	pprofErr  error
)

// pprofPath returns the pprof binary built from github.com/google/pprof
// at the version go.mod requires (the reference every profile test
// compares with), built once per machine and shared by all tests.
func pprofPath(t testing.TB) string {
	t.Helper()
	pprofOnce.Do(func() {
		pprofBin, pprofErr = buildModuleTool("pprof", "github.com/google/pprof", "github.com/google/pprof")
	})
	if pprofErr != nil {
		t.Fatal(pprofErr)
	}
	return pprofBin
}

// pprofCmd is an exec.Cmd running the reference pprof with args.
func pprofCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(pprofPath(t), args...)
}
