//go:build linux

package evidence

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/testbuild"
)

// holdIndexEnv makes the test binary, run as a helper, hold an exclusive
// SQLite lock on the index named by its value until its stdin closes.
const holdIndexEnv = "INQUEST_TEST_HOLD_INDEX"

func TestMain(m *testing.M) {
	if p := os.Getenv(holdIndexEnv); p != "" {
		holdIndex(p)
		return
	}
	os.Exit(m.Run())
}

func holdIndex(p string) {
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=journal_mode(WAL)")
	if err != nil {
		fmt.Println("error", err)
		return
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, "BEGIN EXCLUSIVE")
	}
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// TestStoreCausesNamed injects each cause of a failing store for real and
// checks each gets its own code with details naming it: a lock on the
// index held by a second process (BUSY, retryable, cause SQLITE_BUSY,
// path), a full file system (a small tmpfs filled by the test:
// RESOURCE_LIMIT, cause ENOSPC), a corrupted key file (REPOSITORY_CORRUPT),
// a read-only file system (REPOSITORY_IO_FAILED, cause EROFS, path), an
// unsafe store directory (PERMISSION_DENIED).
func TestStoreCausesNamed(t *testing.T) {
	rec := func(s *Store) error {
		_, err := s.Publish(context.Background(), Record{Toolset: "perf", Operation: "x", Status: StatusComplete,
			Artifacts: []ArtifactInput{{Name: "source-0", Role: RoleAnalysisSource, Format: "text", Data: []byte("data")}}})
		return err
	}
	t.Run("index locked by another process", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), holdIndexEnv+"="+filepath.Join(dir, indexName))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { in.Close(); cmd.Wait() }()
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "locked" {
			t.Fatalf("helper: %q", line)
		}
		ce := contract.AsError(rec(s))
		if ce == nil || ce.Code != contract.CodeBusy || !ce.Retryable || ce.Details["cause"] != "SQLITE_BUSY" || ce.Details["path"] != filepath.Join(dir, indexName) {
			t.Fatalf("publish beside a held index lock: %+v", ce)
		}
	})
	t.Run("full file system", func(t *testing.T) {
		mnt := testbuild.SmallTmpfs(t, "1m")
		s, err := Open(filepath.Join(mnt, "store"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		testbuild.FillDisk(t, mnt)
		ce := contract.AsError(rec(s))
		if ce == nil || ce.Code != contract.CodeResourceLimit || ce.Details["cause"] != "ENOSPC" {
			t.Fatalf("publish on a full disk: %+v", ce)
		}
	})
	t.Run("corrupted key file", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		os.WriteFile(filepath.Join(dir, "cursor.key"), []byte("short"), 0o600)
		_, err = Open(dir)
		if ce := contract.AsError(err); ce == nil || ce.Code != contract.CodeRepositoryCorrupt {
			t.Fatalf("open with a corrupted key: %+v", ce)
		}
	})
	t.Run("read-only file system", func(t *testing.T) {
		mnt := testbuild.SmallTmpfs(t, "1m")
		dir := filepath.Join(mnt, "store")
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Skipf("remount read-only: %v", err)
		}
		defer syscall.Mount("", mnt, "", syscall.MS_REMOUNT, "")
		os.Remove(filepath.Join(dir, "cursor.key")) // fails: read-only
		s, err = Open(dir)
		if err == nil {
			err = rec(s)
			s.Close()
		}
		ce := contract.AsError(err)
		if ce == nil || (ce.Code != contract.CodeRepositoryIO && ce.Code != contract.CodePermissionDenied) || ce.Details["cause"] != "EROFS" {
			t.Fatalf("publish on a read-only file system: %+v", ce)
		}
	})
	t.Run("store directory writable by others", func(t *testing.T) {
		dir := t.TempDir()
		os.Chmod(dir, 0o777)
		_, err := Open(dir)
		if ce := contract.AsError(err); ce == nil || ce.Code != contract.CodePermissionDenied || ce.Details["directory"] != dir {
			t.Fatalf("open of a 0777 store: %+v", ce)
		}
	})
}
