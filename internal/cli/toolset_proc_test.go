package cli

import (
	"encoding/json"
	"os"
	"testing"
)

// Under INQUEST_IN_PROCESS=1 this process is the host: get_status
// data.host names its pid and face "in-process".
func TestInProcessStatusHost(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", t.TempDir()+"/inquest.toml")
	t.Setenv(inProcessEnv, "1")
	out, code := runInvCLI(t, "call", "get_status")
	if code != 0 {
		t.Fatalf("get_status: %d %s", code, out)
	}
	var env struct {
		Data struct {
			Host map[string]any `json:"host"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatal(err)
	}
	if env.Data.Host["face"] != "in-process" || env.Data.Host["pid"] != float64(os.Getpid()) {
		t.Fatalf("data.host = %v", env.Data.Host)
	}
}
