package evidence

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// listAll pages through every record of the store.
func listAll(t testing.TB, s *Store) []Summary {
	t.Helper()
	var out []Summary
	cursor := ""
	for {
		p, err := s.Query(context.Background(), Filter{}, MaxPageSize, cursor)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		out = append(out, p.Rows...)
		if p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
}

// manifestIDs lists the ids of the manifest files on disk.
func manifestIDs(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && ValidID(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// tempFiles lists DIR/tmp without the lock file.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() != ".lock" {
			out = append(out, e.Name())
		}
	}
	return out
}

func asideFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, indexName+".corrupt-*"))
	return m
}

// checkConsistent asserts the store invariants on a freshly opened store:
// every manifest on disk is listed, every listed record has its manifest
// and verifies, and no temp file survived the open.
func checkConsistent(t testing.TB, dir string) int {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	if tf := tempFiles(t, dir); len(tf) > 0 {
		t.Fatalf("temp files survived the open: %v", tf)
	}
	onDisk := manifestIDs(t, dir)
	rows := listAll(t, s)
	var listed []string
	for _, r := range rows {
		if r.Problem != "" {
			t.Fatalf("listed record %s has a problem: %s", r.EvidenceID, r.Problem)
		}
		listed = append(listed, r.EvidenceID)
	}
	sort.Strings(listed)
	if strings.Join(listed, ",") != strings.Join(onDisk, ",") {
		t.Fatalf("listed %d records, %d manifests on disk:\nlisted %v\ndisk   %v", len(listed), len(onDisk), listed, onDisk)
	}
	for _, id := range listed {
		m, err := s.Get(id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		for _, a := range m.Artifacts {
			if err := s.VerifyArtifact(context.Background(), m, a.Name); err != nil {
				t.Fatalf("verify %s/%s: %v", id, a.Name, err)
			}
		}
	}
	return len(listed)
}

func publishBlob(s *Store, size int) (*Manifest, error) {
	data := make([]byte, size)
	rand.Read(data)
	return s.Publish(context.Background(), Record{
		Toolset: "perf", Operation: "summarize_profile", Status: StatusComplete,
		Artifacts: []ArtifactInput{{Name: "source-0", Role: RoleAnalysisSource, Format: "pprof", Data: data}},
	})
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it at cleanup. It skips unless the test runs as root on Linux.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a size-limited tmpfs needs root; the disk-full cases are not run")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		// Root without CAP_SYS_ADMIN (an unprivileged container);
		// TestENOSPCAtEveryWritePosition covers the same invariants.
		t.Skipf("cannot mount a tmpfs here (%v: %s); the disk-full cases run only with injected ENOSPC", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a filler file until the file system reports ENOSPC, then
// gives back keep bytes (rounded by the file system's block size).
func fill(t *testing.T, path string, keep int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	if keep > 0 {
		if err := f.Truncate(max(0, n-keep)); err != nil {
			t.Fatal(err)
		}
	}
}

func wantDiskFull(t *testing.T, err error, dir string) {
	t.Helper()
	ce := contract.AsError(err)
	if ce.Code != contract.CodeResourceLimit || ce.Retryable || ce.Details["directory"] != dir {
		t.Fatalf("want RESOURCE_LIMIT, not retryable, naming %s; got %+v", dir, ce)
	}
}

// TestDiskFull (issue case 2): on a 2 MiB tmpfs filled to every level from
// 0 to 64 KiB free, a publish either succeeds or fails with the typed
// disk-full error; a read never sets the index aside or loses a record;
// a failed publish leaves no manifest; after space returns every manifest
// is listed and verifies and no temp file survives.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, "2m")
	dir := filepath.Join(mnt, "evidence")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := publishBlob(s, 1000); err != nil {
			t.Fatal(err)
		}
	}
	idx, _ := os.Stat(filepath.Join(dir, indexName))
	filler := filepath.Join(mnt, "filler")
	failures, successes := 0, 0
	for keep := int64(0); keep <= 64<<10; keep += 4 << 10 {
		os.Remove(filler)
		fill(t, filler, keep)
		_, err := publishBlob(s, 12<<10)
		if err != nil {
			wantDiskFull(t, err, dir)
			failures++
		} else {
			successes++
		}
		// A read on the full disk lists every published record or fails
		// typed; it never sets the index aside.
		p, qerr := s.Query(context.Background(), Filter{}, MaxPageSize, "")
		if qerr != nil {
			wantDiskFull(t, qerr, dir)
		} else if len(p.Rows) != len(manifestIDs(t, dir)) {
			t.Fatalf("keep=%d: query lists %d records, %d manifests on disk", keep, len(p.Rows), len(manifestIDs(t, dir)))
		}
		// Reopening on the full disk works or fails typed, never sets aside.
		s2, oerr := Open(dir)
		if oerr != nil {
			wantDiskFull(t, oerr, dir)
		} else {
			s2.Close()
		}
		if a := asideFiles(t, dir); len(a) > 0 {
			t.Fatalf("keep=%d: a healthy index was set aside: %v", keep, a)
		}
		if now, err := os.Stat(filepath.Join(dir, indexName)); err != nil || !os.SameFile(idx, now) {
			t.Fatalf("keep=%d: index.sqlite was replaced or removed (%v)", keep, err)
		}
	}
	if failures == 0 {
		t.Fatalf("no publish failed for lack of space (%d succeeded): the test did not fill the disk", successes)
	}
	s.Close()
	os.Remove(filler)
	if n := checkConsistent(t, dir); n != 3+successes {
		t.Fatalf("%d records after space returned, want %d", n, 3+successes)
	}
}

// TestCorruptIndexRebuilt (issue case 3): a damaged B-tree page or a file
// that is not a database is rebuilt from the manifests on open; the
// damaged file is kept under a unique name (two rebuilds in one second
// keep both).
func TestCorruptIndexRebuilt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, s, 40, "summarize_profile", "pprof")
	s.Close()
	p := filepath.Join(dir, indexName)
	for i, damage := range []func(){
		func() { // overwrite the second page (a B-tree page of records)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte(strings.Repeat("\xa5", 4096)), 4096)
			f.Close()
		},
		func() { os.WriteFile(p, []byte(strings.Repeat("not a database ", 400)), 0o600) },
	} {
		damage()
		if n := checkConsistent(t, dir); n != 40 {
			t.Fatalf("damage %d: %d records after rebuild, want 40", i, n)
		}
		if a := asideFiles(t, dir); len(a) != i+1 {
			t.Fatalf("damage %d: set-aside files %v, want %d", i, a, i+1)
		}
	}
}

