package cli

import "testing"

func TestCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sleep", "sleep"},
		{"x\ny\t\x1b[31mRED", `x\ny\t\x1b[31mRED`},
		{"/tmp/evil\n4    file", `/tmp/evil\n4    file`},
		{"caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d"},
		{"bad\xffbyte", `bad\xffbyte`},
		{"c1\u0085x", `c1\u0085x`},
		{"del\x7f", `del\x7f`},
		{"real \uFFFD kept", "real \uFFFD kept"},
	}
	for _, tt := range tests {
		if got := cell(tt.in); got != tt.want {
			t.Errorf("cell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
