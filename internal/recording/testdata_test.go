package recording

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata recordings")

// fixtures are committed recordings: a complete one, one cut inside its
// last frame (torn), and one with a flipped byte in frame 3 (damaged).
// They pin format version 1: a change that cannot read them breaks
// compatibility with files already on disk.
var fixtures = []struct {
	name       string
	frames     uint64
	complete   bool
	torn       bool
	damaged    int
	identities int
}{
	{"complete.log", 8, true, false, 0, 4},
	{"torn.log", 7, false, true, 0, 4},
	{"flipped.log", 3, false, false, 1, 4},
}

func TestTestdata(t *testing.T) {
	if *update {
		data, offs := record(t, 8, 4, true)
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(filepath.Join("testdata", "complete.log"), data, 0o644)
		os.WriteFile(filepath.Join("testdata", "torn.log"), data[:offs[7]+20], 0o644)
		bad := append([]byte(nil), data...)
		bad[offs[3]+15] ^= 0x08
		os.WriteFile(filepath.Join("testdata", "flipped.log"), bad, 0o644)
	}
	for _, f := range fixtures {
		data, err := os.ReadFile(filepath.Join("testdata", f.name))
		if err != nil {
			t.Fatal(err)
		}
		l, err := LoadBytes(data)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		in := l.Info
		if in.Frames != f.frames || in.Complete() != f.complete || (in.Torn != nil) != f.torn || len(in.Damaged) != f.damaged || len(l.Procs) != f.identities {
			t.Fatalf("%s: %+v (%d identities) problems %v", f.name, in, len(l.Procs), in.Problems())
		}
	}
}
