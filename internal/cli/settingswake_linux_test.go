//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestInotifySettingsWaker checks that the inotify waker wakes the
// settings watch for each change it must apply: the config file created
// in a directory that did not exist when the host started, the file
// rewritten, the file removed, and the runtime directory removed.
func TestInotifySettingsWaker(t *testing.T) {
	cases := []struct {
		name     string
		existing bool // the config directory and file exist at start
		change   func(t *testing.T, cfg, runDir string)
	}{
		{"config directory and file created", false, func(t *testing.T, cfg, _ string) {
			if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
				t.Fatal(err)
			}
			// the directory's creation wakes the watch onto it; the file
			// follows in a second step, as config.Update does
		}},
		{"config file rewritten", true, func(t *testing.T, cfg, _ string) {
			if err := os.WriteFile(cfg, []byte("mcp_connections_disabled = true\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"config file renamed over", true, func(t *testing.T, cfg, _ string) {
			tmp := cfg + ".tmp"
			if err := os.WriteFile(tmp, []byte("mcp_connections_disabled = true\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, cfg); err != nil {
				t.Fatal(err)
			}
		}},
		{"config file removed", true, func(t *testing.T, cfg, _ string) {
			if err := os.Remove(cfg); err != nil {
				t.Fatal(err)
			}
		}},
		{"runtime directory removed", true, func(t *testing.T, _, runDir string) {
			if err := os.RemoveAll(runDir); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			cfg := filepath.Join(root, "config", "inquest", "inquest.toml")
			runDir := filepath.Join(root, "run", "inquest")
			if err := os.MkdirAll(runDir, 0o700); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(runDir, "host.lock")
			if err := os.WriteFile(lock, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if c.existing {
				if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cfg, []byte("# settings\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			w := newInotifyWaker(cfg, lock)
			if w == nil {
				t.Fatal("inotify waker not created")
			}
			defer w.Close()
			wait := func(what string) {
				t.Helper()
				select {
				case <-w.C():
					w.Changed()
				case <-time.After(10 * time.Second): // only to catch a hang
					t.Fatalf("no wake %s", what)
				}
			}
			wait("at start")
			c.change(t, cfg, runDir)
			wait("after the change")
			if !c.existing {
				// the watch has moved onto the new directory: the file's
				// creation there wakes it too
				if err := os.WriteFile(cfg, []byte("mcp_connections_disabled = true\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				wait("after the file was created")
			}
		})
	}
}
