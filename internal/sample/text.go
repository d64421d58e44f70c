package sample

import (
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names and paths are bytes on Linux: a file name, an executable path or a
// command name may hold any byte but NUL ('/' too, in paths). inquest
// keeps them as Go strings holding the exact bytes and encodes them for
// JSON with one rule (documented in docs/captures.md, "Names and paths
// are bytes"):
//
//   - the field itself (path, name, comm, ...) is a JSON string: the exact
//     text when the bytes are valid UTF-8, otherwise the display form in
//     which every byte that is not part of valid UTF-8 is U+FFFD;
//   - only when the display form is lossy, a sibling field named
//     <field>_bytes holds the exact bytes in standard base64 (RFC 4648
//     section 4, padded). Its presence is the lossy flag.
//
// Filters take the same pair: a text selector, or its <selector>_bytes
// form (base64) for a query that is not valid UTF-8; both match the exact
// bytes (see FoldBytes).

// Lossy reports whether s is not valid UTF-8, so its JSON string form
// (Display) loses bytes and the exact bytes must travel as BytesField.
func Lossy(s string) bool { return !utf8.ValidString(s) }

// Display returns s with every byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD (one replacement per byte, as encoding/json
// does). For valid UTF-8 it returns s unchanged.
func Display(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// EncodeBytes returns the standard padded base64 of the exact bytes of s
// (the value of a <field>_bytes field).
func EncodeBytes(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// DecodeBytes decodes a <field>_bytes value (standard padded base64) to
// the exact bytes. The error is base64's CorruptInputError.
func DecodeBytes(b64 string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(b64)
	return string(b), err
}

// TextFields emits the JSON fields of one name or path value s through
// add: key with Display(s), then key+"_bytes" with EncodeBytes(s) only
// when s is lossy (add is called once or twice, in that order).
func TextFields(key, s string, add func(key string, value any)) {
	add(key, Display(s))
	if Lossy(s) {
		add(key+"_bytes", EncodeBytes(s))
	}
}

// FoldBytes is the case folding every name and path match uses: each
// valid UTF-8 rune is lower-cased (unicode.ToLower) and every byte that is
// not part of valid UTF-8 is kept as it is, so a match compares exact bytes
// (strings.ToLower would turn each such byte into U+FFFD and match a
// different name).
func FoldBytes(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(s[i])
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
		i += n
	}
	return b.String()
}

// ContainsFold reports whether sub occurs in s under FoldBytes.
func ContainsFold(s, sub string) bool { return strings.Contains(FoldBytes(s), FoldBytes(sub)) }

// EqualFold reports whether a and b are equal under FoldBytes.
func EqualFold(a, b string) bool { return a == b || FoldBytes(a) == FoldBytes(b) }

// DeletedSuffix is what the kernel appends to a /proc link target (fd,
// exe, maps) whose dentry was unlinked. A live file may carry the same
// suffix in its real name, so the suffix alone never decides deletion.
const DeletedSuffix = " (deleted)"

// BaseName returns the final element of a slash-separated path ("" for
// "" or a path ending in '/').
func BaseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// MaxComm is the length at which the kernel cuts a command name (comm,
// TASK_COMM_LEN - 1 bytes).
const MaxComm = 15

// FullName is the one process-name rule of inquest (docs/captures.md,
// "Process names"): the base name of the executable path exe (already
// without a deletion suffix) when known; else, when comm has the kernel's
// full 15 bytes (so it may have been cut), the base name of argv[0] if
// comm is a prefix of it (psutil's rule: a rewritten argv[0] such as
// "nginx: worker process" is not taken for a short comm); else comm, the
// kernel's command name. Every name filter, tracking match, condition wait
// and history target applies this rule, and also matches comm itself.
func FullName(exe, argv0, comm string) string {
	if exe != "" {
		if b := BaseName(exe); b != "" {
			return b
		}
	}
	if argv0 != "" && len(comm) >= MaxComm {
		if b := BaseName(argv0); b != "" && strings.HasPrefix(b, comm) {
			return b
		}
	}
	return comm
}

// NameFacts are what the one name rule reads of a process: Name (its
// FullName), Comm (the kernel command name, cut at MaxComm bytes), Exe
// (the executable path, "" when unreadable) and Argv0 (argv[0] as the
// process set it, "" when unread).
type NameFacts struct {
	Name, Comm, Exe, Argv0 string
}

// Matches is the one name-matching rule of inquest, used by tracking,
// recording, condition waits and the TUI: want (trimmed, compared under
// FoldBytes) names the process when it equals its FullName, the
// executable's base name, its comm, argv[0] or argv[0]'s base name, or,
// when comm has the kernel's full MaxComm bytes (it may have been cut),
// when want is longer and begins with comm. An empty want matches nothing.
func (f NameFacts) Matches(want string) bool {
	want = FoldBytes(strings.TrimSpace(want))
	if want == "" {
		return false
	}
	eq := func(s string) bool { return s != "" && FoldBytes(strings.TrimSpace(s)) == want }
	if eq(f.Name) || eq(f.Comm) || eq(BaseName(f.Exe)) || eq(f.Argv0) || eq(BaseName(f.Argv0)) {
		return true
	}
	if len(f.Comm) >= MaxComm && len(want) > len(f.Comm) {
		c := FoldBytes(f.Comm)
		return strings.HasPrefix(want, c)
	}
	return false
}

// Contains is the substring form of the same rule, used by name filters:
// sub (compared under FoldBytes) occurs in the FullName, the comm, the
// executable's base name or argv[0]'s base name.
func (f NameFacts) Contains(sub string) bool {
	if sub == "" {
		return true
	}
	for _, s := range [...]string{f.Name, f.Comm, BaseName(f.Exe), BaseName(f.Argv0)} {
		if s != "" && ContainsFold(s, sub) {
			return true
		}
	}
	return false
}
