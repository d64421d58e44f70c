package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestUnsupportedRepositoryFormat: a store whose format.json names a
// newer format version is refused before anything in it changes, and a
// manifest of a newer schema_version is REPOSITORY_FORMAT_UNSUPPORTED on
// Get (listed with that problem by Query) while version-1 records stay
// readable; a format.json that names no version is REPOSITORY_CORRUPT.
func TestUnsupportedRepositoryFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ms := publishN(t, s, 2, "seed", "text")
	b, err := os.ReadFile(filepath.Join(dir, formatName))
	if err != nil || !bytes.Equal(b, []byte(`{"format_version":1}`+"\n")) {
		t.Fatalf("format.json of a new store: %q %v", b, err)
	}

	// A manifest a newer inquest wrote.
	var raw map[string]any
	body, _ := os.ReadFile(s.manifestPath(ms[0].EvidenceID))
	json.Unmarshal(body, &raw)
	raw["schema_version"] = 2
	newer, _ := json.Marshal(raw)
	os.Chmod(s.manifestPath(ms[0].EvidenceID), 0o600)
	if err := os.WriteFile(s.manifestPath(ms[0].EvidenceID), newer, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ms[0].EvidenceID)
	ce := contract.AsError(err)
	if err == nil || ce.Code != contract.CodeRepositoryFormat || ce.Retryable || ce.Details["format_version"] != int64(2) || ce.Details["supported_format_version"] != FormatVersion {
		t.Fatalf("get of a version 2 manifest: %v (%v)", err, ce)
	}
	if _, err := s.Get(ms[1].EvidenceID); err != nil {
		t.Fatalf("a version 1 record beside it: %v", err)
	}
	rows := listAll(t, s)
	problems := 0
	for _, r := range rows {
		if r.Problem != "" {
			problems++
		}
	}
	if len(rows) != 2 || problems != 1 {
		t.Fatalf("listing: %d rows, %d with a problem; want 2, 1", len(rows), problems)
	}
	s.Close()

	// A whole store a newer inquest wrote: refused, nothing touched.
	tmpLeft := filepath.Join(dir, "tmp", "w-deadbeef00000000")
	os.WriteFile(tmpLeft, []byte("x"), 0o600)
	for _, tc := range []struct {
		body string
		code contract.Code
	}{
		{`{"format_version": 3}`, contract.CodeRepositoryFormat},
		{`{"format": "other"}`, contract.CodeRepositoryCorrupt},
		{`not json`, contract.CodeRepositoryCorrupt},
	} {
		if err := os.WriteFile(filepath.Join(dir, formatName), []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		ce := contract.AsError(err)
		if err == nil || ce.Code != tc.code || ce.Retryable {
			t.Fatalf("open with format.json %s: %v, want %s", tc.body, err, tc.code)
		}
		if tc.code == contract.CodeRepositoryFormat && (ce.Details["format_version"] != int64(3) || ce.Details["directory"] != dir) {
			t.Fatalf("details: %v", ce.Details)
		}
		if _, err := os.Stat(tmpLeft); err != nil {
			t.Fatalf("open of a refused store swept its tmp/: %v", err)
		}
	}
	// Back at version 1 the store opens and reads again.
	os.WriteFile(filepath.Join(dir, formatName), []byte(`{"format_version":1}`), 0o600)
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Location(context.Background()); err != nil {
		t.Fatal(err)
	}
}
