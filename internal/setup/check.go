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
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Registration is inquest's entry in one client's configuration: the
// command line the client starts (Argv[0] the executable) and the extra
// environment it sets.
type Registration struct {
	Client *Client
	Path   string
	Argv   []string
	Env    map[string]string
}

// Registered reads c's configuration under e and returns its inquest
// entry, nil when there is none.
func Registered(c *Client, e Env) (*Registration, error) {
	path := c.Locate(e)
	_, doc, _, exists, err := readConfig(path)
	if err != nil || !exists {
		return nil, err
	}
	entry, err := registered(c, path, doc)
	if err != nil || entry == nil {
		return nil, err
	}
	argv, env, err := c.commandLine(entry)
	if err != nil {
		return nil, &ConfigError{Path: path, Reason: fmt.Sprintf("the %s entry: %v", ServerName, err)}
	}
	return &Registration{Client: c, Path: path, Argv: argv, Env: env}, nil
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
// environment plus the entry's) succeeds, all within timeout.
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
	if wantVersion != nil {
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
