package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/config"
)

// TestExplainConfigErr: a malformed inquest.toml is reported with its path,
// the line and key at fault and the remedy, and is never rewritten.
func TestExplainConfigErr(t *testing.T) {
	cases := []struct {
		name, body string
		want       []string
	}{
		{"unknown key", "[settings]\nmcp_conections_disabled = true\n", []string{"line 2", `"settings.mcp_conections_disabled"`, "does not know"}},
		{"syntax", "[settings\nx=1\n", []string{"line 1", "close table name"}},
		{"wrong type", "[settings]\nmcp_connections_disabled = \"yes\"\n", []string{"line 2", `"settings.mcp_connections_disabled"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", dir)
			t.Setenv("INQUEST_CONFIG", "")
			p, err := config.Path()
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(p), 0o700)
			if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, uerr := config.Update(func(f *config.File) error { f.Settings.MCPConnectionsDisabled = false; return nil })
			msg := explainConfigErr(uerr).Error()
			for _, w := range append(tc.want, p, "never overwrites") {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q: %s", w, msg)
				}
			}
			if b, _ := os.ReadFile(p); string(b) != tc.body {
				t.Fatalf("the file was rewritten: %q", b)
			}
		})
	}
}
