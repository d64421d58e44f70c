package bin

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// exercise runs every parser entry point over data; none may panic.
func exercise(t testing.TB, data []byte) *Inspection {
	in, err := Inspect(context.Background(), data)
	if err != nil {
		if c := contract.CodeOf(err); c != contract.CodeUnsupportedFormat {
			t.Fatalf("Inspect error %v, want UNSUPPORTED_FORMAT or facts", err)
		}
		return nil
	}
	ss := loadSymbols(in, data)
	for _, s := range ss.syms {
		symbolDigest(in, s)
	}
	if arch := archOf(in); arch != "" {
		for _, s := range pltSymbols(in, data, arch) {
			if s.size == 0 || s.Section == "" {
				t.Fatalf("synthetic PLT symbol %+v lacks extent or section", s)
			}
		}
		for _, s := range in.Sections {
			if s.Content == "file_bytes" && len(s.data) > 0 {
				a, _ := parseHex(s.Address)
				disassemble(newX86Decoder(), arch, "gnu", s.data, a, 0, 64, newSymIndex(ss), newLineTable(in, data, a, a+uint64(len(s.data))))
				break
			}
		}
	}
	if _, _, _, err := searchStrings(context.Background(), in, data, StringQuery{Encodings: []string{EncASCII, EncUTF16LE}, MinLength: 4, Hi: len(data)}, 0, 50); err != nil {
		t.Fatal(err)
	}
	compareBinaries(compareSide{in, ss}, compareSide{in, ss})
	if relocatable(in) {
		for i := range in.Sections {
			elfRelocations(in, data, i)
			coffRelocations(in, data, i)
		}
	}
	for _, m := range in.Members {
		if m.CPU != nil && archName(m.CPU.Name) != "" {
			selectSlice(context.Background(), NewFile("fuzz", data), in, archName(m.CPU.Name), true, false)
		}
	}
	return in
}

func truncationOffsets(size int) []int {
	offs := []int{0, 1, 3, 4, 5, 16, 20, 24, 27, 28, 31, 32, 52, 60, 63, 64, 65, 100, 128, 200, 256, 500, 512, 1000, 1024, 4095, 4096, 8192, size - 1}
	spread := 24
	if raceEnabled {
		spread = 6
	}
	for i := 1; i < spread; i++ {
		offs = append(offs, size*i/spread)
	}
	var out []int
	for _, o := range offs {
		if o >= 0 && o < size {
			out = append(out, o)
		}
	}
	return out
}

// TestTruncatedAndCorrupted cuts every corpus format at many offsets and
// overwrites bytes at many places: partial facts with coverage, never a
// panic, and every fact that survives truncation equals the intact file's.
func TestTruncatedAndCorrupted(t *testing.T) {
	buildCorpus(t)
	for _, name := range []string{"go-linux-amd64", "go-linux-arm64", "c-hardened", "go-windows-amd64.exe", "go-darwin-arm64", "go-darwin-universal"} {
		p, ok := corpus[name]
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			full, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			whole := exercise(t, full)
			if whole == nil || !whole.Complete() {
				t.Fatal("the intact file is not complete")
			}
			partialSeen := 0
			for _, off := range truncationOffsets(len(full)) {
				cut := full[:off:off]
				in := exercise(t, cut)
				if in == nil {
					if off >= 4 && name != "go-darwin-universal" {
						t.Errorf("cut at %d: format no longer recognized although the magic survives", off)
					}
					continue
				}
				if in.Complete() {
					t.Errorf("cut at %d of %d: reported complete", off, len(full))
				}
				if len(in.Unresolved) == 0 {
					t.Errorf("cut at %d: no unresolved structure reported", off)
				}
				if len(in.Sections) > 0 {
					partialSeen++
				}
				// Facts that survive are the intact file's facts.
				if in.Facets["header"].State == FacetComplete && in.Header.Entry != "" && in.Header.Entry != whole.Header.Entry && in.Header.Format != FormatMachOFat {
					t.Errorf("cut at %d: entry %s, intact %s", off, in.Header.Entry, whole.Header.Entry)
				}
				for i, s := range in.Sections {
					if s.Content == "file_bytes" && i < len(whole.Sections) && (s.SHA256 != whole.Sections[i].SHA256 || s.Name != whole.Sections[i].Name) {
						t.Errorf("cut at %d: section %d %s digest differs from the intact file", off, i, s.Name)
					}
				}
			}
			if name == "go-windows-amd64.exe" && partialSeen == 0 {
				t.Error("no truncation of the PE kept its section table")
			}
			rng := rand.New(rand.NewSource(int64(len(full))))
			rounds := 40
			if raceEnabled {
				rounds = 8
			}
			for i := 0; i < rounds; i++ {
				bad := append([]byte(nil), full...)
				off := rng.Intn(min(len(bad), 8192))
				if i%2 == 1 {
					off = rng.Intn(len(bad))
				}
				for j := 0; j < 8 && off+j < len(bad); j++ {
					if i%3 == 0 {
						bad[off+j] = 0xff
					} else {
						bad[off+j] = byte(rng.Intn(256))
					}
				}
				exercise(t, bad)
			}
		})
	}
}

func fuzzSeeds(f *testing.F) {
	ents, _ := os.ReadDir("testdata")
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err == nil {
			f.Add(b)
			if len(b) > 4096 {
				f.Add(b[:4096])
			}
		}
	}
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("MZ"))
	f.Add([]byte{0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 1})
	f.Add([]byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 1, 1, 0, 0, 0xc})
}

// FuzzInspect drives Inspect and every consumer of its facts (symbols,
// digests, disassembly, strings, comparison) on arbitrary bytes.
func FuzzInspect(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(t, data)
	})
}

// FuzzRecognize checks that recognition never panics and agrees with
// Inspect on whether the format is known.
func FuzzRecognize(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Recognize(data)
		_, ierr := Inspect(context.Background(), data)
		if (err == nil) != (ierr == nil) {
			t.Fatalf("Recognize %v, Inspect %v", err, ierr)
		}
	})
}
