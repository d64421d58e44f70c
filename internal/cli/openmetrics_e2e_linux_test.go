package cli

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestExporterSettingLive: openmetrics_listen is refused (and not saved)
// when it is not HOST:PORT or not loopback without
// openmetrics_allow_remote, with errors naming the setting to change; a
// running host (serve --detach) opens the exporter when the setting is
// saved, serves /metrics in OpenMetrics to Prometheus' Accept header,
// moves it when the address changes and closes it on unset, without a
// restart (the same host pid throughout).
func TestExporterSettingLive(t *testing.T) {
	e := newHeEnv(t)
	cfg := filepath.Join(e.base, "config", "inquest", "inquest.toml")
	// An address another program listens on is refused at once.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"settings", "set", "openmetrics_listen", busy.Addr().String()}, "another program already listens"},
		{[]string{"settings", "set", "openmetrics_listen", "0.0.0.0:9935"}, "openmetrics_allow_remote"},
		{[]string{"settings", "set", "openmetrics_listen", "9935"}, "openmetrics_listen"},
		{[]string{"settings", "set", "openmetrics_allow_remote", "maybe"}, "true or false"},
	} {
		out, code := e.run(c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Fatalf("%v: exit %d %q, want a failure naming %s", c.args, code, out, c.want)
		}
	}
	if b, err := os.ReadFile(cfg); err == nil && strings.Contains(string(b), "openmetrics") {
		t.Fatalf("a refused setting was saved:\n%s", b)
	}
	if out, code := e.run("serve", "--detach"); code != 0 {
		t.Fatalf("serve --detach: %s", out)
	}
	pid := e.hostPID()
	addr := freeLoopbackAddr(t)
	out, code := e.run("settings", "set", "openmetrics_listen", addr)
	if code != 0 || !strings.Contains(out, "serves http://"+addr+"/metrics") {
		t.Fatalf("set: exit %d %s", code, out)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/openmetrics-text; version=1.0.0; charset=utf-8" || !strings.Contains(string(body), "\ninquest_system_memory_total_bytes ") || !strings.HasSuffix(string(body), "# EOF\n") {
		t.Fatalf("scrape: %s\n%.2000s", resp.Header.Get("Content-Type"), body)
	}
	if out, _ := e.run("settings", "get", "openmetrics_listen"); strings.TrimSpace(out) != "openmetrics_listen = "+addr {
		t.Fatalf("get: %q", out)
	}
	addr2 := freeLoopbackAddr(t)
	if out, code := e.run("settings", "set", "openmetrics_listen", addr2); code != 0 || !strings.Contains(out, "serves http://"+addr2+"/metrics") {
		t.Fatalf("move: exit %d %s", code, out)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Fatal("the old address still answers after the move")
	}
	if out, code := e.run("settings", "unset", "openmetrics_listen"); code != 0 || !strings.Contains(out, "closed its exporter") {
		t.Fatalf("unset: exit %d %s", code, out)
	}
	if _, err := http.Get("http://" + addr2 + "/metrics"); err == nil {
		t.Fatal("the exporter still answers after unset")
	}
	if e.hostPID() != pid {
		t.Fatalf("the host changed (pid %d, then %d): the settings need no restart", pid, e.hostPID())
	}
}
