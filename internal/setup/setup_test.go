package setup

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// testEnv is an Env rooted at a fresh home directory with the given
// environment variables (nothing else of the process environment).
func testEnv(t *testing.T, vars map[string]string) Env {
	t.Helper()
	home := t.TempDir()
	return Env{
		Getenv: func(k string) string { return vars[k] },
		Home:   home,
		Cwd:    home,
		GOOS:   "linux",
	}
}

var testLauncher = Launcher{Command: "/opt/inquest/bin/inquest", Args: []string{"mcp", "--toolsets", "proc,perf"}}

// fixtures are client configuration files as people leave them: comments,
// odd indentation, trailing commas, unrelated servers and settings.
var fixtures = map[string]string{
	"claude-code": `{
   "numStartups": 34,
   "theme": "dark",
   "projects": {
      "/home/u/src/app": {
         "mcpServers": {},
         "allowedTools": []
      }
   },
   "mcpServers": {
      "github": {
         "type": "stdio",
         "command": "npx",
         "args": ["-y", "@modelcontextprotocol/server-github"],
         "env": {"GITHUB_TOKEN": "x"}
      }
   },
   "oauthAccount": {"emailAddress": "u@example.com"}
}
`,
	"codex": `# Codex configuration
model = "gpt-5"   # the default model
approval_policy = "on-request"

[mcp_servers.docs]
# documentation server
command = "docs-mcp"
args = ["--stdio"]

  [mcp_servers.docs.env]
  DOCS_TOKEN = "abc"   # indented on purpose

[profiles.fast]
model = "gpt-5-mini"
`,
	"gemini": `// Gemini CLI user settings
{
	"theme": "Default",
	"selectedAuthType": "oauth-personal", // signed in with Google
	"mcpServers": {
		"bookmarks": {
			"command": "uv",
			"args": ["run", "bookmarks.py"], /* keep */
		},
	},
}
`,
	"opencode": `{
    "$schema": "https://opencode.ai/config.json",
    // servers
    "mcp": {
        "docs": {"type": "remote", "url": "https://docs.example.com/mcp"} // remote one
    },
    "theme": "tokyonight"
}
`,
	"cursor": `{"mcpServers": {"sqlite": {"command": "uvx", "args": ["mcp-server-sqlite"]}}}`,
	"claude-desktop": `{
  "globalShortcut": "",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/home/u/Documents"
      ]
    }
  }
}
`,
	"vscode": `{
	// Workspace-independent servers
	"inputs": [],
	"servers": {
		"playwright": {
			"type": "stdio",
			"command": "npx",
			"args": ["@playwright/mcp@latest"]
		}
	}
}
`,
}

