// Package setup registers inquest as an MCP server in the configuration
// files of the user's coding agents (Claude Code, Codex, Gemini CLI,
// OpenCode, Cursor, Claude Desktop, VS Code), removes that registration,
// and checks it by starting the registered command line as the client
// would.
//
// Edits keep every unrelated byte: JSON and JSONC files are edited through
// github.com/tailscale/hujson (comments, key order and layout survive),
// Codex's config.toml by replacing the text of the one [mcp_servers.inquest]
// table after go-toml has parsed the whole document. Each edit is parsed
// again and compared with the original so that nothing but the inquest
// entry changes; files are replaced atomically.
package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ServerName is the name inquest is registered under in every client.
const ServerName = "inquest"

// Format is the syntax of a client configuration file.
type Format int

const (
	// JSON is JSON or JSONC (comments and trailing commas allowed).
	JSON Format = iota
	// TOML is TOML 1.0.
	TOML
)

// Env is where a client's configuration lives: the environment variables
// setup honours (CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME,
// OPENCODE_CONFIG_DIR, OPENCODE_CONFIG, XDG_CONFIG_HOME, APPDATA), the home
// directory, the working directory relative override paths are resolved
// against, and the operating system (runtime.GOOS values).
type Env struct {
	Getenv func(string) string
	Home   string
	Cwd    string
	GOOS   string
}

// OSEnv is the Env of this process.
func OSEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("no home directory: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return Env{}, err
	}
	return Env{Getenv: os.Getenv, Home: home, Cwd: cwd, GOOS: runtime.GOOS}, nil
}

// dir returns the non-empty value of the environment variable name as an
// absolute path (relative to e.Cwd), or "".
func (e Env) dir(name string) string {
	v := strings.TrimSpace(e.Getenv(name))
	if v == "" {
		return ""
	}
	if v == "~" || strings.HasPrefix(v, "~/") {
		v = filepath.Join(e.Home, strings.TrimPrefix(v, "~"))
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(e.Cwd, v)
	}
	return filepath.Clean(v)
}

