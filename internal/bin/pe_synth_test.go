package bin

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// synthPE builds a small PE32+ DLL by hand (PE/COFF specification layout)
// with what the Go toolchain never emits: an export directory (two named
// exports and one by ordinal only), a delay-load import descriptor (by
// name and by ordinal), a debug directory with a CodeView RSDS record, a
// certificate table entry and DllCharacteristics with GUARD_CF.
func synthPE() []byte {
	le := binary.LittleEndian
	b := make([]byte, 0x610)
	b[0], b[1] = 'M', 'Z'
	le.PutUint32(b[0x3c:], 0x40)
	copy(b[0x40:], "PE\x00\x00")
	c := b[0x44:]
	le.PutUint16(c[0:], 0x8664)
	le.PutUint16(c[2:], 1)
	le.PutUint16(c[16:], 240)
	le.PutUint16(c[18:], 0x2022)
	o := b[0x58:]
	le.PutUint16(o[0:], 0x20b)
	le.PutUint32(o[8:], 0x400)
	le.PutUint32(o[16:], 0)
	le.PutUint32(o[20:], 0x1000)
	le.PutUint64(o[24:], 0x180000000)
	le.PutUint32(o[32:], 0x1000)
	le.PutUint32(o[36:], 0x200)
	le.PutUint16(o[40:], 6)
	le.PutUint16(o[48:], 6)
	le.PutUint32(o[56:], 0x2000)
	le.PutUint32(o[60:], 0x200)
	le.PutUint16(o[68:], 2)
	le.PutUint16(o[70:], 0x4160)
	le.PutUint64(o[72:], 0x100000)
	le.PutUint64(o[80:], 0x1000)
	le.PutUint64(o[88:], 0x100000)
	le.PutUint64(o[96:], 0x1000)
	le.PutUint32(o[108:], 16)
	dir := func(i int, rva, size uint32) {
		le.PutUint32(o[112+8*i:], rva)
		le.PutUint32(o[116+8*i:], size)
	}
	dir(0, 0x1000, 0x180)
	dir(4, 0x600, 16)
	dir(6, 0x1300, 28)
	dir(13, 0x1180, 64)
	s := b[0x148:]
	copy(s, ".rdata")
	le.PutUint32(s[8:], 0x400)
	le.PutUint32(s[12:], 0x1000)
	le.PutUint32(s[16:], 0x400)
	le.PutUint32(s[20:], 0x200)
	le.PutUint32(s[36:], 0x40000040)
	d := b[0x200:0x600]
	// Export directory.
	le.PutUint32(d[0x0c:], 0x1100)
	le.PutUint32(d[0x10:], 1)
	le.PutUint32(d[0x14:], 3)
	le.PutUint32(d[0x18:], 2)
	le.PutUint32(d[0x1c:], 0x1040)
	le.PutUint32(d[0x20:], 0x1060)
	le.PutUint32(d[0x24:], 0x1070)
	le.PutUint32(d[0x40:], 0x13a0)
	le.PutUint32(d[0x44:], 0x1120) // inside the directory: a forwarder
	le.PutUint32(d[0x48:], 0x13c0)
	le.PutUint32(d[0x60:], 0x1110)
	le.PutUint32(d[0x64:], 0x1118)
	le.PutUint16(d[0x70:], 0)
	le.PutUint16(d[0x72:], 1)
	copy(d[0x100:], "synth.dll\x00")
	copy(d[0x110:], "Alpha\x00")
	copy(d[0x118:], "Beta\x00")
	copy(d[0x120:], "other.Gamma\x00")
	// Delay-load descriptor (RVA-based, attributes 1) and its name table.
	dd := d[0x180:]
	le.PutUint32(dd[0:], 1)
	le.PutUint32(dd[4:], 0x1200)
	le.PutUint32(dd[8:], 0x12f0)
	le.PutUint32(dd[12:], 0x12c0)
	le.PutUint32(dd[16:], 0x1280)
	copy(d[0x200:], "delayed.dll\x00")
	copy(d[0x222:], "DelayedFn\x00")
	le.PutUint64(d[0x280:], 0x1220)
	le.PutUint64(d[0x288:], 1<<63|5)
	le.PutUint64(d[0x2c0:], 0x1220)
	le.PutUint64(d[0x2c8:], 1<<63|5)
	// Debug directory with a CodeView RSDS record.
	pdb := `C:\build\synth.pdb`
	dbg := d[0x300:]
	le.PutUint32(dbg[12:], 2)
	le.PutUint32(dbg[16:], uint32(24+len(pdb)+1))
	le.PutUint32(dbg[20:], 0x1340)
	le.PutUint32(dbg[24:], 0x540)
	copy(d[0x340:], "RSDS")
	copy(d[0x344:], []byte{0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0x78, 0x56, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x02, 0x03, 0x04})
	le.PutUint32(d[0x354:], 7)
	copy(d[0x358:], pdb)
	// WIN_CERTIFICATE header at file offset 0x600.
	le.PutUint32(b[0x600:], 16)
	le.PutUint16(b[0x604:], 0x200)
	le.PutUint16(b[0x606:], 2)
	return b
}

