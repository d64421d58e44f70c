// Package config reads and writes inquest.toml, the user's persistent
// settings and investigation state: $XDG_CONFIG_HOME/inquest/inquest.toml
// (default ~/.config/inquest/inquest.toml; INQUEST_CONFIG overrides the
// whole path). Writes are atomic: temp file in the same directory, fsync,
// rename, directory fsync. A file that cannot be parsed is an error, never
// silently replaced.
package config

import (
	"io/fs"

	"bytes"
	"errors"
	"fmt"
	"github.com/inquest-dev/inquest/internal/fsguard"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/pelletier/go-toml/v2"
)

// File is the whole inquest.toml. Unknown keys are kept out of it: decoding
// is strict, so a typo is reported rather than ignored.
type File struct {
	// Settings are application settings (docs/tui.md, "Settings").
	Settings Settings `toml:"settings"`
	// Tracking is the working Tracking List of process names.
	Tracking []string `toml:"tracking,omitempty"`
	// ActiveProfile names the profile the working list was loaded from.
	ActiveProfile string `toml:"active_profile,omitempty"`
	// Profiles are saved Investigation Profiles.
	Profiles []Profile `toml:"profiles,omitempty"`
	// RecordingDirectory is where recordings go.
	RecordingDirectory string `toml:"recording_directory,omitempty"`
}

// Settings are application settings.
type Settings struct {
	// MCPConnectionsDisabled, when true, keeps the host from opening its
	// MCP listener, and a bridge from starting a host.
	MCPConnectionsDisabled bool `toml:"mcp_connections_disabled"`
	// OpenMetricsListen is the HOST:PORT the host's Prometheus exporter
	// (GET /metrics) listens on; "" (the default) keeps it off.
	OpenMetricsListen string `toml:"openmetrics_listen,omitempty"`
	// OpenMetricsAllowRemote lets OpenMetricsListen be an address other
	// than loopback; without it such an address leaves the exporter off.
	OpenMetricsAllowRemote bool `toml:"openmetrics_allow_remote,omitempty"`
	// CPUShareOfAllCores, when true, makes the TUI show CPU% as a share
	// of all cores (all cores = 100%) instead of htop's per-core scale
	// (one core = 100%). The TUI's Settings screen saves it.
	CPUShareOfAllCores bool `toml:"cpu_share_of_all_cores,omitempty"`
}

// Profile is a saved Investigation Profile. ID is stable across renames
// (profile_id in list_profiles); Revision counts its saved changes.
type Profile struct {
	ID       string   `toml:"id,omitempty"`
	Name     string   `toml:"name"`
	Revision uint64   `toml:"revision"`
	Tracking []string `toml:"tracking"`
}

// Path returns the configuration file path.
func Path() (string, error) {
	if p := os.Getenv("INQUEST_CONFIG"); p != "" {
		return p, nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no XDG_CONFIG_HOME and no home directory: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "inquest", "inquest.toml"), nil
}

// mu serializes read-modify-write cycles within this process.
var mu sync.Mutex

// Load reads the file at Path. A missing file is the zero File, not an error.
func Load() (File, error) {
	p, err := Path()
	if err != nil {
		return File{}, err
	}
	return LoadFrom(p)
}

// ReadError is a settings file that exists but cannot be read (no read
// permission, a directory in its place, an I/O error): nothing about its
// contents is known. Err is the system error (errors.Is sees it).
type ReadError struct {
	Path string
	Err  error
}

func (e *ReadError) Error() string {
	msg := e.Path + " is unreadable: "
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		msg += pe.Err.Error()
	} else {
		msg += e.Err.Error()
	}
	if n := fsguard.ErrnoName(e.Err); n != "" {
		msg += " (" + n + ")"
	}
	return msg
}

func (e *ReadError) Unwrap() error { return e.Err }

// LoadFrom reads the file at path (missing = zero File). A file that
// exists but cannot be read is a *ReadError; one that is not valid TOML
// or holds unknown keys is a decoding error naming path.
//
// The parsed file is cached per path, keyed by its stat (device, inode,
// size, mtime, ctime where the platform has them): a file unchanged
// since the last call is not read or parsed again (the TUI asks for the
// recording status every refresh). Any write to the file, including an
// in-place rewrite of the same size with its mtime restored, changes its
// ctime, so the next call reads it anew.
func LoadFrom(path string) (File, error) {
	var f File
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, &ReadError{Path: path, Err: err}
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return f, &ReadError{Path: path, Err: err}
	}
	key, keyed := statKey(fi)
	if keyed {
		cacheMu.Lock()
		e, hit := cache[path]
		cacheMu.Unlock()
		if hit && e.key == key {
			return e.f.clone(), nil
		}
	}
	b, err := io.ReadAll(fh)
	if err != nil {
		return f, &ReadError{Path: path, Err: err} // an *fs.PathError, as os.ReadFile's
	}
	parses.Add(1)
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	if keyed {
		cacheMu.Lock()
		cache[path] = cached{key: key, f: f.clone()}
		cacheMu.Unlock()
	}
	return f, nil
}

// fileKey is what of a file's stat shows a change: device, inode, size,
// mtime and ctime (ns).
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

type cached struct {
	key fileKey
	f   File
}

var (
	parses  atomic.Int64 // files decoded by LoadFrom (tests read it)
	cacheMu sync.Mutex
	cache   = map[string]cached{}
)

// clone copies f's slices, so a caller's changes do not reach the cache.
func (f File) clone() File {
	g := f
	g.Tracking = append([]string(nil), f.Tracking...)
	if f.Tracking == nil {
		g.Tracking = nil
	}
	if f.Profiles != nil {
		g.Profiles = make([]Profile, len(f.Profiles))
		for i, p := range f.Profiles {
			p.Tracking = append([]string(nil), p.Tracking...)
			if f.Profiles[i].Tracking == nil {
				p.Tracking = nil
			}
			g.Profiles[i] = p
		}
	}
	return g
}

// Update loads the file, applies fn and saves the result atomically, all
// under one process-wide lock. fn's error aborts without writing.
func Update(fn func(*File) error) (File, error) {
	mu.Lock()
	defer mu.Unlock()
	p, err := Path()
	if err != nil {
		return File{}, err
	}
	f, err := LoadFrom(p)
	if err != nil {
		return File{}, err
	}
	if err := fn(&f); err != nil {
		return File{}, err
	}
	return f, SaveTo(p, f)
}

// SaveTo writes f to path atomically.
func SaveTo(path string, f File) error {
	b, err := toml.Marshal(f)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".inquest.toml.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
