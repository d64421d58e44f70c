//go:build linux

package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A collection whose rows could never fit the retained budget stops
// reading as soon as the bytes it has kept certainly exceed it: open_files
// of a helper holding 801 fds on one 240-byte path, under a budget of 20
// such paths, stops after about 20 of them (the fds read are counted, and
// far fewer than listed); file_users, with 500 distinct held files of the
// helper, stops having kept less than half of what the whole scan keeps. Without a budget both
// collect everything.
func TestCollectionStopsAtRowBudget(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("d", 200))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(long, "held.dat")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "CAPTURE_FILE="+path, "CAPTURE_EXTRA=800", "CAPTURE_DIR="+long, "CAPTURE_DISTINCT=500")

	full, err := OpenFiles(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Rows) < 1300 {
		t.Fatalf("unbudgeted open_files: %d rows", len(full.Rows))
	}
	limit := int64(20 * len(path))
	b := &RowBudget{Limit: limit}
	_, err = OpenFiles(WithRowBudget(context.Background(), b), c.id)
	var ob *OverBudgetError
	if !errors.As(err, &ob) {
		t.Fatalf("budgeted open_files: %v", err)
	}
	// the cwd, rtd, txt and mem rows come first and count too
	extra := len(full.Rows) - len(fdRows(full.Rows))
	if ob.Counted <= limit || ob.Rows > int64(30+extra) || ob.Read > 40+extra || ob.Total < 1300 || ob.Kind != KindOpenFiles {
		t.Fatalf("open_files did not stop at the budget: %+v", ob)
	}

	fu, err := FileUsers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	held, need := 0, int64(0)
	for _, r := range fu.Rows {
		need += int64(len(r.Path) + len(r.Owner))
		if strings.HasPrefix(r.Path, long+"/held-") {
			held++
		}
	}
	if held != 500 {
		t.Fatalf("unbudgeted file_users: %d of the 500 held files", held)
	}
	b = &RowBudget{Limit: int64(50 * len(path))}
	_, err = FileUsers(WithRowBudget(context.Background(), b))
	if !errors.As(err, &ob) {
		t.Fatalf("budgeted file_users: %v", err)
	}
	if ob.Counted <= b.Limit || ob.Counted > need/2 || ob.Kind != KindFileUsers {
		t.Fatalf("file_users did not stop at the budget: %+v", ob)
	}
}