// TestCorruptIndexRepairedOnUse: an index damaged while a store has it
// open is rebuilt on the next operation that meets the damage.
func TestCorruptIndexRepairedOnUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	publishN(t, s, 40, "summarize_profile", "pprof")
	s.dbmu.Lock()
	s.db.Close()
	s.db = nil
	s.dbmu.Unlock()
	f, err := os.OpenFile(filepath.Join(dir, indexName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte(strings.Repeat("\xa5", 4096)), 4096)
	f.Close()
	db, err := openDB(filepath.Join(dir, indexName), false)
	if err != nil {
		t.Fatal(err)
	}
	s.dbmu.Lock()
	s.db = db
	s.dbmu.Unlock()
	// A publish meets the damage first (its index write runs under the
	// store's write lock, which the repair must not need).
	if _, err := publishBlob(s, 10); err != nil {
		t.Fatal(err)
	}
	if n := len(listAll(t, s)); n != 41 {
		t.Fatalf("%d records after the repair, want 41", n)
	}
	if len(asideFiles(t, dir)) != 1 {
		t.Fatal("the damaged index was not kept aside")
	}
}

// TestTempFilesSwept (issue case 4): temp files of dead writers are removed
// on open; a live writer's temp file is not.
func TestTempFilesSwept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !canSweep {
		t.Skip("no flock(2) on this system: temp files are not swept")
	}
	for _, n := range []string{"o-dead1", "w-dead2", "index-dead3"} {
		os.WriteFile(filepath.Join(dir, "tmp", n), make([]byte, 1<<20), 0o600)
	}
	live, err := s.fs.createTemp("o-")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	got := tempFiles(t, dir)
	if len(got) != 1 || "tmp/"+got[0] != live.rel {
		t.Fatalf("after open, tmp holds %v; want only the live %s", got, live.rel)
	}
	live.Discard()
}

