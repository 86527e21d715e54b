// Package terminal holds the terminal tool: one shell command run in the
// calling conversation's workspace, with a timeout, an output cap and a
// scrubbed environment, inside bubblewrap (bwrap) when it is installed. A
// command needs the chat's approval unless it matches the operator's
// allowlist.
package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermesd/hermesd/tools"
)

// Defaults of the terminal tool.
const (
	DefaultTimeout         = 60 * time.Second
	DefaultMaxOutput       = 16 << 10
	DefaultApprovalTimeout = 5 * time.Minute
	// maxCommand bounds the command line the model may send.
	maxCommand = 4096
)

// Options configure the terminal tool.
type Options struct {
	// Dir returns the working directory of the conversation with this
	// session key (its workspace); it is created if missing.
	Dir func(key string) string
	// Hide are directories the command must not see inside the sandbox
	// (HERMES_HOME: the database and other chats' workspaces).
	Hide []string
	// Env is the command's whole environment (PATH, LANG …): never the
	// daemon's own, which holds tokens and keys.
	Env []string
	// Timeout bounds a command; MaxOutput the bytes of output kept.
	Timeout   time.Duration
	MaxOutput int
	// Allow lists commands that run without approval: an entry matches a
	// command equal to it or starting with it and a space ("git status"
	// matches "git status -s"), if the command has no shell operators.
	Allow []string
	// ApprovalTimeout is how long the chat has to answer.
	ApprovalTimeout time.Duration
	// Bwrap is the bubblewrap binary; empty runs the command without a
	// sandbox (only its directory and environment are confined).
	Bwrap string
	// Network lets a sandboxed command use the network.
	Network bool
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.ApprovalTimeout <= 0 {
		o.ApprovalTimeout = DefaultApprovalTimeout
	}
	return o
}

// FindBwrap returns the path of bwrap, or "" when it is not installed.
func FindBwrap() string {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return ""
	}
	return p
}

type args struct {
	Command string `json:"command"`
}

// Tool returns the terminal tool.
func Tool(o Options) tools.Tool {
	o = o.withDefaults()
	desc := "Run a shell command (bash) in this chat's workspace directory and return its exit code and output. " +
		"Commands may need the user's approval."
	if o.Bwrap != "" && !o.Network {
		desc += " The command runs in a sandbox without network access."
	}
	return tools.Tool{
		Name:        "terminal",
		Description: desc,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The command line to run."}},"required":["command"]}`),
		Approve: func(raw json.RawMessage) (*tools.Approval, error) {
			a, err := parse(raw)
			if err != nil {
				return nil, err
			}
			if Allowed(o.Allow, a.Command) {
				return nil, nil
			}
			return &tools.Approval{Prompt: "Run " + Code(a.Command) + "?", Timeout: o.ApprovalTimeout}, nil
		},
		Run: func(ctx context.Context, env tools.Env, raw json.RawMessage) (string, error) {
			a, err := parse(raw)
			if err != nil {
				return "", err
			}
			s := env.Session()
			if !s.Valid() {
				return "", errors.New("this call is not bound to a conversation")
			}
			dir := o.Dir(s.Key())
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return "", fmt.Errorf("terminal: workspace: %w", err)
			}
			return run(ctx, o, dir, a.Command)
		},
	}
}

func parse(raw json.RawMessage) (args, error) {
	var a args
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("%w: %v", tools.ErrBadArguments, err)
	}
	a.Command = strings.TrimSpace(a.Command)
	switch {
	case a.Command == "":
		return a, fmt.Errorf("%w: command is empty", tools.ErrBadArguments)
	case len(a.Command) > maxCommand:
		return a, fmt.Errorf("%w: command is longer than %d bytes", tools.ErrBadArguments, maxCommand)
	case strings.ContainsRune(a.Command, 0):
		return a, fmt.Errorf("%w: command contains NUL", tools.ErrBadArguments)
	}
	return a, nil
}

// shellOperators are what could chain, substitute or redirect past an
// allowlisted prefix.
const shellOperators = ";&|`$()<>\n\\*?[]{}~!#'\""

// Allowed reports whether command runs without approval under allow.
func Allowed(allow []string, command string) bool {
	command = strings.TrimSpace(command)
	if strings.ContainsAny(command, shellOperators) {
		return false
	}
	command = strings.Join(strings.Fields(command), " ")
	for _, a := range allow {
		a = strings.Join(strings.Fields(a), " ")
		if a != "" && (command == a || strings.HasPrefix(command, a+" ")) {
			return true
		}
	}
	return false
}

// run executes command in dir and formats its result.
func run(ctx context.Context, o Options, dir, command string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	argv := []string{"/bin/bash", "-c", command}
	if o.Bwrap != "" {
		argv = append(sandbox(o, dir), argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), o.Env...), "HOME="+dir, "PWD="+dir)
	cmd.Stdin = nil
	out := &capped{max: o.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a timeout kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(time.Millisecond)
	var b strings.Builder
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		fmt.Fprintf(&b, "timed out after %v (killed)\n", o.Timeout)
	case err != nil:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return "", fmt.Errorf("terminal: start: %w", err)
		}
		fmt.Fprintf(&b, "exit code %d (%v)\n", ee.ExitCode(), took)
	default:
		fmt.Fprintf(&b, "exit code 0 (%v)\n", took)
	}
	b.WriteString(out.String())
	return strings.TrimRight(b.String(), "\n"), nil
}

// sandbox is the bwrap prefix: the system read-only, a private /tmp, the
// daemon's home hidden, the workspace the only writable place, no network
// unless allowed, and the command dies with the daemon.
func sandbox(o Options, dir string) []string {
	argv := []string{o.Bwrap,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
	}
	for _, h := range o.Hide {
		argv = append(argv, "--tmpfs", filepath.Clean(h))
	}
	argv = append(argv, "--bind", dir, dir, "--chdir", dir,
		"--unshare-all", "--die-with-parent", "--new-session")
	if o.Network {
		argv = append(argv, "--share-net")
	}
	return argv
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	mu    sync.Mutex
	max   int
	buf   bytes.Buffer
	total int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += len(p)
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := strings.ToValidUTF8(c.buf.String(), "\uFFFD")
	if c.total > c.max {
		s += fmt.Sprintf("\n[… output truncated: %d of %d bytes shown]", c.max, c.total)
	}
	return s
}

// Code renders command as Markdown code that shows it exactly, whatever it
// contains: the user must see every character of what they approve. A
// backtick inside takes a longer delimiter; a multi-line command a fenced
// block.
func Code(command string) string {
	longest, run := 0, 0
	for _, r := range command {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if strings.Contains(command, "\n") {
		fence := strings.Repeat("`", max(3, longest+1))
		return "\n" + fence + "\n" + command + "\n" + fence + "\n"
	}
	delim := strings.Repeat("`", longest+1)
	if longest > 0 {
		return delim + " " + command + " " + delim
	}
	return delim + command + delim
}
