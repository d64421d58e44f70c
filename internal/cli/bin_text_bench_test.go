package cli

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// BenchmarkBinInspectText runs `inquest bin inspect FILE` (the text table)
// in process on $INQUEST_BENCH_BINARY (default the C library).
func BenchmarkBinInspectText(b *testing.B) {
	p := os.Getenv("INQUEST_BENCH_BINARY")
	if p == "" {
		p = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	}
	if _, err := os.Stat(p); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if code := Run(context.Background(), []string{"bin", "inspect", p}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit status %d", code)
		}
	}
}
