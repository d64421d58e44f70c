package bin

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var objdumpInsnLine = regexp.MustCompile(`^\s*([0-9a-f]+):\t`)

// objdumpStarts returns the address of every instruction objdump -d
// prints for the file at p.
func objdumpStarts(t *testing.T, p string) map[uint64]bool {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "-w", "--no-show-raw-insn", p).Output()
	if err != nil {
		t.Fatalf("objdump -d %s: %v", p, err)
	}
	starts := map[uint64]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := objdumpInsnLine.FindSubmatch(sc.Bytes()); m != nil {
			a, _ := strconv.ParseUint(string(m[1]), 16, 64)
			starts[a] = true
		}
	}
	return starts
}

// boundaryStats compares the instruction start addresses disassemble
// produces with those objdump printed, over every byte of every executable
// section: like objdump, decoding restarts at every symbol, so each region
// runs from a symbol (or the section start) to the next one.
type boundaryStats struct {
	functions, regions, instructions int
	mismatched                       []string
}

func compareBoundaries(t *testing.T, p string, dec x86Decoder, ref map[uint64]bool, every int) boundaryStats {
	t.Helper()
	f, in := inspectPath(t, p)
	arch := archOf(in)
	ss := loadSymbols(in, f.Data)
	idx := newSymIndex(ss)
	var st boundaryStats
	for si, sec := range in.Sections {
		if sec.Content != "file_bytes" || !strings.Contains(sec.Flags, "X") {
			continue
		}
		base, _ := parseHex(sec.Address)
		end := base + uint64(len(sec.data))
		names := map[uint64]string{base: sec.Name}
		for _, s := range ss.syms {
			if !s.Defined || s.sect != si || s.value < base || s.value >= end || s.Type == "STT_SECTION" || s.Type == "STT_FILE" {
				continue
			}
			if s.Type == "STT_FUNC" && names[s.value] != s.Name {
				st.functions++
			}
			names[s.value] = s.Name
		}
		var starts []uint64
		for a := range names {
			starts = append(starts, a)
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
		for i, a := range starts {
			if i%every != 0 {
				continue
			}
			stop := end
			if i+1 < len(starts) {
				stop = starts[i+1]
			}
			code := sec.data[a-base : stop-base]
			rows, _ := disassemble(dec, arch, "gnu", code, a, 0, len(code)+1, idx, nil)
			st.regions++
			st.instructions += len(rows)
			ours := map[uint64]bool{}
			for _, r := range rows {
				v, _ := parseHex(r.Address)
				ours[v] = true
			}
			bad := ""
			for v := a; v < stop; v++ {
				if ref[v] != ours[v] {
					who := "objdump's"
					if ours[v] {
						who = "ours"
					}
					bad = fmt.Sprintf("%s+0x%x (0x%x): an instruction starts there by %s decoding only", names[a], v-a, v, who)
					break
				}
			}
			if bad != "" {
				st.mismatched = append(st.mismatched, bad)
			}
		}
	}
	return st
}

// TestDisassemblyBoundariesMatchObjdump: over every function of the
// system C library and of a Go binary built with GOAMD64=v3 (AVX2 and
// VEX-encoded code; the C library also has AVX-512 EVEX code and endbr64
// at every entry), the instruction boundaries disassemble produces equal
// those objdump prints in the same run. x86asm alone is measured as well,
// to show the cases the external decoder exists for.
func TestDisassemblyBoundariesMatchObjdump(t *testing.T) {
	needTool(t, "objdump")
	buildCorpus(t)
	dec := newX86Decoder()
	if dec.lib == nil {
		t.Fatalf("the Capstone library is required for this test (Debian: libcapstone4): %s", dec.Missing)
	}
	files := []string{corpus["go-linux-amd64-v3-pie"]}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err == nil {
		files = append(files, libc)
	} else {
		t.Logf("no system C library at %s; the Go binary alone is compared", libc)
	}
	for _, p := range files {
		t.Run(p, func(t *testing.T) {
			ref := objdumpStarts(t, p)
			// Under the race detector (10x slower) every 8th region is
			// compared; the plain run compares them all.
			every := 1
			if raceEnabled {
				every = 8
			}
			st := compareBoundaries(t, p, dec, ref, every)
			alone := compareBoundaries(t, p, x86Decoder{Name: "x86asm"}, ref, every)
			t.Logf("%s: %d functions, %d regions, %d instructions; %s: %d regions differ from objdump; x86asm alone: %d differ", p, st.functions, st.regions, st.instructions, dec.Name, len(st.mismatched), len(alone.mismatched))
			if c, err := loadCapstone(); err == nil && !raceEnabled {
				cs := compareBoundaries(t, p, x86Decoder{lib: c, Name: c.version(), Lacks: capstoneLacks(c.major)}, ref, every)
				raw := compareBoundaries(t, p, x86Decoder{lib: c, Name: c.version()}, ref, every)
				t.Logf("for comparison, %s: %d regions differ from objdump (%d when an instruction it lacks is skipped one byte at a time, not by its VEX/EVEX length)", c.version(), len(cs.mismatched), len(raw.mismatched))
			}
			if st.functions < 100 {
				t.Errorf("only %d functions compared", st.functions)
			}
			for i, m := range st.mismatched {
				if i == 20 {
					t.Errorf("... and %d more", len(st.mismatched)-20)
					break
				}
				t.Errorf("boundary differs from objdump: %s", m)
			}
			if len(alone.mismatched) == 0 && every == 1 {
				t.Errorf("x86asm alone agrees with objdump on every function: the file has no VEX/EVEX/CET code and does not test the decoder")
			}
		})
	}
}
