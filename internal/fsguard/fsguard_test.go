//go:build unix

package fsguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func kindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	priv := mk("priv", 0o700)
	shared := mk("shared", 0o755)
	open := mk("open", 0o777)
	link := filepath.Join(base, "link")
	if err := os.Symlink(priv, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		name      string
		dir       string
		forbidden os.FileMode
		want      Kind
		reason    string
	}{
		{"private", priv, Private, 0, ""},
		{"0755 for a shared-writable check", shared, GroupOther, 0, ""},
		{"0755 for a private check", shared, Private, Unsafe, "must be 0700"},
		{"0777", open, GroupOther, Unsafe, "writable by group or others (mode 0777)"},
		{"symlink", link, GroupOther, Unsafe, "symbolic link"},
		{"file", file, GroupOther, Unsafe, "not a directory"},
		{"missing", filepath.Join(base, "nope"), GroupOther, Missing, "no such file"},
	}
	for _, tt := range tests {
		err := CheckDir(tt.dir, tt.forbidden)
		if kindOf(err) != tt.want || (tt.reason != "" && !strings.Contains(err.Error(), tt.reason)) {
			t.Errorf("%s: CheckDir = %v (kind %d), want kind %d with %q", tt.name, err, kindOf(err), tt.want, tt.reason)
		}
	}
	if os.Geteuid() == 0 {
		// Owned by another user: chown to nobody (root can).
		other := mk("other", 0o700)
		if err := os.Chown(other, 65534, 65534); err == nil {
			if err := CheckDir(other, GroupOther); kindOf(err) != Unsafe || !strings.Contains(err.Error(), "owned by uid 65534") {
				t.Errorf("another user's directory: %v", err)
			}
		}
	}
}

func TestMkdirCheckedCreates0700(t *testing.T) {
	d := filepath.Join(t.TempDir(), "a", "b")
	if err := MkdirChecked(d, Private); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, filepath.Dir(d)} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", p, fi.Mode(), err)
		}
	}
}

func TestCheckDestination(t *testing.T) {
	base := t.TempDir()
	exists := filepath.Join(base, "exists")
	os.Mkdir(exists, 0o700)
	dangling := filepath.Join(base, "dangling")
	os.Symlink(filepath.Join(base, "nowhere"), dangling)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		name string
		p    string
		want Kind
		why  string
	}{
		{"new", filepath.Join(base, "new"), 0, ""},
		{"NUL", filepath.Join(base, "a\x00b"), Syntax, "NUL"},
		{"relative", "rel/dir", Syntax, "absolute"},
		{"300-byte name", filepath.Join(base, strings.Repeat("n", 300)), Syntax, "300 bytes"},
		{"255-byte name", filepath.Join(base, strings.Repeat("n", 255)), 0, ""},
		{"too long", "/" + strings.Repeat("d/", 2100), Syntax, "longest path"},
		{"exists", exists, Exists, "already exists"},
		{"dangling symlink", dangling, Exists, "already exists"},
		{"no parent", filepath.Join(base, "no", "child"), Missing, "parent directory does not exist"},
		{"parent is a file", filepath.Join(file, "child"), Missing, "not a directory"},
	}
	for _, tt := range tests {
		err := CheckDestination(tt.p)
		if kindOf(err) != tt.want || (tt.why != "" && !strings.Contains(err.Error(), tt.why)) {
			t.Errorf("%s: CheckDestination = %v, want kind %d with %q", tt.name, err, tt.want, tt.why)
		}
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(base, "ro")
		os.Mkdir(ro, 0o500)
		err := CheckDestination(filepath.Join(ro, "x"))
		var e *Error
		if !errors.As(err, &e) || e.Kind != Denied || e.Cause != "EACCES" {
			t.Errorf("read-only parent: %v", err)
		}
	}
}