func writeFixture(t *testing.T, c *Client, e Env, content string) string {
	t.Helper()
	path := c.Locate(e)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSetupFixtures: for every client, the diff is the golden one, applying
// it changes only the entry (removing the entry gives back the original
// bytes), a second setup changes nothing, and the mode is kept.
func TestSetupFixtures(t *testing.T) {
	for _, c := range Clients {
		t.Run(c.Name, func(t *testing.T) {
			e := testEnv(t, nil)
			orig := fixtures[c.Name]
			path := writeFixture(t, c, e, orig)
			ch, err := Plan(c, e, testLauncher)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Action != Add {
				t.Fatalf("action %s, want add", ch.Action)
			}
			diff := strings.ReplaceAll(ch.Diff(), e.Home, "$HOME")
			golden(t, filepath.Join("testdata", "diff", c.Name+".diff"), diff)

			backup, err := ch.Apply(filepath.Join(e.Home, "backups"), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(backup); string(b) != orig {
				t.Fatalf("backup %s does not hold the original", backup)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, ch.After) {
				t.Fatal("the file is not what was planned")
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
				t.Fatalf("mode %v, want 0640", st.Mode().Perm())
			}
			reg, err := Registered(c, e)
			if err != nil || reg == nil {
				t.Fatalf("registered: %v %v", reg, err)
			}
			want := append([]string{testLauncher.Command}, testLauncher.Args...)
			if strings.Join(reg.Argv, " ") != strings.Join(want, " ") {
				t.Fatalf("registered argv %q, want %q", reg.Argv, want)
			}

			again, err := Plan(c, e, testLauncher)
			if err != nil {
				t.Fatal(err)
			}
			if again.Action != Unchanged || again.Diff() != "" || !bytes.Equal(again.After, after) {
				t.Fatalf("second setup: %s\n%s", again.Action, again.Diff())
			}

			rm, err := PlanRemove(c, e)
			if err != nil {
				t.Fatal(err)
			}
			if rm.Action != Remove {
				t.Fatalf("remove action %s", rm.Action)
			}
			if _, err := rm.Apply(filepath.Join(e.Home, "backups"), time.Now()); err != nil {
				t.Fatal(err)
			}
			restored, _ := os.ReadFile(path)
			if string(restored) != orig {
				t.Fatalf("remove did not restore the original bytes:\n--- got\n%s\n--- want\n%s", restored, orig)
			}
			if rm2, err := PlanRemove(c, e); err != nil || rm2.Action != Absent {
				t.Fatalf("second remove: %v %v", rm2.Action, err)
			}
		})
	}
}

// TestSetupUpdatesOnlyOurKeys: an existing entry with another command
// keeps its other keys (env) and comments; only command/args change.
func TestSetupUpdatesOnlyOurKeys(t *testing.T) {
	cases := map[string]string{
		"cursor": `{
  "mcpServers": {
    // set up by hand
    "inquest": {
      "command": "/old/inquest",
      "args": ["mcp"],
      "env": {"INQUEST_DATA_DIR": "/data"} // keep this
    }
  }
}
`,
		"codex": `[mcp_servers.inquest]
command = "/old/inquest" # old path
args = ["mcp"]
startup_timeout_sec = 20

[mcp_servers.inquest.env]
INQUEST_DATA_DIR = "/data"
`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			c := Lookup(name)
			e := testEnv(t, nil)
			path := writeFixture(t, c, e, content)
			ch, err := Plan(c, e, Launcher{Command: "/new/inquest", Args: []string{"mcp"}})
			if err != nil {
				t.Fatal(err)
			}
			if ch.Action != Update {
				t.Fatalf("action %s", ch.Action)
			}
			golden(t, filepath.Join("testdata", "diff", "update-"+name+".diff"), strings.ReplaceAll(ch.Diff(), e.Home, "$HOME"))
			if _, err := ch.Apply(filepath.Join(e.Home, "b"), time.Now()); err != nil {
				t.Fatal(err)
			}
			reg, err := Registered(c, e)
			if err != nil {
				t.Fatal(err)
			}
			if reg.Argv[0] != "/new/inquest" || reg.Env["INQUEST_DATA_DIR"] != "/data" {
				t.Fatalf("after update: %+v", reg)
			}
			_ = path
		})
	}
}

// TestSetupNewFiles: a client whose file does not exist gets one with just
// the entry; removing it leaves an empty object.
func TestSetupNewFiles(t *testing.T) {
	for _, c := range Clients {
		t.Run(c.Name, func(t *testing.T) {
			e := testEnv(t, nil)
			ch, err := Plan(c, e, testLauncher)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Exists || ch.Action != Add {
				t.Fatalf("exists %v action %s", ch.Exists, ch.Action)
			}
			golden(t, filepath.Join("testdata", "new", c.Name+".txt"), string(ch.After))
			backup, err := ch.Apply(filepath.Join(e.Home, "b"), time.Now())
			if err != nil || backup != "" {
				t.Fatalf("apply: %q %v", backup, err)
			}
			if st, _ := os.Stat(ch.Target); st.Mode().Perm() != 0o600 {
				t.Fatalf("new file mode %v", st.Mode().Perm())
			}
			if again, _ := Plan(c, e, testLauncher); again.Action != Unchanged {
				t.Fatalf("second setup %s", again.Action)
			}
		})
	}
}

