package sample

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var textCases = []struct {
	in, display string
	lossy       bool
}{
	{"plain.txt", "plain.txt", false},
	{"bad\xffbyte.txt", "bad\uFFFDbyte.txt", true},
	{"\xff\xfe", "\uFFFD\uFFFD", true},
	{"caf\xc3\xa9", "café", false},
	{"caf\xe9", "caf\uFFFD", true},
	{"real \uFFFD rune", "real \uFFFD rune", false},
	{"\xe2\x82", "\uFFFD\uFFFD", true}, // truncated sequence: one U+FFFD per byte
	{"nl\nline\ttab", "nl\nline\ttab", false},
	{"", "", false},
}

func TestTextEncoding(t *testing.T) {
	for _, tt := range textCases {
		if got := Display(tt.in); got != tt.display {
			t.Errorf("Display(%q) = %q, want %q", tt.in, got, tt.display)
		}
		if Lossy(tt.in) != tt.lossy {
			t.Errorf("Lossy(%q) = %v", tt.in, !tt.lossy)
		}
		fields := map[string]any{}
		TextFields("path", tt.in, func(k string, v any) { fields[k] = v })
		if fields["path"] != tt.display {
			t.Errorf("TextFields(%q) path = %v", tt.in, fields["path"])
		}
		b, has := fields["path_bytes"].(string)
		if has != tt.lossy {
			t.Errorf("TextFields(%q): path_bytes present %v", tt.in, has)
		}
		if has {
			back, err := DecodeBytes(b)
			if err != nil || back != tt.in {
				t.Errorf("path_bytes of %q decodes to %q, %v", tt.in, back, err)
			}
		}
	}
}

func TestFullName(t *testing.T) {
	tests := []struct{ exe, argv0, comm, want string }{
		{"/tmp/averyveryverylongprocessname-worker", "", "averyveryverylo", "averyveryverylongprocessname-worker"},
		{"", "/opt/x/averyveryverylongprocessname-worker", "averyveryverylo", "averyveryverylongprocessname-worker"},
		{"", "nginx: worker process", "nginx", "nginx"}, // rewritten argv[0] is not a name
		{"", "", "kworker/0:1", "kworker/0:1"},
		{"/usr/bin/python3.11", "python3", "python3", "python3.11"},
		{"/bin/bad\xffname", "", "bad\xffname", "bad\xffname"},
	}
	for _, tt := range tests {
		if got := FullName(tt.exe, tt.argv0, tt.comm); got != tt.want {
			t.Errorf("FullName(%q, %q, %q) = %q, want %q", tt.exe, tt.argv0, tt.comm, got, tt.want)
		}
	}
	if !MatchesName("averyveryverylongprocessname-worker", "averyveryverylo", " AveryVeryVeryLongProcessName-Worker ") ||
		!MatchesName("python3.11", "python3", "PYTHON3") || MatchesName("python3.11", "python3", "python") {
		t.Error("MatchesName")
	}
	if !MatchesName("bad\xffname", "", "BAD\xffNAME") || MatchesName("bad\xffname", "", "bad\uFFFDname") {
		t.Error("MatchesName must compare exact bytes")
	}
}

// FuzzTextRoundTrip: every byte string round-trips through the path
// encoding (display string + base64 bytes), its display form is valid
// UTF-8, folding keeps every byte that is not UTF-8, and each string
// matches itself by name and substring.
func FuzzTextRoundTrip(f *testing.F) {
	for _, tt := range textCases {
		f.Add(tt.in)
	}
	f.Add("ÄÖÜ\xff/x (deleted)")
	f.Fuzz(func(t *testing.T, s string) {
		d := Display(s)
		if !utf8.ValidString(d) || (Lossy(s) != (d != s)) {
			t.Fatalf("Display(%q) = %q", s, d)
		}
		if back, err := DecodeBytes(EncodeBytes(s)); err != nil || back != s {
			t.Fatalf("bytes round trip %q -> %q (%v)", s, back, err)
		}
		folded := FoldBytes(s)
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 && !strings.Contains(folded, s[i:i+1]) {
				t.Fatalf("FoldBytes(%q) = %q lost byte %#x", s, folded, s[i])
			}
			i += n
		}
		if !ContainsFold(s, s) || !EqualFold(s, s) {
			t.Fatalf("%q does not match itself", s)
		}
		if strings.TrimSpace(s) != "" && !MatchesName(s, "", s) {
			t.Fatalf("MatchesName(%q)", s)
		}
	})
}
