//go:build linux

package bridge_test

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/jobs"
)

// TestNetworkStateAndProtocolFilters: a listening TCP socket of this test
// is found by filter {state: LISTEN, protocol: tcp}; the dialed connection
// and a UDP socket of the same process are filtered out and counted.
func TestNetworkStateAndProtocolFilters(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	port := float64(ln.Addr().(*net.TCPAddr).Port)
	d := mustCall(t, reg, "start_capture", map[string]any{"kind": "network", "pid": os.Getpid(), "filter": map[string]any{"state": "listen", "protocol": "tcp"}})
	rows := rowsOf(page(d))
	found := false
	for _, r := range rows {
		if r["state"] != "LISTEN" || r["protocol"] != "tcp" {
			t.Errorf("row outside the filter: %v", r)
		}
		if l, _ := r["local"].(map[string]any); l["port"] == port && l["address"] == "127.0.0.1" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the listener on port %v is not among %v", port, rows)
	}
	cov := coverageOf(d)
	if out, _ := cov["rows_filtered_out"].(float64); out < 2 {
		t.Fatalf("the dialed connection and the UDP socket were not counted as filtered out: %v", cov)
	}
	// Row filters of another kind are refused, naming the argument.
	_, err = call(t, reg, "start_capture", map[string]any{"kind": "open_files", "pid": os.Getpid(), "filter": map[string]any{"state": "LISTEN"}})
	if e := contract.AsError(err); e == nil || e.Code != contract.CodeInvalidArgument || e.Field != "/filter/state" {
		t.Fatalf("state on open_files: %v", err)
	}
	// A state no network row names is refused with the states listed (it
	// would match nothing and read as "no such sockets"); case does not
	// matter.
	_, err = call(t, reg, "start_capture", map[string]any{"kind": "network", "filter": map[string]any{"state": "BOGUS"}})
	if e := contract.AsError(err); e == nil || e.Code != contract.CodeInvalidArgument || e.Field != "/filter/state" || !strings.Contains(fmt.Sprint(e.Expected), "LISTEN") {
		t.Fatalf("state BOGUS on network: %+v", e)
	}
	if _, err = call(t, reg, "start_capture", map[string]any{"kind": "network", "filter": map[string]any{"state": "listen"}}); err != nil {
		t.Fatalf("state listen (lower case) on network: %v", err)
	}
}

// TestDeletedFilter: a helper holds a file that is then unlinked; filter
// {deleted: true} finds it among the helper's open files and host-wide
// (file_users), and {deleted: false} does not.
func TestDeletedFilter(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	path := filepath.Join(t.TempDir(), "inquest-deleted-held.log")
	os.WriteFile(path, []byte("x"), 0o600)
	h := holder(t, path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	held := func(rows []map[string]any) bool {
		for _, r := range rows {
			if p, _ := r["path"].(string); strings.Contains(p, "inquest-deleted-held.log") {
				if r["deleted"] != true {
					t.Errorf("row of the unlinked file says deleted %v", r["deleted"])
				}
				return true
			}
		}
		return false
	}
	on := mustCall(t, reg, "start_capture", map[string]any{"kind": "open_files", "pid": h.Process.Pid, "filter": map[string]any{"deleted": true}})
	if rows := rowsOf(page(on)); !held(rows) {
		t.Fatalf("deleted:true misses the unlinked file: %v", rows)
	}
	for _, r := range rowsOf(page(on)) {
		if r["deleted"] != true {
			t.Errorf("deleted:true kept %v", r)
		}
	}
	if cov := coverageOf(on); cov["deleted_unknown_excluded"] == nil || cov["row_filter"] == nil {
		t.Errorf("coverage does not state the row filter: %v", cov)
	}
	off := mustCall(t, reg, "start_capture", map[string]any{"kind": "open_files", "pid": h.Process.Pid, "filter": map[string]any{"deleted": false}})
	if held(rowsOf(page(off))) {
		t.Fatal("deleted:false kept the unlinked file")
	}
	users := mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "filter": map[string]any{"deleted": true, "path": "inquest-deleted-held.log"}})
	rows := rowsOf(page(users))
	if !held(rows) {
		t.Fatalf("file_users deleted:true misses the holder: %v", rows)
	}
	for _, r := range rows {
		if int(r["pid"].(float64)) != h.Process.Pid {
			t.Errorf("unexpected holder %v", r)
		}
	}
}

// TestListProcessesUserFilter: filter.user takes a user name or a numeric
// uid and matches exactly; another uid excludes this process.
func TestListProcessesUserFilter(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	uid := os.Getuid()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{strconv.Itoa(uid), u.Username} {
		d := mustCall(t, reg, "list_processes", map[string]any{"filter": map[string]any{"user": who, "pid": os.Getpid()}, "projection": []string{"pid", "uid", "user"}})
		rows := rowsOf(d)
		if len(rows) != 1 || rows[0]["user"] != u.Username || int(rows[0]["uid"].(float64)) != uid {
			t.Fatalf("user %s: %v", who, rows)
		}
		if _, ok := coverageOf(d)["user_unknown_excluded"]; !ok {
			t.Fatalf("coverage does not count owners that are unknown: %v", coverageOf(d))
		}
	}
	other := strconv.Itoa(uid + 4242)
	all := rowsOf(mustCall(t, reg, "list_processes", map[string]any{"filter": map[string]any{"user": other}, "projection": []string{"pid", "uid"}}))
	for _, r := range all {
		if strconv.Itoa(int(r["uid"].(float64))) != other {
			t.Fatalf("user %s kept %v", other, r)
		}
	}
}