// TestSetupRefuses: invalid syntax, duplicate keys and entries defined in
// shapes setup cannot edit are refused with the file, line and reason, and
// the file is left untouched.
func TestSetupRefuses(t *testing.T) {
	cases := []struct {
		client, content string
		line            int
		reason          string
	}{
		{"cursor", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}\n", 4, "invalid character"},
		{"cursor", "{\n  \"mcpServers\": {},\n  \"mcpServers\": {\"x\": {}}\n}\n", 3, `duplicate key "mcpServers" (first at line 2)`},
		{"gemini", "{\n  \"mcpServers\": {\n    \"inquest\": {\"command\": \"a\"},\n    \"inquest\": {\"command\": \"b\"}\n  }\n}\n", 4, `duplicate key "inquest"`},
		{"claude-code", "{\"a\": 1,\n \"a\": 2}", 2, `duplicate key "a"`},
		{"vscode", "[1, 2]\n", 1, "not an object"},
		{"opencode", "{\n  \"mcp\": [],\n}\n", 2, `"mcp" is not an object`},
		{"claude-code", strings.Repeat("[", 1001) + strings.Repeat("]", 1001), 1, "nested more than 1000 levels"},
		{"codex", "model = \"a\"\nmodel = \"b\"\n", 2, "already"},
		{"codex", "[mcp_servers.docs]\ncommand = \n", 2, ""},
		{"codex", "mcp_servers.inquest.command = \"x\"\n", 1, "dotted keys or an inline table"},
		{"codex", "[mcp_servers]\ninquest = { command = \"x\" }\n", 2, "dotted keys or an inline table"},
		{"codex", "[mcp_servers.inquest]\ncommand = \"x\"\n[other]\na = 1\n[mcp_servers.inquest.env]\nA = \"b\"\n", 5, "split across the file"},
	}
	for i, tc := range cases {
		c := Lookup(tc.client)
		e := testEnv(t, nil)
		path := writeFixture(t, c, e, tc.content)
		for _, op := range []string{"setup", "remove"} {
			var err error
			if op == "setup" {
				_, err = Plan(c, e, testLauncher)
			} else {
				_, err = PlanRemove(c, e)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("case %d %s: error %v, want a ConfigError", i, op, err)
				continue
			}
			if ce.Path != path || ce.Line != tc.line || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("case %d %s: %v, want %s:%d: ...%s...", i, op, ce, path, tc.line, tc.reason)
			}
		}
		if b, _ := os.ReadFile(path); string(b) != tc.content {
			t.Errorf("case %d: file changed", i)
		}
	}
}

// TestLocate: the environment overrides of each client.
func TestLocate(t *testing.T) {
	home := "/home/u"
	cases := []struct {
		client string
		vars   map[string]string
		want   string
	}{
		{"claude-code", nil, "/home/u/.claude.json"},
		{"claude-code", map[string]string{"CLAUDE_CONFIG_DIR": "/cfg/claude"}, "/cfg/claude/.claude.json"},
		{"claude-code", map[string]string{"CLAUDE_CONFIG_DIR": "rel"}, "/work/rel/.claude.json"},
		{"codex", nil, "/home/u/.codex/config.toml"},
		{"codex", map[string]string{"CODEX_HOME": "/c"}, "/c/config.toml"},
		{"gemini", nil, "/home/u/.gemini/settings.json"},
		{"gemini", map[string]string{"GEMINI_CLI_HOME": "/g"}, "/g/.gemini/settings.json"},
		{"opencode", nil, "/home/u/.config/opencode/opencode.json"},
		{"opencode", map[string]string{"XDG_CONFIG_HOME": "/x"}, "/x/opencode/opencode.json"},
		{"opencode", map[string]string{"OPENCODE_CONFIG": "/o/my.json", "XDG_CONFIG_HOME": "/x"}, "/o/my.json"},
		{"opencode", map[string]string{"OPENCODE_CONFIG_DIR": "/od", "OPENCODE_CONFIG": "/o/my.json"}, "/od/opencode.json"},
		{"cursor", nil, "/home/u/.cursor/mcp.json"},
		{"claude-desktop", nil, "/home/u/.config/Claude/claude_desktop_config.json"},
		{"claude-desktop", map[string]string{"XDG_CONFIG_HOME": "/x"}, "/x/Claude/claude_desktop_config.json"},
		{"vscode", nil, "/home/u/.config/Code/User/mcp.json"},
		{"vscode", map[string]string{"~": ""}, "/home/u/.config/Code/User/mcp.json"},
	}
	for _, tc := range cases {
		e := Env{Getenv: func(k string) string { return tc.vars[k] }, Home: home, Cwd: "/work", GOOS: "linux"}
		if got := Lookup(tc.client).Locate(e); got != filepath.FromSlash(tc.want) {
			t.Errorf("%s %v: %s, want %s", tc.client, tc.vars, got, tc.want)
		}
	}
	mac := Env{Getenv: func(string) string { return "" }, Home: home, GOOS: "darwin"}
	if got := Lookup("vscode").Locate(mac); got != "/home/u/Library/Application Support/Code/User/mcp.json" {
		t.Errorf("vscode on macOS: %s", got)
	}
}

