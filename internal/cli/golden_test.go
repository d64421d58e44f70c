package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLsofGolden renders fixed open_files and network rows (no machine
// contents) and compares the table with testdata/lsof.golden.
func TestLsofGolden(t *testing.T) {
	rows := []map[string]any{
		{"fd": "cwd", "kind": "dir", "device": "fe:00", "inode": "5308427", "path": "/srv/app", "size_bytes": "4096", "deleted": false, "flags": nil, "position": nil},
		{"fd": "rtd", "kind": "dir", "device": "fe:00", "inode": "2", "path": "/", "size_bytes": "4096", "deleted": false, "flags": nil, "position": nil},
		{"fd": "txt", "kind": "file", "device": "fe:00", "inode": "247766", "path": "/usr/bin/app", "size_bytes": "43888", "deleted": false, "flags": nil, "position": nil},
		{"fd": "mem", "kind": "file", "device": "fe:00", "inode": "326269", "path": "/usr/lib/x86_64-linux-gnu/libc.so.6", "size_bytes": "1926232", "deleted": false, "flags": nil, "position": nil},
		{"fd": "DEL", "kind": "file", "device": "00:01", "inode": "9978370", "path": "/memfd:jit", "size_bytes": nil, "deleted": true, "flags": nil, "position": nil},
		{"fd": "mem", "kind": nil, "device": "fe:00", "inode": "1234", "path": "/opt/replaced.so", "size_bytes": nil, "deleted": false, "flags": nil, "position": nil},
		{"fd": "0", "kind": "device", "device": "01:03", "inode": "3", "flags": "0100000", "path": "/dev/null", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "1", "kind": "file", "device": "fe:00", "inode": "10314481", "flags": "0102001", "path": "/var/log/app.log", "position": "4096", "size_bytes": "299847", "deleted": false},
		{"fd": "2", "kind": "file", "flags": "0100002", "path": "/tmp/gone", "position": "0", "size_bytes": "12", "deleted": true},
		{"fd": "3", "kind": "socket", "flags": "02000002", "path": "socket:[100]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "4", "kind": "socket", "flags": "02004002", "path": "socket:[101]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "5", "kind": "socket", "flags": "02000002", "path": "socket:[102]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "6", "kind": "socket", "flags": "02000002", "path": "socket:[103]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "7", "kind": "socket", "flags": "02000002", "path": "socket:[104]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "8", "kind": "socket", "flags": "02000002", "path": "socket:[999]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "9", "kind": "pipe", "device": "00:0f", "inode": "555", "flags": "01", "path": "pipe:[555]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "10", "kind": "anon", "flags": "02", "path": "anon_inode:[eventpoll]", "position": "0", "size_bytes": nil, "deleted": false},
		{"fd": "11", "kind": "dir", "device": "fe:00", "inode": "777", "flags": nil, "path": "/srv", "position": nil, "size_bytes": "4096", "deleted": false},
		{"fd": "12", "kind": "file", "flags": "0100000", "path": "/tmp/real (deleted)", "position": "0", "size_bytes": "1", "deleted": false},
	}
	ep := func(a string, p float64) map[string]any { return map[string]any{"address": a, "port": p} }
	sockets := map[string]map[string]any{
		"100": {"protocol": "tcp", "local": ep("127.0.0.1", 8080), "remote": ep("0.0.0.0", 0), "state": "LISTEN"},
		"101": {"protocol": "tcp", "local": ep("10.0.0.1", 8080), "remote": ep("10.0.0.2", 51000), "state": "ESTABLISHED"},
		"102": {"protocol": "tcp6", "local": ep("::", 443), "remote": ep("::", 0), "state": "LISTEN"},
		"103": {"protocol": "udp", "local": ep("0.0.0.0", 53), "remote": ep("0.0.0.0", 0), "state": "UNCONN"},
		"104": {"protocol": "unix", "local": map[string]any{"path": "/run/app.sock"}, "remote": nil, "socket_type": "stream", "state": "LISTEN"},
	}
	var b strings.Builder
	renderLsof(&b, rows, sockets)
	golden(t, "lsof.golden", b.String())
}

// TestPsColumnsGolden renders fixed list_processes rows with -o columns
// (testdata/ps_columns.golden: human units; ps_columns_bytes.golden:
// --bytes).
func TestPsColumnsGolden(t *testing.T) {
	cols, err := parsePSColumns("-o", []string{"pid,user,time,%cpu,rss,vsz,nlwp,stat,comm=CMD,args"})
	if err != nil {
		t.Fatal(err)
	}
	rows := []map[string]any{
		{"pid": 1.0, "user": "root", "comm": "systemd", "state": "sleeping", "command_line": map[string]any{"value": []any{"/sbin/init", "splash"}},
			"values": map[string]any{"cpu_time_ns": "65432000000", "cpu_percent": 0.3, "rss_bytes": "13303808", "virtual_bytes": "171966464", "threads": 1.0}},
		{"pid": 2.0, "user": "root", "comm": "kthreadd", "state": "sleeping", "command_line": map[string]any{"value": []any{}},
			"values": map[string]any{"cpu_time_ns": "0", "cpu_percent": 0.0, "rss_bytes": "0", "virtual_bytes": "0", "threads": 1.0}},
		{"pid": 4242.0, "user": "alice", "comm": "python3.11", "state": "running", "command_line": map[string]any{"value": []any{"python3", "-m", "http.server"}},
			"values": map[string]any{"cpu_time_ns": "93784000000000", "cpu_percent": 41.1, "rss_bytes": "299790336", "virtual_bytes": "1207959552", "threads": 8.0}},
		{"pid": 4243.0, "user": nil, "comm": "secret", "state": "sleeping", "unavailable": map[string]any{"command_line": "access denied"},
			"values": map[string]any{"cpu_time_ns": nil, "cpu_percent": nil, "rss_bytes": nil, "virtual_bytes": nil, "threads": nil}},
	}
	for _, c := range []struct {
		name  string
		exact bool
	}{{"ps_columns.golden", false}, {"ps_columns_bytes.golden", true}} {
		var b strings.Builder
		renderPSColumns(&b, cols, rows, c.exact)
		golden(t, c.name, b.String())
	}
	if _, err := parsePSColumns("-o", []string{"pid,nosuch"}); err == nil || !strings.Contains(err.Error(), `-o "nosuch": unknown column`) {
		t.Errorf("unknown keyword: %v", err)
	}
}

// golden compares got with testdata/name (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs; got:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestSocketsGolden renders fixed network rows of two namespaces
// (testdata/sockets.golden: NETNS shown by default as the rows span two;
// sockets_one_ns.golden: one namespace, no NETNS column;
// sockets_columns.golden: -o proto,local,netns,inode).
func TestSocketsGolden(t *testing.T) {
	rows := []map[string]any{
		{"protocol": "tcp", "state": "LISTEN", "local": map[string]any{"address": "127.0.0.1", "port": 45678.0}, "remote": map[string]any{"address": "0.0.0.0", "port": 0.0},
			"inode": "1925339", "pid": 4242.0, "owner_name": "python3", "net_ns": 4026532247.0},
		{"protocol": "mptcp", "state": "ESTABLISHED", "local": map[string]any{"address": "::1", "port": 8080.0}, "remote": map[string]any{"address": "::1", "port": 51234.0},
			"inode": "1925400", "pid": 4243.0, "owner_name": "server", "net_ns": 4026531840.0},
		{"protocol": "unix", "state": "CONNECTED", "local": map[string]any{"path": nil}, "remote": nil,
			"inode": "1925401", "pid": nil, "owner_name": nil, "net_ns": 4026531840.0},
	}
	var b strings.Builder
	renderSockets(&b, rows, nil)
	golden(t, "sockets.golden", b.String())
	b.Reset()
	renderSockets(&b, rows[1:], nil)
	golden(t, "sockets_one_ns.golden", b.String())
	cols, err := parseSocketColumns([]string{"proto", "local", "netns", "inode"})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	renderSockets(&b, rows, cols)
	golden(t, "sockets_columns.golden", b.String())
	if _, err := parseSocketColumns([]string{"proto", "nosuch"}); err == nil || !strings.Contains(err.Error(), `-o "nosuch": unknown column`) {
		t.Errorf("unknown column: %v", err)
	}
}

// TestThreadsGolden renders fixed threads rows (testdata/threads.golden):
// ps's state letters, TIME as [DD-]HH:MM:SS of user + system seconds,
// seconds with their unit, unknown as "-".
func TestThreadsGolden(t *testing.T) {
	rows := []map[string]any{
		{"tid": 4242.0, "name": "java", "state": "sleeping", "priority": 20.0, "nice": 0.0, "user_cpu_seconds": 0.29, "system_cpu_seconds": 0.71, "last_cpu": 1.0, "voluntary_context_switches": 26.0, "nonvoluntary_context_switches": 3.0},
		{"tid": 4243.0, "name": "GC Thread#0", "state": "running", "priority": 20.0, "nice": 0.0, "user_cpu_seconds": 3725.5, "system_cpu_seconds": 12.25, "last_cpu": 0.0, "voluntary_context_switches": 1200.0, "nonvoluntary_context_switches": 75.0},
		{"tid": 4244.0, "name": "C2 CompilerThre", "state": "disk_sleep", "priority": 39.0, "nice": 19.0, "user_cpu_seconds": 90061.0, "system_cpu_seconds": 0.0, "last_cpu": 1.0, "voluntary_context_switches": 5.0, "nonvoluntary_context_switches": 0.0},
		{"tid": 4245.0, "name": "idle\tthread", "state": "idle", "priority": 20.0, "nice": 0.0, "user_cpu_seconds": nil, "system_cpu_seconds": nil, "last_cpu": nil, "voluntary_context_switches": nil, "nonvoluntary_context_switches": nil},
	}
	var b strings.Builder
	renderThreads(&b, rows)
	golden(t, "threads.golden", b.String())
}

// TestFuserGolden renders fixed file_users rows for PATH
// (testdata/fuser.golden): only the rows of PATH itself that are not
// deleted; --substring (testdata/fuser_substring.golden) every row, with
// DELETED yes/no/? and escaped paths, ACCESS in fuser -v's five columns
// ("-" for a row without the field).
func TestFuserGolden(t *testing.T) {
	rows := []map[string]any{
		{"pid": 812.0, "name": "postgres", "access": "Fm", "handle_count": 2.0, "deleted": false, "path": "/var/lib/db/data.log", "process_ref": "pr_AAAA"},
		{"pid": 913.0, "name": "logrotate", "access": "f", "handle_count": 1.0, "deleted": true, "path": "/var/lib/db/data.log", "process_ref": "pr_BBBB"},
		{"pid": 1004.0, "name": "tail", "access": "frce", "handle_count": 1.0, "deleted": false, "path": "/var/lib/db/data.log.1", "process_ref": "pr_CCCC"},
		{"pid": 1200.0, "name": "evil\x1b[2J", "handle_count": 1.0, "deleted": nil, "path": "/var/lib/db/data.log", "process_ref": nil},
	}
	for _, c := range []struct {
		name      string
		substring bool
		listed    int
	}{{"fuser.golden", false, 1}, {"fuser_substring.golden", true, 4}} {
		var b strings.Builder
		if n := renderFuser(&b, rows, "/var/lib/db/data.log", c.substring); n != c.listed {
			t.Errorf("%s: %d rows listed, want %d", c.name, n, c.listed)
		}
		golden(t, c.name, b.String())
	}
}

// TestSocketsGoldenOneNamespace renders fixed network rows of one namespace
// (testdata/sockets_states.golden):
// ss's state names and address spelling (0.0.0.0:*, [::1]:8080, * for an
// unnamed unix socket), unknown owners as "-".
func TestSocketsGoldenOneNamespace(t *testing.T) {
	ep := func(a string, p float64) map[string]any { return map[string]any{"address": a, "port": p} }
	rows := []map[string]any{
		{"protocol": "tcp", "state": "LISTEN", "local": ep("0.0.0.0", 22), "remote": ep("0.0.0.0", 0), "pid": 700.0, "owner_name": "sshd"},
		{"protocol": "tcp", "state": "ESTABLISHED", "local": ep("10.0.0.1", 22), "remote": ep("10.0.0.2", 51000), "pid": 701.0, "owner_name": "sshd"},
		{"protocol": "tcp", "state": "TIME_WAIT", "local": ep("127.0.0.1", 50520), "remote": ep("127.0.0.1", 41835), "pid": nil, "owner_name": nil},
		{"protocol": "tcp6", "state": "LISTEN", "local": ep("::1", 8080), "remote": ep("::", 0), "pid": 812.0, "owner_name": "python3.11"},
		{"protocol": "udp", "state": "CLOSE", "local": ep("0.0.0.0", 53), "remote": ep("0.0.0.0", 0), "pid": 90.0, "owner_name": "dnsmasq"},
		{"protocol": "unix", "state": "LISTEN", "socket_type": "stream", "local": map[string]any{"path": "/run/app.sock"}, "remote": nil, "pid": 900.0, "owner_name": "app"},
		{"protocol": "unix", "state": "CONNECTED", "socket_type": "stream", "local": map[string]any{}, "remote": map[string]any{}, "pid": 900.0, "owner_name": "app"},
	}
	var b strings.Builder
	renderSockets(&b, rows, nil)
	golden(t, "sockets_states.golden", b.String())
}
