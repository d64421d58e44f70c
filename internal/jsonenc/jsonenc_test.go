package jsonenc

import (
	"encoding/json"
	"math"
	"testing"
)

func TestString(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "<script>&amp;</script>",
		"\x00\x01\b\f\n\r\t\x1f\x7f", "caf\u00e9 \u2028 \u2029 \U0001F600",
		"bad \xff byte", "\xed\xa0\x80 surrogate", "cut \xe2\x82", "\xc0\xaf overlong",
	} {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Errorf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
		if got := Bytes(nil, []byte(s)); string(got) != string(want) {
			t.Errorf("Bytes(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
}

func TestFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 12.25, 1e-6, 9.99e-7, 1e-7, 1.5e-300,
		1e20, 1e21, 123456789e15, -2.5e-8, math.MaxFloat64, math.SmallestNonzeroFloat64, 100, 33.333333333333336} {
		want, _ := json.Marshal(f)
		if got := Float(nil, f); string(got) != string(want) {
			t.Errorf("Float(%v) = %s, encoding/json writes %s", f, got, want)
		}
	}
}

func TestKey(t *testing.T) {
	b := []byte("{")
	b = Key(b, "a")
	b = append(b, '1')
	b = Key(b, "b<>")
	b = append(b, "[]"...)
	b = append(b, '}')
	want, _ := json.Marshal(map[string]any{"a": 1, "b<>": []int{}})
	if string(b) != string(want) {
		t.Fatalf("Key: %s, want %s", b, want)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "<&>", "\xff\xfe", "\u2028", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
		if got := Bytes(nil, []byte(s)); string(got) != string(want) {
			t.Fatalf("Bytes(%q) = %s, encoding/json writes %s", s, got, want)
		}
	})
}

func FuzzFloat(f *testing.F) {
	for _, v := range []float64{0, 1e-7, 1e21, -3.25, 5e-324} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		want, _ := json.Marshal(v)
		if got := Float(nil, v); string(got) != string(want) {
			t.Fatalf("Float(%v) = %s, encoding/json writes %s", v, got, want)
		}
	})
}
