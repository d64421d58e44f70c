package bin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var objdumpPlainRE = regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)

// objdumpText runs objdump -d -w --no-show-raw-insn (with extra options)
// on section .text of p: each instruction's text by address, without
// objdump's symbol annotations ("<sym>", "# addr <sym>").
func objdumpSectionText(t testing.TB, p string, extra ...string) map[uint64]string {
	t.Helper()
	args := append([]string{"-d", "-w", "--no-show-raw-insn", "-j", ".text"}, extra...)
	out, err := exec.Command("objdump", append(args, p)...).Output()
	if err != nil {
		t.Fatalf("objdump %v %s: %v", args, p, err)
	}
	m := map[uint64]string{}
	for _, l := range strings.Split(string(out), "\n") {
		s := objdumpPlainRE.FindStringSubmatch(l)
		if s == nil {
			continue
		}
		a, _ := strconv.ParseUint(s[1], 16, 64)
		m[a] = s[2]
	}
	return m
}

// ourText disassembles section .text of p with dec in syntax: each
// instruction's text by address ("" for undecodable rows).
func ourText(t testing.TB, p string, dec x86Decoder, syntax string) map[uint64]string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := inspectMode(context.Background(), data, false, false)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := resolveSection(in, ".text", 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	idx := newSymIndex(&symbolSet{})
	m := map[uint64]string{}
	for off := 0; off < len(cr.code); {
		rows, next := disassemble(dec, archOf(in), syntax, cr.code, cr.base, off, 5000, idx, nil)
		for _, r := range rows {
			a, _ := parseHex(r.Address)
			m[a] = r.Text
		}
		if next <= off {
			break
		}
		off = next
	}
	return m
}

// canonObjdump is objdump's instruction text without its annotations
// and with runs of blanks as one.
func canonObjdump(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, " <"); i >= 0 && strings.HasSuffix(s, ">") {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}

func TestMeasureATT(t *testing.T) {
	p := os.Getenv("ATT_FILE")
	if p == "" {
		t.Skip()
	}
	syntax := os.Getenv("ATT_SYNTAX")
	var extra []string
	if syntax == "intel" {
		extra = []string{"-M", "intel"}
	}
	ref := objdumpSectionText(t, p, extra...)
	dec := newX86Decoder()
	if os.Getenv("ATT_DEC") == "capstone" {
		c, err := loadCapstone()
		if err != nil {
			t.Fatal(err)
		}
		dec = x86Decoder{lib: c, Name: c.version(), Lacks: capstoneLacks(c.major)}
	}
	got := ourText(t, p, dec, syntax)
	type ex struct {
		a    uint64
		o, g string
	}
	by := map[string][]ex{}
	diff := 0
	for a, o := range ref {
		o = canonObjdump(o)
		g, ok := got[a]
		g = strings.Join(strings.Fields(g), " ")
		if ok && g == o {
			continue
		}
		mn := strings.Fields(o + " ?")[0]
		by[mn] = append(by[mn], ex{a, o, g})
		diff++
	}
	var ks []string
	for k := range by {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return len(by[ks[i]]) > len(by[ks[j]]) })
	fmt.Printf("%s %s %s: %d instructions, %d differ\n", p, dec.Name, syntax, len(ref), diff)
	for _, k := range ks {
		e := by[k]
		fmt.Printf("%7d %-12s e.g. %#x objdump %q ours %q\n", len(e), k, e[0].a, e[0].o, e[0].g)
	}
}
