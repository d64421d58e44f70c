package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/managed/jvmtest"
)

// TestRuntimeCommand: `inquest runtime PID` names a real JVM, its version
// and state; --json is the get_runtime_collection envelope; `runtime
// enable` on an in-process host (which no local confirmation can reach)
// fails without enabling anything; a bad PID names the argument.
func TestRuntimeCommand(t *testing.T) {
	jdk := jvmtest.Default(t)
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	p := jvmtest.Start(t, jdk)
	pid := strconv.Itoa(p.PID)

	out, errb, code := runCaptureCLI("runtime", pid)
	if code != 0 || !strings.Contains(out, "PID "+pid+" java: jvm ") || !strings.Contains(out, "collection: disabled, not authorized, supported: true") {
		t.Fatalf("runtime PID: code %d\n%s\n%s", code, out, errb)
	}
	out, errb, code = runCaptureCLI("runtime", pid, "--json")
	var env struct {
		Data map[string]any `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil || env.Data["runtime"] != "jvm" || env.Data["state"] != "disabled" {
		t.Fatalf("runtime --json: code %d\n%s\n%s", code, out, errb)
	}
	out, errb, code = runCaptureCLI("runtime", "enable", pid)
	if code == 0 || !strings.Contains(out+errb, "UNSUPPORTED") {
		t.Fatalf("runtime enable on an in-process host: code %d\n%s\n%s", code, out, errb)
	}
	_, errb, code = runCaptureCLI("runtime", "abc")
	if code == 0 || !strings.Contains(errb, `PID "abc"`) {
		t.Fatalf("runtime abc: code %d, %s", code, errb)
	}
}
