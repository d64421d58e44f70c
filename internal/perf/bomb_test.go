package perf

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// writeGzipZeros writes n zero bytes gzipped at level (a decompression
// bomb: gzip -1 of 1 GiB of zeros is 4.7 MB) and returns its path.
func writeGzipZeros(t *testing.T, path string, n int64, layers int) string {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(zero)) {
		if _, err := zw.Write(zero[:min(left, int64(len(zero)))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < layers; i++ {
		var outer bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&outer, gzip.BestSpeed)
		zw.Write(buf.Bytes())
		zw.Close()
		buf = outer
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDecompressionBomb: a gzip bomb stops inflating as soon as it passes
// the call's max_memory_bytes (its default when the request gives none),
// LIMIT_EXCEEDED with the bytes read; a second gzip layer (which
// go tool pprof, the reference run here, does not read either) is not
// inflated without a bound.
func TestDecompressionBomb(t *testing.T) {
	const deflt = 4 << 20
	storeDir := filepath.Join(t.TempDir(), "store")
	rt := New(Config{Ceilings: Ceilings{MaxRows: 100, DefaultRows: 10, MaxInputBytes: 1 << 30, TimeoutSeconds: 60, MaxMemoryBytes: 2 << 30, DefaultMemoryBytes: deflt},
		OpenStore: func() (*evidence.Store, error) { return evidence.Open(storeDir) }})
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(rt)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	e := &env{t: t, dir: t.TempDir(), rt: rt, reg: reg, store: storeDir}

	bomb := writeGzipZeros(t, filepath.Join(e.dir, "bomb.pprof"), 64<<20, 1)
	tests := []struct {
		name   string
		limits map[string]any
		want   int64
	}{
		{"default limit", nil, deflt},
		{"request raises it", map[string]any{"max_memory_bytes": 8 << 20}, 8 << 20},
		{"request lowers it", map[string]any{"max_memory_bytes": 1 << 20}, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(bomb)}}
			if tt.limits != nil {
				args["limits"] = tt.limits
			}
			m, code := e.call("summarize_profile", args)
			if code != contract.CodeLimitExceeded {
				t.Fatalf("code %s %v", code, m["error"])
			}
			if f := m["error"].(map[string]any)["field"]; f != "/sources/0" {
				t.Errorf("field %v, want /sources/0", f)
			}
			d := m["error"].(map[string]any)["details"].(map[string]any)
			// Reading stopped one byte past the limit, not at 64 MiB.
			if got := atoi(t, d["bytes_read"]); got != tt.want+1 {
				t.Errorf("bytes_read %d, want %d", got, tt.want+1)
			}
			if got := atoi(t, d["max_memory_bytes"]); got != tt.want {
				t.Errorf("max_memory_bytes %d, want %d", got, tt.want)
			}
		})
	}
	// The tool's schema says what the default is.
	var schema map[string]any
	for _, tl := range Tools(rt) {
		if tl.Name == "summarize_profile" {
			if err := json.Unmarshal(tl.Input, &schema); err != nil {
				t.Fatal(err)
			}
		}
	}
	mm := schema["properties"].(map[string]any)["limits"].(map[string]any)["properties"].(map[string]any)["max_memory_bytes"].(map[string]any)
	if mm["default"] != float64(deflt) {
		t.Errorf("schema default %v", mm["default"])
	}
	if DefaultCeilings.defaultMemory() != 256<<20 {
		t.Errorf("server default max_memory_bytes %d", DefaultCeilings.defaultMemory())
	}

	// Not profiles: go tool pprof rejects each; so do we, without
	// inflating the inner layer or running the legacy text parsers over
	// a line longer than they scan.
	rejects := []struct{ name, file, recognized string }{
		{"gzip inside gzip", writeGzipZeros(t, filepath.Join(e.dir, "double.pprof"), 64<<20, 2), "gzip inside gzip"},
		{"zeros", writeGzipZeros(t, filepath.Join(e.dir, "zeros.pprof"), 1<<20, 1), "no known profile header"},
	}
	for _, r := range rejects {
		t.Run(r.name, func(t *testing.T) {
			if out, err := pprofCmd(t, "-top", "-symbolize=none", r.file).CombinedOutput(); err == nil {
				t.Fatalf("go tool pprof read it:\n%s", out)
			}
			m, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(r.file)}})
			if code != contract.CodeDecodeFailed {
				t.Fatalf("code %s %v", code, m["error"])
			}
			if msg := mustJSON(m); !strings.Contains(msg, r.recognized) || strings.Contains(msg, "token too long") {
				t.Errorf("error %s", msg)
			}
		})
	}
}

// TestMayBeLegacy: every legacy CPU header word layout profile.ParseData
// accepts passes; bytes no legacy parser can scan do not.
func TestMayBeLegacy(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"64-bit LE", []byte{0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, true},
		{"64-bit BE", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0}, true},
		{"32-bit LE", []byte{0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}, true},
		{"32-bit BE", []byte{0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0}, true},
		{"heap text", []byte("heap profile: 1: 2 [3: 4] @ heap/1048576\n"), true},
		{"short no newline", []byte("--- contention\ncycles/second=1"), true},
		{"zeros", make([]byte, 200<<10), false},
		{"long first line", append(bytes.Repeat([]byte("a"), 70<<10), '\n'), false},
	}
	for _, tt := range tests {
		if got := mayBeLegacy(tt.data); got != tt.want {
			t.Errorf("%s: %v", tt.name, got)
		}
	}
}
