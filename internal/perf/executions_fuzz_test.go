package perf

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadExecutions: any bytes either decode to records that summarize
// without panicking, or fail with a typed error.
func FuzzReadExecutions(f *testing.F) {
	f.Add([]byte(`{"case":"a","case_index":0,"block":0,"termination":"exited","exit_code":0,"exit_owner":"workload","wall_time_ns":5,"included":true}` + "\n" +
		`{"case":"b","case_index":1,"block":0,"termination":"exited","exit_code":0,"exit_owner":"workload","wall_time_ns":9,"max_rss_bytes":100,"included":true}` + "\n"))
	f.Add([]byte("{}\n\n{\"termination\":\"x\"}"))
	f.Add([]byte(`{"case":"a","case_index":-3,"block":-1,"termination":"signaled","exit_owner":"collector","included":false,"excluded_reason":"oracle_failed"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "x.jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := readExecutions(context.Background(), p, 1<<16)
		if err != nil {
			return
		}
		for _, m := range []string{"wall_time_ns", "cpu_time_ns", "max_rss_bytes"} {
			_ = SummarizeExecutions(recs, m, "mean_difference", 0.1, 1)
		}
		for i := range recs {
			_ = recs[i].row()
		}
	})
}
