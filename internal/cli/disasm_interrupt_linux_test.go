//go:build linux

package cli

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var resumeLineRE = regexp.MustCompile(`interrupted: resume with --all --cursor (\S+)`)

// TestDisasmAllInterruptResumes: SIGINT during `bin disasm --all` (of
// the inquest binary's .text, millions of instructions) exits 130 and
// prints a resume cursor on stderr; that cursor resumes, at the
// instruction after the last line printed, both as --all and as a page,
// each with a --max other than the interrupted listing's.
func TestDisasmAllInterruptResumes(t *testing.T) {
	e := newHeEnv(t)
	input := e.bin
	cmd := exec.Command(e.bin, "bin", "disasm", input, "--section", ".text", "--all", "--max", "100")
	cmd.Env = e.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var last string
	n := 0
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "0x") {
			last = l
		}
		if n++; n == 2000 {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the interrupted listing does not exit")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v after SIGINT; stderr %s", err, stderr.String())
	}
	m := resumeLineRE.FindStringSubmatch(stderr.String())
	if m == nil || last == "" {
		t.Fatalf("no resume cursor on stderr (last line %q): %s", last, stderr.String())
	}
	f := strings.SplitN(last, "\t", 3)
	a, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(f[0], "0x"), ":"), 16, 64)
	if err != nil || len(f) < 2 {
		t.Fatalf("last line %q", last)
	}
	want := "0x" + strconv.FormatUint(a+uint64(len(f[1])/2), 16)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"page --max 7", []string{"--json", "--max", "7"}},
		{"--all --max 3", []string{"--all", "--max", "3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"bin", "disasm", input, "--section", ".text", "--cursor", m[1]}, c.args...)
			r := exec.Command(e.bin, args...)
			r.Env = e.env
			out, err := r.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var rerr strings.Builder
			r.Stderr = &rerr
			if err := r.Start(); err != nil {
				t.Fatal(err)
			}
			first := ""
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, 1<<20)
			var body strings.Builder
			for sc.Scan() {
				if strings.Contains(strings.Join(c.args, " "), "--all") {
					if l := sc.Text(); strings.HasPrefix(l, "0x") {
						first = strings.TrimSuffix(strings.SplitN(l, "\t", 2)[0], ":")
						break
					}
					continue
				}
				body.WriteString(sc.Text())
			}
			r.Process.Signal(syscall.SIGINT)
			r.Wait()
			if first == "" {
				var env struct {
					Data struct {
						Rows []struct{ Address string }
					}
				}
				if json.Unmarshal([]byte(body.String()), &env) != nil || len(env.Data.Rows) != 7 {
					t.Fatalf("the page: %s %s", body.String(), rerr.String())
				}
				first = env.Data.Rows[0].Address
			}
			if first != want {
				t.Fatalf("resumed at %s, the instruction after the last line printed (%q) is at %s; stderr %s", first, last, want, rerr.String())
			}
		})
	}
}
