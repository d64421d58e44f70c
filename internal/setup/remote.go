package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Remote is a machine whose inquest is reached over OpenSSH: ssh runs
// `inquest mcp` there and carries its stdin and stdout.
type Remote struct {
	// User is the login name ("" lets ssh choose: its configuration or
	// the local user name).
	User string
	// Host is the host name or address as given (an IPv6 address without
	// brackets).
	Host string
	// Port is the SSH port; 0 lets ssh choose (its configuration, else 22).
	Port int
	// Options are extra ssh -o options ("Key=value"), in order.
	Options []string
}

// RemoteError is a --remote, --name or --ssh-option value setup refuses.
type RemoteError struct {
	// Flag is the flag as typed: "--remote", "--name" or "--ssh-option".
	Flag, Value, Reason string
}

// Error is "--flag VALUE: reason".
func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Flag, e.Value, e.Reason)
}

// ParseRemote reads [USER@]HOST[:PORT]; an IPv6 address is written
// [ADDR] or [ADDR]:PORT, or bare without a port. A value that is empty,
// starts with '-' (ssh would read it as an option) or holds spaces or
// control characters is a *RemoteError.
func ParseRemote(s string) (Remote, error) {
	bad := func(why string) (Remote, error) {
		return Remote{}, &RemoteError{Flag: "--remote", Value: s, Reason: why}
	}
	var r Remote
	rest := s
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		r.User, rest = rest[:i], rest[i+1:]
		if r.User == "" {
			return bad("the user name before @ is empty")
		}
	}
	port := ""
	switch {
	case strings.HasPrefix(rest, "["):
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return bad("an IPv6 address opened with [ is not closed with ]")
		}
		r.Host, port = rest[1:end], rest[end+1:]
		if port != "" {
			if !strings.HasPrefix(port, ":") {
				return bad("after ] only :PORT may follow")
			}
			port = port[1:]
		}
	case strings.Count(rest, ":") == 1:
		r.Host, port, _ = strings.Cut(rest, ":")
	default:
		r.Host = rest
	}
	if r.Host == "" {
		return bad("the host is empty; give [USER@]HOST[:PORT]")
	}
	if strings.HasPrefix(r.Host, "-") || strings.HasPrefix(r.User, "-") {
		return bad("a host or user may not start with '-'")
	}
	for _, c := range r.User + r.Host {
		if c <= ' ' || c == 0x7f || strings.ContainsRune(`'"\$;&|<>()*?[]{}`+"`", c) {
			return bad(fmt.Sprintf("%q is not allowed in a user or host name", c))
		}
	}
	if port != "" || strings.HasSuffix(rest, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad(fmt.Sprintf("port %q is not a number from 1 to 65535", port))
		}
		r.Port = n
	}
	return r, nil
}

// CheckOption validates an --ssh-option value: Key=value (or "Key value")
// as ssh -o takes it.
func CheckOption(o string) error {
	k, _, ok := strings.Cut(strings.Replace(o, " ", "=", 1), "=")
	if !ok || k == "" || strings.HasPrefix(o, "-") || strings.ContainsAny(o, "\n\r\x00") {
		return &RemoteError{Flag: "--ssh-option", Value: o, Reason: "give one ssh option as Key=value, e.g. IdentityFile=~/.ssh/id_ed25519"}
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return &RemoteError{Flag: "--ssh-option", Value: o, Reason: fmt.Sprintf("%q is not an ssh option name (letters and digits only)", k)}
		}
	}
	return nil
}

// Destination is [USER@]HOST as ssh takes it.
func (r Remote) Destination() string {
	if r.User != "" {
		return r.User + "@" + r.Host
	}
	return r.Host
}