// TestSyntheticPE checks export, delay-import, debug-directory and
// certificate facts against the hand-built layout and, where binutils is
// present, against objdump -p's reading of the same file.
func TestSyntheticPE(t *testing.T) {
	data := synthPE()
	in := exercise(t, data)
	if in == nil || !in.Complete() {
		t.Fatalf("not admitted completely: %+v", in)
	}
	exp := map[string]string{}
	for _, e := range in.Exports {
		exp[e.Name+"#"+e.Ordinal] = e.Address
		if e.Name == "Beta" && e.Forwarder != "other.Gamma" {
			t.Errorf("Beta forwarder %q", e.Forwarder)
		}
	}
	want := map[string]string{"Alpha#1": "0x1800013a0", "Beta#2": "", "#3": "0x1800013c0"}
	for k, v := range want {
		if exp[k] != v {
			t.Errorf("export %s at %q, want %s (all: %v)", k, exp[k], v, exp)
		}
	}
	var delayed []string
	for _, i := range in.Imports {
		if i.Source == "delay import directory" {
			delayed = append(delayed, i.Library+"!"+i.Name+"#"+i.Ordinal)
		}
	}
	if strings.Join(delayed, ",") != "delayed.dll!DelayedFn#,delayed.dll!#5" || !contains(in.Libraries, "delayed.dll") {
		t.Errorf("delay imports %v, libraries %v", delayed, in.Libraries)
	}
	if p := in.BuildID.PDB; p == nil || p.Path != `C:\build\synth.pdb` || p.GUID != "12345678-1234-5678-9ABC-DEF001020304" || p.Age != "7" {
		t.Errorf("pdb %+v", in.BuildID.PDB)
	}
	verdicts := map[string]string{}
	for _, c := range in.Hardening {
		verdicts[c.Name] = c.Verdict
	}
	if verdicts["cfg"] != VerdictYes || verdicts["certificate_table"] != VerdictYes || verdicts["aslr"] != VerdictYes {
		t.Errorf("verdicts %v", verdicts)
	}
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump (binutils) not installed")
	}
	p := filepath.Join(t.TempDir(), "synth.dll")
	os.WriteFile(p, data, 0o644)
	out, _ := exec.Command("objdump", "-p", p).CombinedOutput()
	text := string(out)
	for _, name := range []string{"Alpha", "Beta"} {
		if !regexp.MustCompile(`\]\s+` + name + `\b`).MatchString(text) {
			t.Errorf("objdump does not list export %s:\n%s", name, text)
		}
	}
	// binutils 2.40 does not print delay-load tables for pei-x86-64; the
	// delay imports are checked against the layout above only.
	for _, m := range regexp.MustCompile(`\+base\[\s*(\d+)\] ([0-9a-f]+) (Export|Forwarder) RVA(?: -- (\S+))?`).FindAllStringSubmatch(text, -1) {
		found := false
		for _, e := range in.Exports {
			if e.Ordinal != m[1] {
				continue
			}
			found = true
			if m[3] == "Forwarder" && e.Forwarder != m[4] {
				t.Errorf("ordinal %s: forwarder %q, objdump %q", m[1], e.Forwarder, m[4])
			}
			if m[3] == "Export" && e.Address != hexU(0x180000000+hx(m[2])) {
				t.Errorf("ordinal %s: address %s, objdump RVA %s", m[1], e.Address, m[2])
			}
		}
		if !found {
			t.Errorf("objdump export ordinal %s missing", m[1])
		}
	}
	if !strings.Contains(text, `C:\build\synth.pdb`) || !strings.Contains(strings.ToLower(text), "age 7") {
		t.Errorf("objdump does not show the RSDS record:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^\s+GUARD_CF$`).MatchString(text) {
		t.Errorf("objdump does not list GUARD_CF")
	}
}
