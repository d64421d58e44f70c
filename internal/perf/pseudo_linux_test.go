//go:build linux

package perf

import (
	"os"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestPseudoFileSourcesRejected: procfs and sysfs files (pagemap reads
// as hundreds of GiB; status reports size 0) are INVALID_ARGUMENT at
// once, before hashing or decoding, for every tool; an ordinary empty
// file is not mistaken for one.
func TestPseudoFileSourcesRejected(t *testing.T) {
	e := newEnv(t)
	paths := []string{"/proc/self/pagemap", "/proc/self/status"}
	for _, p := range []string{"/sys/kernel/mm/transparent_hugepage/enabled", "/sys/devices/system/cpu/online"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
			break
		}
	}
	for _, p := range paths {
		for _, tc := range []struct {
			tool   string
			format []string
		}{
			{"summarize_profile", nil},
			{"summarize_profile", []string{"pprof"}},
			{"preview_artifact", nil},
			{"preview_artifact", []string{"text"}},
		} {
			m, code := e.call(tc.tool, map[string]any{"sources": []any{pathSrc(p, tc.format...)}})
			if code != contract.CodeInvalidArgument {
				t.Fatalf("%s %s %v: code %q, want INVALID_ARGUMENT: %v", tc.tool, p, tc.format, code, m["error"])
			}
			er := m["error"].(map[string]any)
			if msg := er["message"].(string); !strings.Contains(msg, "a /proc or /sys pseudo-file; copy it to a regular file first") || er["field"] != "/sources/0/path" {
				t.Fatalf("%s %s: %v", tc.tool, p, er)
			}
		}
	}
	m, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(e.write("empty.txt", ""), "text")}})
	if code == contract.CodeInvalidArgument && strings.Contains(m["error"].(map[string]any)["message"].(string), "pseudo-file") {
		t.Fatalf("an empty regular file was taken for a pseudo-file: %v", m["error"])
	}
	fi, err := os.Stat("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	if !isPseudoFile("/proc/self/pagemap", fi) {
		t.Fatal("pagemap not detected")
	}
}