// TestUnsafeDirectoriesRefused (issue case 6): a store directory or
// subdirectory that is a symbolic link, owned by another user or writable
// by others is refused; a symbolic link planted for a manifest, an object
// or the index is never followed.
func TestUnsafeDirectoriesRefused(t *testing.T) {
	wantRefused := func(t *testing.T, dir string) {
		t.Helper()
		s, err := Open(dir)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) accepted an unsafe directory", dir)
		}
		if ce := contract.AsError(err); ce.Code != contract.CodePermissionDenied || ce.Retryable {
			t.Fatalf("want PERMISSION_DENIED, got %+v", ce)
		}
	}
	if _, ok := currentUID(); !ok {
		t.Skip("ownership is not checked on this system")
	}
	t.Run("world writable", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ev")
		os.Mkdir(dir, 0o700)
		os.Chmod(dir, 0o777)
		wantRefused(t, dir)
	})
	t.Run("group writable subdir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ev")
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		os.Chmod(filepath.Join(dir, "manifests"), 0o770)
		wantRefused(t, dir)
	})
	t.Run("symlinked dir", func(t *testing.T) {
		base := t.TempDir()
		os.Mkdir(filepath.Join(base, "real"), 0o700)
		os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "ev"))
		wantRefused(t, filepath.Join(base, "ev"))
	})
	t.Run("symlinked manifests", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "ev")
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		os.Mkdir(filepath.Join(base, "elsewhere"), 0o700)
		os.RemoveAll(filepath.Join(dir, "manifests"))
		os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(dir, "manifests"))
		wantRefused(t, dir)
	})
	t.Run("foreign owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chown to another user needs root")
		}
		dir := filepath.Join(t.TempDir(), "ev")
		os.Mkdir(dir, 0o700)
		os.Chown(dir, 65534, 65534)
		wantRefused(t, dir)
	})
	t.Run("planted links", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "ev")
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		ms := publishN(t, s, 2, "op", "text")
		s.Close()
		secret := filepath.Join(base, "secret.json")
		os.WriteFile(secret, []byte("{}"), 0o600)
		mp := filepath.Join(dir, "manifests", ms[0].EvidenceID+".json")
		body, _ := os.ReadFile(mp)
		os.WriteFile(secret, body, 0o600)
		os.Remove(mp)
		os.Symlink(secret, mp)
		s, err = Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ms[0].EvidenceID); contract.CodeOf(err) != contract.CodeRepositoryCorrupt {
			t.Fatalf("a manifest symlink was followed or misreported: %v", err)
		}
		op := s.objectPath(ms[1].Artifacts[0].SHA256)
		os.Rename(op, op+".real")
		os.Symlink(op+".real", op)
		if _, _, err := s.OpenArtifact(ms[1], "source-0"); contract.CodeOf(err) != contract.CodeRepositoryCorrupt {
			t.Fatalf("an object symlink was followed: %v", err)
		}
		s.Close()
		os.Rename(filepath.Join(dir, indexName), filepath.Join(base, "idx"))
		os.Symlink(filepath.Join(base, "idx"), filepath.Join(dir, indexName))
		if s, err := Open(dir); err == nil {
			s.Close()
			t.Fatal("an index symlink was opened")
		}
		if fi, err := os.Lstat(filepath.Join(dir, indexName)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatal("the planted index symlink was replaced instead of refused")
		}
	})
}

// TestIndexCommitFailureWithdrawsManifest (issue case 2): a publish whose
// index commit fails for lack of space returns the typed disk-full error
// and leaves no manifest behind; the store stays consistent.
func TestIndexCommitFailureWithdrawsManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, s, 2, "op", "text")
	indexFault = &os.PathError{Op: "write", Path: "index.sqlite-wal", Err: syscall.ENOSPC}
	_, err = publishBlob(s, 100)
	indexFault = nil
	wantDiskFull(t, err, dir)
	s.Close()
	if n := checkConsistent(t, dir); n != 2 {
		t.Fatalf("%d records, want 2 (the failed publish must not be published)", n)
	}
}

// TestENOSPCAtEveryWritePosition (issue case 2, without root): a publish
// is failed with ENOSPC at each of its write steps in turn (temp file
// creation, each write, fsync, rename, directory fsync, index commit).
// Every failure is the typed disk-full error naming the directory, and
// after each the store lists exactly the manifests on disk, every record
// verifies and no temp file survives the next open. The loop ends at the
// first position past the publish's last step, where it succeeds.
func TestENOSPCAtEveryWritePosition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, s, 2, "op", "text")
	defer func() { faultAt = 0 }()
	want := 2
	for k := int64(1); ; k++ {
		faults.Store(0)
		faultAt = k
		_, err := publishBlob(s, 600<<10) // several 256 KiB copy writes
		faultAt = 0
		if err == nil {
			want++
			if faults.Load() >= k {
				t.Fatalf("position %d: the publish succeeded although its step %d failed", k, k)
			}
			if k < 6 {
				t.Fatalf("a publish has only %d write steps?", k-1)
			}
			t.Logf("a publish failed at each of its %d write steps, then succeeded", k-1)
			break
		}
		wantDiskFull(t, err, dir)
		s.Close()
		if n := checkConsistent(t, dir); n != want {
			t.Fatalf("position %d: %d records, want %d", k, n, want)
		}
		if s, err = Open(dir); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if n := checkConsistent(t, dir); n != want {
		t.Fatalf("%d records, want %d", n, want)
	}
}
