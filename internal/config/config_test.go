package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUpdateRoundTripAndStrictDecode(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "sub", "inquest.toml"))
	f, err := Load()
	if err != nil || f.Settings.MCPConnectionsDisabled || len(f.Profiles) != 0 {
		t.Fatalf("missing file: %+v %v", f, err)
	}
	_, err = Update(func(f *File) error {
		f.Settings.MCPConnectionsDisabled = true
		f.Profiles = append(f.Profiles, Profile{Name: "web", Revision: 1, Tracking: []string{"nginx"}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err = Load()
	if err != nil || !f.Settings.MCPConnectionsDisabled || f.Profiles[0].Tracking[0] != "nginx" {
		t.Fatalf("reload: %+v %v", f, err)
	}
	p, _ := Path()
	if err := os.WriteFile(p, []byte("[settings]\nmcp_conections_disabled = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(); err == nil {
		t.Fatal("a misspelled key was accepted")
	}
	if _, err := Update(func(*File) error { return nil }); err == nil {
		t.Fatal("update over an unparsable file succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "[settings]\nmcp_conections_disabled = true\n" {
		t.Fatal("unparsable file was overwritten")
	}
}
