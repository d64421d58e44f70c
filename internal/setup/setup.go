package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pmezard/go-difflib/difflib"
)

// ConfigError is a client configuration setup refuses to edit: invalid
// syntax, a duplicate key, nesting beyond the limit, or an entry in a shape
// it cannot change without rewriting user text. Line and Column are
// 1-based; 0 when unknown.
type ConfigError struct {
	Path         string
	Line, Column int
	Reason       string
}

// Error is "path:line:column: reason" (line and column when known).
func (e *ConfigError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Column, e.Reason)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}

// Action is what a Change does to a file.
type Action string

const (
	// Add creates the entry (and the file when it does not exist).
	Add Action = "add"
	// Update changes keys of an existing entry.
	Update Action = "update"
	// Unchanged means the entry already is what setup would write.
	Unchanged Action = "unchanged"
	// Remove deletes the entry.
	Remove Action = "remove"
	// Absent means there is no entry to remove.
	Absent Action = "absent"
)

// Change is the planned edit of one client's configuration file: Before is
// the file as read (nil when it does not exist), After what setup would
// write.
type Change struct {
	Client *Client
	// Name is the server entry the change is about.
	Name string
	// Path is the configuration file as located; Target is the file
	// actually written (Path with symbolic links resolved).
	Path, Target  string
	Exists        bool
	Before, After []byte
	Action        Action
	mode          fs.FileMode
}

// maxLinks bounds the symbolic links resolveTarget follows (Linux's
// MAXSYMLINKS).
const maxLinks = 40

// resolveTarget follows path while it is a symbolic link, also when the
// last link dangles (its target does not exist yet), and returns the file
// the link chain names: path itself when it is not a link or does not
// exist. A link loop is a *ConfigError.
func resolveTarget(path string) (string, error) {
	p := path
	for i := 0; ; i++ {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if t, err := filepath.EvalSymlinks(p); err == nil {
				return t, nil
			}
			return p, nil
		}
		if i == maxLinks {
			return "", &ConfigError{Path: path, Reason: "too many levels of symbolic links"}
		}
		to, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(p), to)
		}
		p = to
	}
}

// readConfig reads the file at path, following symbolic links (a link
// whose target does not exist yet resolves to that target); a missing
// file is not an error.
func readConfig(path string) (target string, b []byte, mode fs.FileMode, exists bool, err error) {
	target, err = resolveTarget(path)
	if err != nil {
		return path, nil, 0, false, err
	}
	f, err := os.Open(target)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil, 0o600, false, nil
	}
	if err != nil {
		return target, nil, 0, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return target, nil, 0, false, err
	}
	if !st.Mode().IsRegular() {
		return target, nil, 0, false, &ConfigError{Path: path, Reason: "not a regular file"}
	}
	b, err = io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return target, nil, 0, false, err
	}
	if len(b) > maxConfigBytes {
		return target, nil, 0, false, &ConfigError{Path: path, Reason: fmt.Sprintf("larger than %d MiB", maxConfigBytes>>20)}
	}
	return target, b, st.Mode().Perm(), true, nil
}

// Plan computes the edit that registers launcher l in c's configuration
// under e, as the server l.Name (ServerName when empty). It reads the file
// and writes nothing. A file setup cannot edit unambiguously is a
// *ConfigError.
func Plan(c *Client, e Env, l Launcher) (*Change, error) {
	name := l.serverName()
	return plan(c, e, name, func(path string, doc []byte) (jsonEdit, error) {
		if c.Format == TOML {
			return upsertTOML(path, doc, []string{c.Container, name}, c.entry(l))
		}
		return upsertJSON(path, doc, c.Container, name, c.entry(l))
	}, true)
}

// PlanRemove computes the edit that removes inquest's entry from c's
// configuration under e, leaving everything else.
func PlanRemove(c *Client, e Env) (*Change, error) {
	return PlanRemoveNamed(c, e, ServerName)
}

// PlanRemoveNamed computes the edit that removes the server entry name
// (such as a remote machine's inquest-HOST) from c's configuration under
// e, leaving everything else.
func PlanRemoveNamed(c *Client, e Env, name string) (*Change, error) {
	return plan(c, e, name, func(path string, doc []byte) (jsonEdit, error) {
		if c.Format == TOML {
			return removeTOML(path, doc, []string{c.Container, name})
		}
		return removeJSON(path, doc, c.Container, name)
	}, false)
}

func plan(c *Client, e Env, name string, edit func(string, []byte) (jsonEdit, error), add bool) (*Change, error) {
	path := c.Locate(e)
	target, before, mode, exists, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	ch := &Change{Client: c, Name: name, Path: path, Target: target, Exists: exists, Before: before, mode: mode}
	if !exists && !add {
		ch.After, ch.Action = nil, Absent
		return ch, nil
	}
	var had map[string]any
	if exists {
		if had, err = registered(c, path, before, name); err != nil {
			return nil, err
		}
	}
	// A file with CRLF line ends is edited with LF ones and converted
	// back, so that the lines setup adds end like the others.
	in := before
	crlf := bytes.Contains(before, []byte("\r\n")) && bytes.Count(before, []byte("\n")) == bytes.Count(before, []byte("\r\n"))
	if crlf {
		in = bytes.ReplaceAll(before, []byte("\r\n"), []byte("\n"))
	}
	res, err := edit(path, in)
	if err != nil {
		return nil, err
	}
	if crlf {
		if res.changed {
			res.out = bytes.ReplaceAll(res.out, []byte("\n"), []byte("\r\n"))
		} else {
			res.out = before
		}
	}
	ch.After = res.out
	switch {
	case add && !res.changed:
		ch.Action = Unchanged
	case add && had != nil:
		ch.Action = Update
	case add:
		ch.Action = Add
	case res.changed:
		ch.Action = Remove
	default:
		ch.Action = Absent
	}
	return ch, nil
}

