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
}

// TestNameFactsMatches is the one table of the name rule: exe base name,
// comm (and a longer name whose first 15 bytes are a full-length comm),
// argv[0] as a path and as a base name, case-folded on exact bytes.
func TestNameFactsMatches(t *testing.T) {
	py := NameFacts{Name: "python3.11", Comm: "python3", Exe: "/usr/bin/python3.11", Argv0: "/usr/bin/python3"}
	long := NameFacts{Name: "averyveryverylongprocessname-worker", Comm: "averyveryverylo", Exe: "/opt/x/averyveryverylongprocessname-worker"}
	cut := NameFacts{Name: "averyveryverylo", Comm: "averyveryverylo"} // exe unreadable, argv[0] rewritten
	conf := NameFacts{Name: "python3.11", Comm: "python3", Exe: "/usr/bin/python3.11", Argv0: "/srv/bin/confload"}
	for _, tt := range []struct {
		f    NameFacts
		want string
		ok   bool
	}{
		{py, "python3.11", true},       // exe base name (and FullName)
		{py, "PYTHON3", true},          // comm, case-folded
		{py, "/usr/bin/python3", true}, // argv[0] as given
		{py, "python", false},          // no substring match
		{py, "  python3  ", true},      // trimmed
		{py, "", false},                // empty names nothing
		{long, " AveryVeryVeryLongProcessName-Worker ", true},
		{long, "averyveryverylo", true},                    // comm itself
		{cut, "averyveryverylongprocessname-worker", true}, // comm is its first 15 bytes
		{cut, "averyveryverylX-longer", false},
		{NameFacts{Comm: "short"}, "shortened", false}, // a comm under 15 bytes was not cut
		{conf, "confload", true},                       // argv[0]'s base name only
		{conf, "/srv/bin/confload", true},              // argv[0]'s path
		{conf, "bin", false},
		{NameFacts{Name: "bad\xffname", Comm: "bad\xffname"}, "BAD\xffNAME", true},
		{NameFacts{Name: "bad\xffname", Comm: "bad\xffname"}, "bad\uFFFDname", false}, // exact bytes
	} {
		if got := tt.f.Matches(tt.want); got != tt.ok {
			t.Errorf("%+v.Matches(%q) = %v, want %v", tt.f, tt.want, got, tt.ok)
		}
	}
	for _, tt := range []struct {
		f   NameFacts
		sub string
		ok  bool
	}{{py, "thon3.1", true}, {conf, "confl", true}, {conf, "srv", false}, {py, "", true}, {long, "VERYLONG", true}, {py, "perl", false}} {
		if got := tt.f.Contains(tt.sub); got != tt.ok {
			t.Errorf("%+v.Contains(%q) = %v, want %v", tt.f, tt.sub, got, tt.ok)
		}
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
		if strings.TrimSpace(s) != "" && !(NameFacts{Name: s}).Matches(s) {
			t.Fatalf("Matches(%q)", s)
		}
	})
}
