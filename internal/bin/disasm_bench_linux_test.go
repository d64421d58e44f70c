//go:build linux

package bin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// BenchmarkDisassembleLibcPages pages through the C library's .text with
// the disassemble tool as an MCP client does (tool.Registry.Call, the
// schema validation, the envelope encoded, next_cursor followed until the
// listing ends, max_instructions 5000 and the default 200) and runs
// `objdump -d -w -j .text` on the same file, interleaved in every
// iteration. It reports each side's time per iteration, their ratio and
// the pages and instructions read. Each iteration starts without the rows
// an earlier listing left in the process (a first listing of the file).
func BenchmarkDisassembleLibcPages(b *testing.B) {
	p := os.Getenv("INQUEST_BENCH_LIBC")
	if p == "" {
		p = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	}
	if _, err := os.Stat(p); err != nil {
		b.Skip("no C library at " + p)
	}
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		b.Skip("objdump not installed")
	}
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer null.Close()
	r := registry(b, "")
	ctx := context.Background()
	for _, max := range []int{5000, 0} {
		name := "max=" + strconv.Itoa(max)
		if max == 0 {
			name = "default"
		}
		b.Run(name, func(b *testing.B) {
			var ours, theirs, oursCPU, theirsCPU time.Duration
			pages, insns := 0, 0
			for i := 0; i < b.N; i++ {
				// Every iteration is a first listing: the rows kept
				// from an earlier one (textMemo) are dropped.
				putTextMemo(nil)
				c0 := selfCPU()
				t0 := time.Now()
				args := map[string]any{"path": p, "section": ".text"}
				if max > 0 {
					args["max_instructions"] = max
				}
				pages, insns = 0, 0
				for {
					raw, _ := json.Marshal(args)
					res, err := r.Call(ctx, "disassemble", raw)
					if err != nil {
						b.Fatal(err)
					}
					body, _ := contract.Marshal(res, nil)
					var env struct {
						Data struct {
							Rows       []json.RawMessage `json:"rows"`
							NextCursor *string           `json:"next_cursor"`
						} `json:"data"`
					}
					if err := json.Unmarshal(body, &env); err != nil {
						b.Fatal(err)
					}
					pages++
					insns += len(env.Data.Rows)
					if env.Data.NextCursor == nil {
						break
					}
					args["cursor"] = *env.Data.NextCursor
				}
				t1 := time.Now()
				oursCPU += selfCPU() - c0
				cmd := exec.Command(objdump, "-d", "-w", "-j", ".text", p)
				cmd.Stdout = null
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t1)
				theirsCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(ours.Seconds()*1e3/float64(b.N), "inquest-ms/op")
			b.ReportMetric(theirs.Seconds()*1e3/float64(b.N), "objdump-ms/op")
			b.ReportMetric(ours.Seconds()/theirs.Seconds(), "inquest/objdump")
			b.ReportMetric(oursCPU.Seconds()/theirsCPU.Seconds(), "cpu-inquest/objdump")
			b.ReportMetric(float64(pages), "pages")
			b.ReportMetric(float64(insns), "instructions")
		})
	}
}

// selfCPU is this process's user and system CPU time so far (the
// benchmark's side; a loaded machine stretches wall time, not CPU time).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