// TestOpenCodePrefersJSONC: in a directory an existing opencode.jsonc wins;
// the global directory also admits config.json.
func TestOpenCodePrefersJSONC(t *testing.T) {
	e := testEnv(t, nil)
	dir := filepath.Join(e.Home, ".config", "opencode")
	os.MkdirAll(dir, 0o755)
	c := Lookup("opencode")
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644)
	if got := c.Locate(e); got != filepath.Join(dir, "config.json") {
		t.Errorf("got %s", got)
	}
	os.WriteFile(filepath.Join(dir, "opencode.json"), []byte("{}"), 0o644)
	if got := c.Locate(e); got != filepath.Join(dir, "opencode.json") {
		t.Errorf("got %s", got)
	}
	os.WriteFile(filepath.Join(dir, "opencode.jsonc"), []byte("{}"), 0o644)
	if got := c.Locate(e); got != filepath.Join(dir, "opencode.jsonc") {
		t.Errorf("got %s", got)
	}
}

// TestApplyRefusesConcurrentEdit: a file edited between Plan and Apply is
// not overwritten.
func TestApplyRefusesConcurrentEdit(t *testing.T) {
	c := Lookup("cursor")
	e := testEnv(t, nil)
	path := writeFixture(t, c, e, fixtures["cursor"])
	ch, err := Plan(c, e, testLauncher)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o640)
	if _, err := ch.Apply(filepath.Join(e.Home, "b"), time.Now()); err == nil || !strings.Contains(err.Error(), "changed while setup was running") {
		t.Fatalf("apply: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"mcpServers": {}}` {
		t.Fatal("overwritten")
	}
}

// TestSymlinkedConfig: a configuration that is a symbolic link (dotfile
// managers) is edited at its target; the link stays.
func TestSymlinkedConfig(t *testing.T) {
	c := Lookup("gemini")
	e := testEnv(t, nil)
	real := filepath.Join(e.Home, "dotfiles", "settings.json")
	os.MkdirAll(filepath.Dir(real), 0o755)
	os.WriteFile(real, []byte(fixtures["gemini"]), 0o644)
	link := c.Locate(e)
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	ch, err := Plan(c, e, testLauncher)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Apply(filepath.Join(e.Home, "b"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(real); !bytes.Contains(b, []byte(`"inquest"`)) {
		t.Fatal("the target was not edited")
	}
}

// TestDanglingSymlinkedConfig: a configuration that is a symbolic link
// whose target does not exist yet (a dotfile manager's link to a file not
// made yet) gets its target created, 0600, and the link stays; a target
// in a directory that does not exist is refused and nothing is written.
func TestDanglingSymlinkedConfig(t *testing.T) {
	c := Lookup("cursor")
	for _, tc := range []struct {
		name    string
		makeDir bool
		rel     bool
	}{{"absolute", true, false}, {"relative", true, true}, {"no directory", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := testEnv(t, nil)
			real := filepath.Join(e.Home, "dotfiles", "mcp.json")
			if tc.makeDir {
				os.MkdirAll(filepath.Dir(real), 0o755)
			}
			link := c.Locate(e)
			os.MkdirAll(filepath.Dir(link), 0o755)
			to := real
			if tc.rel {
				r, err := filepath.Rel(filepath.Dir(link), real)
				if err != nil {
					t.Fatal(err)
				}
				to = r
			}
			if err := os.Symlink(to, link); err != nil {
				t.Skip(err)
			}
			ch, err := Plan(c, e, testLauncher)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Exists || ch.Target != real {
				t.Fatalf("plan: exists %v target %q, want %q", ch.Exists, ch.Target, real)
			}
			_, err = ch.Apply(filepath.Join(e.Home, "b"), time.Now())
			if fi, lerr := os.Lstat(link); lerr != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link was replaced (%v)", lerr)
			}
			if !tc.makeDir {
				if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), filepath.Dir(real)) {
					t.Fatalf("apply into a missing directory: %v", err)
				}
				if _, serr := os.Stat(filepath.Dir(real)); serr == nil {
					t.Fatal("the target's directory was created")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(real)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("target: %v %v", fi, err)
			}
			if b, _ := os.ReadFile(real); !bytes.Contains(b, []byte(`"inquest"`)) {
				t.Fatal("the target was not written")
			}
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestRoundTripShapes: setup then --remove gives back the original bytes
// for the layouts people write: no container, an empty one, one line,
// a comment after the last member, a closing brace on the last member's
// line, trailing commas, tabs; TOML without a final newline or empty.
func TestRoundTripShapes(t *testing.T) {
	jsonDocs := []string{
		``,
		"{}",
		"{}\n",
		"{\n  \"theme\": \"dark\"\n}\n",
		"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"} // a comment\n  }\n}\n",
		"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"}}\n}",
		"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"},\n  },\n}\n",
		"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"}, // trailing, commented\n  }\n}\n",
		"{\n\t\"mcpServers\": {\n\t\t\"a\": {\"command\": \"a\"}\n\t\t// closing remark\n\t}\n}\n",
		"{\"theme\": \"dark\", \"mcpServers\": {\"a\": {\"command\": \"a\"} }}",
		"/* head */ {\"x\": [1, 2, {\"y\": null}]} // tail\n",
		"{\n    \"mcpServers\": {\n        \"a\": {\"command\": \"a\"} ,\n        \"b\": {\"command\": \"b\"}\n    }\n}\n",
		"{\r\n  // CRLF\r\n  \"mcpServers\": {\r\n    \"a\": {\"command\": \"a\"}\r\n  }\r\n}\r\n",
	}
	for i, doc := range jsonDocs {
		roundTrip(t, fmt.Sprintf("json %d", i), Lookup("cursor"), doc, doc != "")
	}
	tomlDocs := []string{
		"",
		"model = \"a\"",
		"model = \"a\"\n",
		"model = \"a\"\n\n# end\n",
		"[mcp_servers.docs]\ncommand = \"d\"\n\n[mcp_servers.docs.env]\nA = \"1\"\n",
		"[profiles.x]\nmodel = \"b\"\n\n\n",
		"# CRLF\r\n[profiles.x]\r\nmodel = \"b\"\r\n",
	}
	for i, doc := range tomlDocs {
		exact := doc != "" && strings.HasSuffix(doc, "\n")
		roundTrip(t, fmt.Sprintf("toml %d", i), Lookup("codex"), doc, exact)
	}
}

