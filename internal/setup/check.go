package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Registration is inquest's entry in one client's configuration: the
// command line the client starts (Argv[0] the executable) and the extra
// environment it sets.
type Registration struct {
	Client *Client
	// Name is the server entry's name: ServerName, or a remote machine's
	// inquest-HOST (or the name given to setup --name).
	Name string
	Path string
	Argv []string
	Env  map[string]string
}

// Remote reports whether the registration reaches inquest on another
// machine: its command is ssh.
func (r *Registration) Remote() bool { return isSSH(r.Argv[0]) }

// Registered reads c's configuration under e and returns its inquest
// entry, nil when there is none.
func Registered(c *Client, e Env) (*Registration, error) {
	return RegisteredNamed(c, e, ServerName)
}

// RegisteredNamed reads c's configuration under e and returns its server
// entry name, nil when there is none.
func RegisteredNamed(c *Client, e Env, name string) (*Registration, error) {
	path := c.Locate(e)
	_, doc, _, exists, err := readConfig(path)
	if err != nil || !exists {
		return nil, err
	}
	entry, err := registered(c, path, doc, name)
	if err != nil || entry == nil {
		return nil, err
	}
	argv, env, err := c.commandLine(entry)
	if err != nil {
		return nil, &ConfigError{Path: path, Reason: fmt.Sprintf("the %s entry: %v", name, err)}
	}
	return &Registration{Client: c, Name: name, Path: path, Argv: argv, Env: env}, nil
}

// RegisteredAll returns inquest's entry and every remote one (a server
// whose name starts with "inquest-" and whose command is ssh) in c's
// configuration under e, inquest's first, then by name.
func RegisteredAll(c *Client, e Env) ([]*Registration, error) {
	path := c.Locate(e)
	_, doc, _, exists, err := readConfig(path)
	if err != nil || !exists {
		return nil, err
	}
	names, err := serverNames(c, path, doc)
	if err != nil {
		return nil, err
	}
	var out []*Registration
	if r, err := RegisteredNamed(c, e, ServerName); err != nil || r != nil {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, ServerName+"-") {
			continue
		}
		r, err := RegisteredNamed(c, e, n)
		if err != nil {
			return nil, err
		}
		if r != nil && r.Remote() {
			out = append(out, r)
		}
	}
	return out, nil
}

// CheckResult is what Check found about one registration.
type CheckResult struct {
	// Server and Version are the initialize result's serverInfo.
	Server, Version string
	// Protocol is the negotiated protocol revision.
	Protocol string
	// Tools is the number of tools tools/list returned.
	Tools int
}

// Check verifies a registration: its executable exists, `EXE version
// --json` reports the same build as wantVersion (the JSON this inquest
// prints), and an MCP initialize + tools/list through the registered
// command line (started as the client starts it: the argv as is, this
// environment plus the entry's) succeeds, all within timeout. For a remote
// registration (ssh) the remote `inquest version` must run instead of
// matching this build; an ssh failure is an *SSHError that says why.
func Check(ctx context.Context, r *Registration, wantVersion []byte, timeout time.Duration) (CheckResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exe, err := exec.LookPath(r.Argv[0])
	if err != nil {
		return CheckResult{}, fmt.Errorf("the registered executable %s: %w", r.Argv[0], err)
	}
	env := os.Environ()
	for k, v := range r.Env {
		env = append(env, k+"="+v)
	}
	if r.Remote() {
		// The other machine may run another build: its version is
		// reported (serverInfo), not compared. A first ssh run of the
		// remote `inquest version` separates ssh's own failures (exit
		// status 255 and its stderr line) from MCP ones.
		sshPart, remote, ok := remoteCommand(r.Argv)
		if !ok {
			return CheckResult{}, fmt.Errorf("the registered ssh command line has no remote command after the destination")
		}
		probe := append(append(append([]string{exe}, sshPart[1:]...), remote[0]), "version")
		if _, err := runSSH(ctx, probe, timeout); err != nil {
			return CheckResult{}, err
		}
	} else if wantVersion != nil {
		cmd := exec.CommandContext(ctx, exe, "version", "--json")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			return CheckResult{}, fmt.Errorf("%s version --json: %w", exe, err)
		}
		var got, want map[string]any
		if json.Unmarshal(out, &got) != nil || json.Unmarshal(wantVersion, &want) != nil || !reflect.DeepEqual(got, want) {
			return CheckResult{}, fmt.Errorf("%s is another build: it reports %s, this inquest is %s", exe, bytes.TrimSpace(out), bytes.TrimSpace(wantVersion))
		}
	}
	cmd := exec.Command(exe, r.Argv[1:]...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "inquest-setup-check", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		return CheckResult{}, fmt.Errorf("MCP initialize: %w%s", deadline(ctx, err), tail(stderr.Bytes()))
	}
	defer cs.Close()
	res := CheckResult{Protocol: cs.InitializeResult().ProtocolVersion}
	if si := cs.InitializeResult().ServerInfo; si != nil {
		res.Server, res.Version = si.Name, si.Version
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("tools/list: %w%s", deadline(ctx, err), tail(stderr.Bytes()))
	}
	res.Tools = len(tools.Tools)
	if res.Tools == 0 {
		return res, fmt.Errorf("tools/list returned no tools")
	}
	return res, nil
}

func deadline(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out (%w)", err)
	}
	return err
}

// tail returns the last lines of a server's stderr for an error message.
func tail(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return "; server stderr: " + string(b)
}
