package bin

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestInstructionAppendJSON checks the reflection-free row encoding
// against encoding/json's own, byte for byte.
func TestInstructionAppendJSON(t *testing.T) {
	cases := []Instruction{
		{Address: "0x1000", Bytes: "c3", Text: "ret"},
		{Address: "0x1000", Bytes: "e8fb0f0000", Text: "call 0x2000", Target: "0x2000", TargetSymbol: "memcpy@@GLIBC_2.14"},
		{Address: "0x1", Bytes: "ff", Error: "undecodable"},
		{Address: "0x2", Bytes: "90", Text: "nop", Source: "a.c:12"},
		{Address: "0x3", Bytes: "", Text: `quote " back \ tab	`},
		{Address: "0x4", Bytes: "00", Text: "<html> & stuff", TargetSymbol: "operator<<"},
		{Address: "0x5", Bytes: "00", Text: "caf\u00e9 \u2028 \xff\xfe", Source: "\x01\x7f"},
		{Address: "0x6", Bytes: "0000", Text: "add %al,(%rax)", Relocations: []Relocation{{}}},
		{},
	}
	for _, c := range cases {
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.appendJSON([]byte("prefix")); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("appendJSON(%+q)\n got %s\nwant prefix%s", c.Text, got, want)
		}
	}
}

// FuzzInstructionAppendJSON checks appendJSON against encoding/json for
// arbitrary field strings.
func FuzzInstructionAppendJSON(f *testing.F) {
	f.Add("0x10", "c3", "ret", "", "", "", "")
	f.Add("0x10", "e8", "call 0x20", "0x20", "f<x>", "a.c:1", "")
	f.Add("", "", "\u2029\"\\", "\x00", "\xff", "é", "undecodable")
	f.Fuzz(func(t *testing.T, addr, hexBytes, text, target, sym, source, errText string) {
		r := Instruction{Address: addr, Bytes: hexBytes, Text: text, Target: target, TargetSymbol: sym, Source: source, Error: errText}
		want, _ := json.Marshal(&r)
		if got := r.appendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	})
}

// FuzzHasDecImm checks the scan that guards attDecImmRE against the
// regular expression itself.
func FuzzHasDecImm(f *testing.F) {
	for _, s := range []string{"mov $3,%eax", "add $-1,%rsp", "mov $0x10,%eax", "int $3", "$", "$-", "$-,", "$12x,$4", "shl $1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := hasDecImm(s), attDecImmRE().MatchString(s); got != want {
			t.Errorf("hasDecImm(%q) = %v, regexp says %v", s, got, want)
		}
	})
}
