//go:build linux

package bin

import (
	"os"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestPseudoFilesRefused (reliability issue case 8): every bin tool on
// /proc/self/environ (stat size 0, content non-empty) and on a sysfs file
// is refused with INVALID_ARGUMENT naming the pseudo-file system, instead
// of a complete result with 0 rows.
func TestPseudoFilesRefused(t *testing.T) {
	paths := []string{"/proc/self/environ"}
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil {
		paths = append(paths, "/sys/kernel/mm/transparent_hugepage/enabled")
	} else if _, err := os.Stat("/sys/power/state"); err == nil {
		paths = append(paths, "/sys/power/state")
	}
	st, err := os.Stat(paths[0])
	if err != nil || st.Size() != 0 {
		t.Fatalf("stat %s: size %v err %v; the test needs stat size 0", paths[0], st, err)
	}
	r := registry(t, "")
	for _, path := range paths {
		for _, c := range []struct {
			name string
			args map[string]any
		}{
			{"inspect_binary", map[string]any{"path": path}},
			{"list_symbols", map[string]any{"path": path}},
			{"search_strings", map[string]any{"path": path}},
			{"disassemble", map[string]any{"path": path, "start": "0x1000"}},
			{"compare_binaries", map[string]any{"left": path, "right": path}},
			{"inspect_http_capture", map[string]any{"path": path}},
		} {
			_, err := call(t, r, c.name, c.args)
			e := contract.AsError(err)
			if e == nil || e.Code != contract.CodeInvalidArgument || !strings.Contains(e.Message, "pseudo-file") {
				t.Errorf("%s on %s: err = %v, want INVALID_ARGUMENT pseudo-file", c.name, path, err)
			}
		}
	}
}
