package evidence

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestReadOnFullDisk: a record preserved before the disk filled is still
// listed and read (Open, Query, Get) while the disk is full.
func TestReadOnFullDisk(t *testing.T) {
	mnt := testbuild.SmallTmpfs(t, "1m")
	dir := filepath.Join(mnt, "evidence")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ms := publishN(t, s, 1, "op", "text")
	s.Close()
	filler := testbuild.FillDisk(t, mnt)

	s, err = Open(dir)
	if err != nil {
		t.Fatalf("open on a full disk: %v", err)
	}
	defer s.Close()
	p, err := s.Query(context.Background(), Filter{}, 10, "")
	if err != nil {
		t.Fatalf("query on a full disk: %v", err)
	}
	if len(p.Rows) != 1 || p.Rows[0].EvidenceID != ms[0].EvidenceID || p.Rows[0].Problem != "" {
		t.Fatalf("query on a full disk: %+v", p.Rows)
	}
	if p.Warning != ReadOnlyWarning {
		t.Fatalf("a listing read from the manifests has warning %q", p.Warning)
	}
	if _, err := s.Get(ms[0].EvidenceID); err != nil {
		t.Fatalf("get on a full disk: %v", err)
	}
	if err := s.VerifyArtifact(context.Background(), ms[0], "source-0"); err != nil {
		t.Fatalf("verify on a full disk: %v", err)
	}
	_, err = s.Publish(context.Background(), Record{Toolset: "perf", Operation: "op", Status: StatusComplete,
		Artifacts: []ArtifactInput{{Name: "source-0", Role: RoleAnalysisSource, Format: "text", Data: []byte("y")}}})
	if ce := contract.AsError(err); err == nil || ce.Code != contract.CodeResourceLimit || ce.Retryable {
		t.Fatalf("publish on a full disk: %v", err)
	}
	// Space freed: the same store writes to its file index again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	publishN(t, s, 1, "op2", "text")
	p, err = s.Query(context.Background(), Filter{}, 10, "")
	if err != nil || len(p.Rows) != 2 || p.Warning != "" {
		t.Fatalf("query after space was freed: %+v %v", p, err)
	}
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = s.Query(context.Background(), Filter{}, 10, ""); err != nil || len(p.Rows) != 2 {
		t.Fatalf("reopened: %+v %v", p, err)
	}
}

// objectFiles lists the files under DIR/objects/sha256.
func objectFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, "objects", "sha256"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, filepath.Base(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFailedPublishLeavesNoObject: a publish whose object fits on the
// disk but whose manifest or index entry does not fails with
// RESOURCE_LIMIT and leaves no object behind ("Nothing was published"),
// while an object an existing record references is kept.
func TestFailedPublishLeavesNoObject(t *testing.T) {
	mnt := testbuild.SmallTmpfs(t, "1m")
	dir := filepath.Join(mnt, "evidence")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := publishN(t, s, 1, "op", "text")
	before := objectFiles(t, dir)
	filler := testbuild.FillDisk(t, mnt)
	// Free one page: room for the new object, none for its manifest.
	fi, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, fi.Size()/4096*4096-4096); err != nil {
		t.Fatal(err)
	}
	_, err = s.Publish(context.Background(), Record{Toolset: "perf", Operation: "op", Status: StatusComplete,
		Artifacts: []ArtifactInput{
			{Name: "source-0", Role: RoleAnalysisSource, Format: "text", Data: []byte("x")}, // old's object
			{Name: "out", Role: RoleOutput, Format: "text", Data: make([]byte, 4000)},
		}})
	if ce := contract.AsError(err); err == nil || ce.Code != contract.CodeResourceLimit {
		t.Fatalf("publish on a nearly full disk: %v", err)
	}
	after := objectFiles(t, dir)
	if len(after) != len(before) || after[0] != before[0] {
		t.Fatalf("objects before %v, after the failed publish %v", before, after)
	}
	if _, err := s.Get(old[0].EvidenceID); err != nil {
		t.Fatalf("the earlier record: %v", err)
	}
}