// xdgConfig is $XDG_CONFIG_HOME, default ~/.config.
func (e Env) xdgConfig() string {
	if d := e.dir("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return filepath.Join(e.Home, ".config")
}

// appData is where Electron applications (Claude Desktop, VS Code) keep
// their per-user data: %APPDATA% on Windows, ~/Library/Application Support
// on macOS, $XDG_CONFIG_HOME elsewhere.
func (e Env) appData() string {
	switch e.GOOS {
	case "windows":
		if d := e.dir("APPDATA"); d != "" {
			return d
		}
		return filepath.Join(e.Home, "AppData", "Roaming")
	case "darwin":
		return filepath.Join(e.Home, "Library", "Application Support")
	}
	return e.xdgConfig()
}

// Launcher is the command line a client starts: the absolute path of the
// inquest executable and its arguments (mcp and its flags), or ssh and its
// arguments for a remote machine (RemoteLauncher).
type Launcher struct {
	// Name is the server entry's name; "" is ServerName.
	Name    string
	Command string
	Args    []string
}

func (l Launcher) serverName() string {
	if l.Name == "" {
		return ServerName
	}
	return l.Name
}

// Client is one MCP client whose user configuration setup edits.
type Client struct {
	// Name is the --client value: claude-code, codex, gemini, opencode,
	// cursor, claude-desktop, vscode.
	Name string
	// Title is the product name shown to people.
	Title string
	// Format is the configuration file's syntax.
	Format Format
	// Container is the key holding the servers: mcpServers, servers, mcp,
	// or mcp_servers (Codex's table).
	Container string
	// Optional clients are offered by the prompt only when detected.
	Optional bool
	// locate returns the configuration file and the file or directory whose
	// existence means the client is installed.
	locate func(Env) (file, marker string)
	// entry is what setup writes for launcher l.
	entry func(l Launcher) entryObject
	// commandLine reads the argv and extra environment from an entry.
	commandLine func(e map[string]any) ([]string, map[string]string, error)
}

// Clients lists every supported client, in prompt order.
var Clients = []*Client{
	{
		Name: "claude-code", Title: "Claude Code", Format: JSON, Container: "mcpServers",
		// The user-scope servers live in .claude.json in $CLAUDE_CONFIG_DIR,
		// else in the home directory.
		locate: func(e Env) (string, string) {
			if d := e.dir("CLAUDE_CONFIG_DIR"); d != "" {
				return filepath.Join(d, ".claude.json"), d
			}
			return filepath.Join(e.Home, ".claude.json"), filepath.Join(e.Home, ".claude")
		},
		entry: func(l Launcher) entryObject {
			return entryObject{{"type", "stdio"}, {"command", l.Command}, {"args", args(l)}}
		},
		commandLine: commandArgs("env"),
	},
	{
		Name: "codex", Title: "Codex", Format: TOML, Container: "mcp_servers",
		locate: func(e Env) (string, string) {
			d := e.dir("CODEX_HOME")
			if d == "" {
				d = filepath.Join(e.Home, ".codex")
			}
			return filepath.Join(d, "config.toml"), d
		},
		entry: func(l Launcher) entryObject {
			return entryObject{{"command", l.Command}, {"args", args(l)}}
		},
		commandLine: commandArgs("env"),
	},
	{
		Name: "gemini", Title: "Gemini CLI", Format: JSON, Container: "mcpServers",
		// Gemini CLI's home is $GEMINI_CLI_HOME, else the home directory;
		// its user settings are .gemini/settings.json there.
		locate: func(e Env) (string, string) {
			h := e.dir("GEMINI_CLI_HOME")
			if h == "" {
				h = e.Home
			}
			return filepath.Join(h, ".gemini", "settings.json"), filepath.Join(h, ".gemini")
		},
		entry: func(l Launcher) entryObject {
			return entryObject{{"command", l.Command}, {"args", args(l)}}
		},
		commandLine: commandArgs("env"),
	},
	{
		Name: "opencode", Title: "OpenCode", Format: JSON, Container: "mcp",
		locate: locateOpenCode,
		entry: func(l Launcher) entryObject {
			return entryObject{{"type", "local"}, {"command", append([]string{l.Command}, args(l)...)}, {"enabled", true}}
		},
		commandLine: func(e map[string]any) ([]string, map[string]string, error) {
			argv, ok := stringList(e["command"])
			if !ok || len(argv) == 0 {
				return nil, nil, fmt.Errorf(`"command" is not a non-empty array of strings`)
			}
			env, err := stringMap(e["environment"])
			return argv, env, err
		},
	},
	{
		Name: "cursor", Title: "Cursor", Format: JSON, Container: "mcpServers",
		locate: func(e Env) (string, string) {
			d := filepath.Join(e.Home, ".cursor")
			return filepath.Join(d, "mcp.json"), d
		},
		entry: func(l Launcher) entryObject {
			return entryObject{{"command", l.Command}, {"args", args(l)}}
		},
		commandLine: commandArgs("env"),
	},
	{
		Name: "claude-desktop", Title: "Claude Desktop", Format: JSON, Container: "mcpServers", Optional: true,
		locate: func(e Env) (string, string) {
			d := filepath.Join(e.appData(), "Claude")
			return filepath.Join(d, "claude_desktop_config.json"), d
		},
		entry: func(l Launcher) entryObject {
			return entryObject{{"command", l.Command}, {"args", args(l)}}
		},
		commandLine: commandArgs("env"),
	},
	{
		Name: "vscode", Title: "VS Code", Format: JSON, Container: "servers", Optional: true,
		locate: func(e Env) (string, string) {
			d := filepath.Join(e.appData(), "Code", "User")
			return filepath.Join(d, "mcp.json"), d
		},
		entry: func(l Launcher) entryObject {
			return entryObject{{"type", "stdio"}, {"command", l.Command}, {"args", args(l)}}
		},
		commandLine: commandArgs("env"),
	},
}

// Lookup returns the client named name, or nil.
func Lookup(name string) *Client {
	for _, c := range Clients {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Names lists the client names.
func Names() []string {
	var out []string
	for _, c := range Clients {
		out = append(out, c.Name)
	}
	return out
}

// locateOpenCode follows OPENCODE_CONFIG_DIR, then OPENCODE_CONFIG (a
// file), then $XDG_CONFIG_HOME/opencode. In a directory an existing
// opencode.jsonc wins over opencode.json; the global directory also admits
// config.json.
func locateOpenCode(e Env) (string, string) {
	pick := func(dir string, names ...string) string {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				return filepath.Join(dir, n)
			}
		}
		return filepath.Join(dir, "opencode.json")
	}
	if d := e.dir("OPENCODE_CONFIG_DIR"); d != "" {
		return pick(d, "opencode.jsonc", "opencode.json"), d
	}
	if f := e.dir("OPENCODE_CONFIG"); f != "" {
		return f, f
	}
	d := filepath.Join(e.xdgConfig(), "opencode")
	return pick(d, "opencode.jsonc", "opencode.json", "config.json"), d
}

// Locate returns the configuration file of c under e.
func (c *Client) Locate(e Env) string {
	f, _ := c.locate(e)
	return f
}

// Detected reports whether c looks installed under e: its configuration
// file or directory exists.
func (c *Client) Detected(e Env) bool {
	f, marker := c.locate(e)
	for _, p := range []string{f, marker} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// Entry returns the JSON text of the entry c gets for l (one line).
func (c *Client) Entry(l Launcher) string {
	b, _ := formatJSON(c.entry(l), "", "", false)
	return string(b)
}

func args(l Launcher) []string {
	if l.Args == nil {
		return []string{}
	}
	return l.Args
}

// commandArgs reads the common {command, args, env} entry shape.
func commandArgs(envKey string) func(map[string]any) ([]string, map[string]string, error) {
	return func(e map[string]any) ([]string, map[string]string, error) {
		cmd, ok := e["command"].(string)
		if !ok || cmd == "" {
			return nil, nil, fmt.Errorf(`"command" is not a non-empty string`)
		}
		argv := []string{cmd}
		if a, present := e["args"]; present {
			list, ok := stringList(a)
			if !ok {
				return nil, nil, fmt.Errorf(`"args" is not an array of strings`)
			}
			argv = append(argv, list...)
		}
		env, err := stringMap(e[envKey])
		return argv, env, err
	}
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

func stringMap(v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the environment is not an object")
	}
	out := map[string]string{}
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("environment variable %s is not a string", k)
		}
		out[k] = s
	}
	return out, nil
}