func roundTrip(t *testing.T, name string, c *Client, doc string, exact bool) {
	t.Helper()
	e := testEnv(t, nil)
	path := writeFixture(t, c, e, doc)
	ch, err := Plan(c, e, testLauncher)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if _, err := ch.Apply(filepath.Join(e.Home, "b"), time.Now()); err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if again, err := Plan(c, e, testLauncher); err != nil || again.Action != Unchanged {
		t.Errorf("%s: second setup %v %v", name, again, err)
	}
	rm, err := PlanRemove(c, e)
	if err != nil {
		t.Errorf("%s: remove: %v", name, err)
		return
	}
	rm.Apply(filepath.Join(e.Home, "b"), time.Now())
	if strings.Contains(doc, "\r\n") && strings.Count(string(ch.After), "\n") != strings.Count(string(ch.After), "\r\n") {
		t.Errorf("%s: CRLF file got LF lines:\n%q", name, ch.After)
	}
	got, _ := os.ReadFile(path)
	if exact && string(got) != doc {
		t.Errorf("%s: after setup:\n%s\nremove gave\n%q\nwant\n%q", name, ch.After, got, doc)
	}
	if reg, err := Registered(c, e); reg != nil || err != nil {
		t.Errorf("%s: still registered after remove: %v %v", name, reg, err)
	}
}

// TestRemoveEntryNotLast: removing an entry followed by other servers
// keeps them and the comment on the line before it.
func TestRemoveEntryNotLast(t *testing.T) {
	c := Lookup("vscode")
	e := testEnv(t, nil)
	doc := "{\n  \"servers\": {\n    \"a\": {}, // about a\n    \"inquest\": {\"command\": \"/x\"},\n    \"b\": {}\n  }\n}\n"
	path := writeFixture(t, c, e, doc)
	rm, err := PlanRemove(c, e)
	if err != nil {
		t.Fatal(err)
	}
	rm.Apply(filepath.Join(e.Home, "b"), time.Now())
	got, _ := os.ReadFile(path)
	want := "{\n  \"servers\": {\n    \"a\": {}, // about a\n    \"b\": {}\n  }\n}\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