// DefaultName is the server name setup registers r under: "inquest-" and
// the host with every character other than letters, digits, '-' and '_'
// turned into '-' (clients accept only those in server names), so
// db1.example.com is inquest-db1-example-com.
func (r Remote) DefaultName() string {
	var b strings.Builder
	b.WriteString(ServerName + "-")
	for _, c := range r.Host {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// CheckName validates a --name value: 1 to 64 letters, digits, '-' and
// '_' (what every supported client accepts as a server name).
func CheckName(n string) error {
	if n == "" || len(n) > 64 {
		return &RemoteError{Flag: "--name", Value: n, Reason: "give 1 to 64 characters"}
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return &RemoteError{Flag: "--name", Value: n, Reason: fmt.Sprintf("%q is not allowed: server names take letters, digits, '-' and '_'", c)}
		}
	}
	return nil
}

// ConnectTimeout is the ssh ConnectTimeout (seconds) of every remote
// registration: an unreachable machine fails the client's start in that
// time instead of at the client's own (often much longer) timeout.
const ConnectTimeout = 10

// ServerAliveInterval is the ssh ServerAliveInterval (seconds): a
// connection whose machine went away ends after three unanswered probes
// instead of hanging the client.
const ServerAliveInterval = 30

// SSHArgs returns ssh's arguments before the remote command: -T (no
// terminal: stdout carries only MCP), BatchMode=yes (never a prompt: a
// host key or login that needs one fails at once), ConnectTimeout,
// ServerAliveInterval, the port, and the destination. The extra options
// come right after -T: ssh keeps the first value it reads of an option,
// so they override these defaults.
func (r Remote) SSHArgs() []string {
	a := []string{"-T"}
	for _, o := range r.Options {
		a = append(a, "-o", o)
	}
	a = append(a, "-o", "BatchMode=yes", "-o", fmt.Sprintf("ConnectTimeout=%d", ConnectTimeout), "-o", fmt.Sprintf("ServerAliveInterval=%d", ServerAliveInterval))
	if r.Port != 0 {
		a = append(a, "-p", strconv.Itoa(r.Port))
	}
	return append(a, r.Destination())
}

// Launcher returns the registration of inquest at remotePath on r: the
// command ssh (found on PATH when setup runs, so that a client with a
// short PATH finds the same one) with SSHArgs, then the remote command
// line remotePath and args, each word quoted for the remote shell.
func (r Remote) Launcher(name, remotePath string, args []string) Launcher {
	ssh := "ssh"
	if p, err := exec.LookPath("ssh"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			ssh = abs
		}
	}
	a := r.SSHArgs()
	a = append(a, shellQuote(remotePath))
	for _, x := range args {
		a = append(a, shellQuote(x))
	}
	if name == "" {
		name = r.DefaultName()
	}
	return Launcher{Name: name, Command: ssh, Args: a}
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and / . _ - , = : @ +.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-,=:@+", c)) {
			safe = false
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// discoverScript prints the remote inquest's path: the one on PATH, else
// the first executable of the places `go install` and user installs put
// it; exit status 127 when there is none. It runs under sh so that a
// remote login shell of another family (fish, csh) reads it the same.
const discoverScript = `sh -c 'command -v inquest || for p in "$HOME/.local/bin/inquest" "$HOME/go/bin/inquest" /usr/local/bin/inquest; do if [ -x "$p" ]; then echo "$p"; exit 0; fi; done; exit 127'`

// SearchedPaths describes where Discover looks, for messages and docs.
const SearchedPaths = "PATH of a non-login ssh session, ~/.local/bin, ~/go/bin, /usr/local/bin"

// Discover finds inquest's absolute path on r by running discoverScript
// over ssh within timeout. Failures are *SSHError.
func (r Remote) Discover(ctx context.Context, timeout time.Duration) (string, error) {
	argv := append([]string{"ssh"}, r.SSHArgs()...)
	argv = append(argv, discoverScript)
	out, err := runSSH(ctx, argv, timeout)
	if err != nil {
		var se *SSHError
		if errors.As(err, &se) && se.Status == 127 {
			se.Reason = fmt.Sprintf("no inquest executable on %s (looked in the %s); install it there (go install github.com/inquest-dev/inquest/cmd/inquest@latest) or name it with --remote-path", r.Host, SearchedPaths)
		}
		return "", err
	}
	path := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(path, '\n'); i >= 0 {
		path = path[i+1:]
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("the inquest found on %s is not an absolute path (%q: an alias or a function?); name the executable with --remote-path", r.Host, path)
	}
	return path, nil
}

// SSHError is a failed ssh command: the command line, its exit status
// (255: ssh itself failed; another value: the remote command's; -1: ssh
// was ended at the time limit or could not start), the last
// line ssh or the remote command wrote to stderr, and what that means in
// a person's words.
type SSHError struct {
	Argv   []string
	Status int
	Stderr string
	Reason string
}

// Error is "REASON (ssh exited with status N: STDERR LINE; command: ARGV)".
func (e *SSHError) Error() string {
	var b strings.Builder
	b.WriteString(e.Reason)
	b.WriteString(" (")
	if e.Status >= 0 {
		fmt.Fprintf(&b, "exit status %d", e.Status)
		if e.Stderr != "" {
			fmt.Fprintf(&b, ": %q", e.Stderr)
		}
		b.WriteString("; ")
	} else if e.Stderr != "" {
		fmt.Fprintf(&b, "stderr: %q; ", e.Stderr)
	}
	fmt.Fprintf(&b, "command: %s)", shellJoin(e.Argv))
	return b.String()
}

// runSSH runs argv (ssh ...) with no stdin and returns its stdout; a
// failure is an *SSHError explained by explainSSH.
func runSSH(ctx context.Context, argv []string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second // a remote child holding stderr open must not hang us
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	status := -1
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
	} else {
		return nil, &SSHError{Argv: argv, Status: -1, Reason: fmt.Sprintf("cannot run ssh: %v; install the OpenSSH client (Debian: openssh-client)", err)}
	}
	line := lastLine(stderr.Bytes())
	if ctx.Err() != nil {
		return nil, &SSHError{Argv: argv, Status: status, Stderr: line, Reason: fmt.Sprintf("ssh did not finish within %v", timeout)}
	}
	return nil, &SSHError{Argv: argv, Status: status, Stderr: line, Reason: explainSSH(status, line)}
}