// registered returns the server entry name in doc, nil when there is none.
func registered(c *Client, path string, doc []byte, name string) (map[string]any, error) {
	if c.Format == TOML {
		return readTOMLEntry(path, doc, []string{c.Container, name})
	}
	return readJSONEntry(path, doc, c.Container, name)
}

// serverNames returns the names of every server entry in doc's container
// (any client's), sorted.
func serverNames(c *Client, path string, doc []byte) ([]string, error) {
	var m map[string]any
	var err error
	if c.Format == TOML {
		var all map[string]any
		if _, err = parseTOML(path, doc, []string{c.Container, ServerName}); err == nil {
			err = toml.Unmarshal(doc, &all)
			m, _ = all[c.Container].(map[string]any)
		}
	} else if _, err = parseJSONC(path, doc); err == nil {
		m, _ = decodeJSONC(doc)[c.Container].(map[string]any)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// Diff returns the change as a unified diff with three lines of context
// ("" when nothing changes).
func (ch *Change) Diff() string {
	if bytes.Equal(ch.Before, ch.After) && (ch.Exists || ch.After == nil) {
		return ""
	}
	from := ch.Path
	if !ch.Exists {
		from = "/dev/null"
	}
	d := difflib.UnifiedDiff{
		A:        splitLines(ch.Before),
		B:        splitLines(ch.After),
		FromFile: from,
		ToFile:   ch.Path,
		Context:  3,
	}
	s, err := difflib.GetUnifiedDiffString(d)
	if err != nil {
		return ""
	}
	return s
}

// splitLines splits b after each newline; a last line without one gets the
// diff(1) marker so that it does not run into the next line of the diff.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += "\n\\ No newline at end of file\n"
	return lines
}

// Apply writes the change: the original bytes are first copied to a backup
// file in backupDir (returned; "" when the file did not exist), then the new
// content replaces the file atomically (a temporary file in the same
// directory, fsync, rename, fsync of the directory) with the original
// permissions. A new file is created exclusively (it must not exist) with
// mode 0600; when the configuration is a symbolic link whose target does
// not exist, the target is created (never the link replaced) and its
// directory must already exist. When the file changed since Plan read it,
// nothing is written.
func (ch *Change) Apply(backupDir string, now time.Time) (backup string, err error) {
	if ch.Action == Unchanged || ch.Action == Absent {
		return "", nil
	}
	target, current, _, exists, err := readConfig(ch.Path)
	if err != nil {
		return "", err
	}
	if target != ch.Target || exists != ch.Exists || !bytes.Equal(current, ch.Before) {
		return "", fmt.Errorf("%s changed while setup was running; nothing was written, run setup again", ch.Path)
	}
	if ch.Exists {
		if err := os.MkdirAll(backupDir, 0o700); err != nil {
			return "", err
		}
		name := fmt.Sprintf("%s-%s-%s", ch.Client.Name, now.UTC().Format("20060102T150405.000000000Z"), filepath.Base(ch.Target))
		backup = filepath.Join(backupDir, name)
		if err := writeAtomic(backup, ch.Before, 0o600); err != nil {
			return "", fmt.Errorf("backup of %s: %w", ch.Path, err)
		}
		if err := writeAtomic(ch.Target, ch.After, ch.mode); err != nil {
			return backup, err
		}
		return backup, nil
	}
	dir := filepath.Dir(ch.Target)
	if ch.Target != ch.Path {
		// a dangling link: write at its target, in a directory the
		// user made (creating directories along a link is a guess)
		if _, err := os.Stat(dir); err != nil {
			return "", &ConfigError{Path: ch.Path, Reason: fmt.Sprintf("is a symbolic link to %s, whose directory %s does not exist (%v); create the directory or fix the link, nothing was written", ch.Target, dir, errors.Unwrap(err))}
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return "", writeNew(ch.Target, ch.After, ch.mode)
}

// writeNew creates path exclusively (O_EXCL: an existing file or link
// there is an error, nothing is replaced) with mode, writes b and syncs
// the file and its directory; a failed write removes the partial file.
func writeNew(path string, b []byte, mode fs.FileMode) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s appeared while setup was running; nothing was written, run setup again", path)
		}
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	if _, err = f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err = f.Chmod(mode); err != nil { // the umask narrowed OpenFile's mode
		f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// writeAtomic replaces path with b: a temporary file beside it is written,
// given mode, synced and renamed over path, then the directory is synced.
func writeAtomic(path string, b []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".inquest-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err = f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync() // best effort: not every system can sync a directory
		d.Close()
	}
	return nil
}