// lastLine returns the last non-empty stderr line that is not one of
// ssh's informational warnings.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "Warning: Permanently added") {
			return l
		}
	}
	return ""
}

// explainSSH says in a person's words what ssh's exit status and last
// stderr line mean.
func explainSSH(status int, line string) string {
	has := func(s string) bool { return strings.Contains(line, s) }
	switch {
	case status == 255 && has("Host key verification failed"):
		return "the machine's host key is not in known_hosts, or it changed, and BatchMode=yes cannot ask: connect once by hand with ssh to check and accept it"
	case status == 255 && (has("REMOTE HOST IDENTIFICATION HAS CHANGED") || has("host key for") && has("has changed")):
		return "the machine's host key changed since it was recorded in known_hosts: check why before you remove the old key (ssh-keygen -R HOST)"
	case status == 255 && has("Permission denied"):
		return "the machine refused the login: BatchMode=yes allows no password prompt, so a key (or ssh-agent) it accepts is needed; install your public key there (ssh-copy-id) or name the key with --ssh-option IdentityFile=PATH"
	case status == 255 && has("Connection refused"):
		return "nothing accepts SSH connections at that address and port (is sshd running, is the port right?)"
	case status == 255 && (has("timed out") || has("Operation timed out")):
		return "the machine did not answer within the connect timeout (down, or a firewall drops the packets)"
	case status == 255 && (has("Could not resolve hostname") || has("Name or service not known")):
		return "the host name does not resolve"
	case status == 255 && (has("No route to host") || has("Network is unreachable")):
		return "the machine is unreachable from here (no route)"
	case status == 255 && has("Connection closed"), status == 255 && has("Connection reset"):
		return "the machine closed the SSH connection before login finished"
	case status == 255:
		return "ssh failed before the remote command ran"
	case status == 127:
		return "the remote inquest executable does not exist at that path on the machine; install it there, or run setup --remote again without --remote-path to find it"
	case status == 126:
		return "the remote inquest exists but cannot be executed (permissions, or built for another system)"
	}
	return "the remote command failed"
}

// isSSH reports whether argv0 names ssh.
func isSSH(argv0 string) bool {
	b := filepath.Base(argv0)
	return b == "ssh" || b == "ssh.exe"
}

// remoteCommand returns the part of an ssh argv after the destination
// (the remote command words) and the argv up to and including the
// destination; ok is false when argv does not look like ssh [opts] DEST
// CMD...
func remoteCommand(argv []string) (sshPart, remote []string, ok bool) {
	i := 1
	for i < len(argv) {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		// options that take a value as the next word
		if len(a) == 2 && strings.ContainsRune("BbcDEeFIiJLlmOoPpRSWw", rune(a[1])) {
			i += 2
			continue
		}
		i++
	}
	if i >= len(argv)-1 {
		return nil, nil, false
	}
	return argv[:i+1], argv[i+1:], true
}

// shellJoin quotes argv for display.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}
