package terminal_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/terminal"
)

type env struct{ s messages.Session }

func (e env) Session() messages.Session { return e.s }
func (env) SenderID() string            { return "" }
func (env) Speak(context.Context, string, string) (time.Duration, error) {
	return 0, errors.New("no speech")
}
func (env) Delegate(context.Context, string) (string, error) { return "", errors.New("no") }
func (env) Background(tools.Background, string) error        { return errors.New("no") }
func (env) JobsChanged()                                     {}

func bound(t *testing.T, key string) env {
	s, err := messages.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return env{s}
}

type kit struct {
	home string
	tool tools.Tool
}

func newKit(t *testing.T, bwrap bool, mod ...func(*terminal.Options)) *kit {
	home := t.TempDir()
	o := terminal.Options{
		Dir:     func(key string) string { return filepath.Join(home, "workspaces", key) },
		Hide:    []string{home},
		Env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Timeout: 5 * time.Second,
		Allow:   []string{"ls", "git status", "echo"},
	}
	if bwrap {
		o.Bwrap = terminal.FindBwrap()
		if o.Bwrap == "" {
			t.Skip("bwrap is not installed (scripts/deps.sh test installs bubblewrap)")
		}
	}
	for _, m := range mod {
		m(&o)
	}
	return &kit{home: home, tool: terminal.Tool(o)}
}

func (k *kit) run(t *testing.T, e env, command string) (string, error) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"command": command})
	return k.tool.Run(context.Background(), e, b)
}

func TestAllowed(t *testing.T) {
	allow := []string{"ls", "git status", "echo"}
	cases := map[string]bool{
		"ls":                      true,
		"ls -la":                  true,
		"  git   status  -s ":     true,
		"git status":              true,
		"git statusx":             false,
		"git push":                false,
		"lsblk":                   false,
		"ls; rm -rf /":            false,
		"ls && rm x":              false,
		"ls | sh":                 false,
		"echo $(cat /etc/passwd)": false,
		"echo `id`":               false,
		"echo hi > f":             false,
		"ls\nrm x":                false,
		"ls *":                    false,
		"echo 'a;b'":              false,
		"rm -rf build":            false,
	}
	for cmd, want := range cases {
		if got := terminal.Allowed(allow, cmd); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", cmd, got, want)
		}
	}
	if terminal.Allowed(nil, "ls") {
		t.Error("empty allowlist allowed a command")
	}
}

func TestCode(t *testing.T) {
	cases := map[string]string{
		"rm -rf build":        "`rm -rf build`",
		"echo `id`":           "`` echo `id` ``",
		"a ``x`` b":           "``` a ``x`` b ```",
		"ls\nrm -rf /":        "\n```\nls\nrm -rf /\n```\n",
		"cat <<EOF\n```\nEOF": "\n````\ncat <<EOF\n```\nEOF\n````\n",
	}
	for in, want := range cases {
		if got := terminal.Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestApprove(t *testing.T) {
	k := newKit(t, false)
	if a, err := k.tool.Approve(json.RawMessage(`{"command":"ls -la"}`)); err != nil || a != nil {
		t.Fatalf("allowlisted: %+v, %v", a, err)
	}
	a, err := k.tool.Approve(json.RawMessage(`{"command":"rm -rf build"}`))
	if err != nil || a == nil || a.Prompt != "Run `rm -rf build`?" || a.Timeout != terminal.DefaultApprovalTimeout {
		t.Fatalf("needs approval: %+v, %v", a, err)
	}
	if _, err := k.tool.Approve(json.RawMessage(`{"command":""}`)); !errors.Is(err, tools.ErrBadArguments) {
		t.Fatalf("empty: %v", err)
	}
}

func TestRun_WorkspaceEnvTimeoutAndCap(t *testing.T) {
	t.Setenv("TELEGRAM_BOT_TOKEN", "must-not-leak")
	k := newKit(t, false, func(o *terminal.Options) { o.Timeout = 700 * time.Millisecond; o.MaxOutput = 1000 })
	e := bound(t, "telegram:dm:7")
	out, err := k.run(t, e, `echo made > made.txt; pwd; echo "token=[$TELEGRAM_BOT_TOKEN]"; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(k.home, "workspaces", "telegram:dm:7")
	if !strings.HasPrefix(out, "exit code 3") || !strings.Contains(out, dir) || !strings.Contains(out, "token=[]") {
		t.Fatalf("out = %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("file in workspace: %q, %v", b, err)
	}
	out, _ = k.run(t, e, `head -c 5000000 /dev/zero | tr '\0' x`)
	if len(out) > 1200 || !strings.Contains(out, "output truncated: 1000 of 5000000 bytes") {
		t.Fatalf("capped output: %d bytes: %.200q", len(out), out)
	}
	start := time.Now()
	out, _ = k.run(t, e, `sleep 30 & sleep 30; echo never`)
	if !strings.HasPrefix(out, "timed out after 700ms") || strings.Contains(out, "never") {
		t.Fatalf("timeout: %q", out)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if _, err := k.run(t, env{}, "ls"); err == nil {
		t.Fatal("unbound call ran")
	}
}

// TestRun_Sandbox: inside bwrap the command sees neither the daemon's home
// (database, other chats' workspaces) nor a writable system.
func TestRun_Sandbox(t *testing.T) {
	k := newKit(t, true)
	other := filepath.Join(k.home, "workspaces", "telegram:dm:1")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte("other chat"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(k.home, "hermesd.db"), []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := bound(t, "telegram:dm:2")
	out, err := k.run(t, e, `echo ok > mine.txt; cat mine.txt; cat `+other+`/secret.txt; cat `+k.home+`/hermesd.db; touch /usr/pwned; ls /tmp | wc -l`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ok") || strings.Contains(out, "other chat") || strings.Contains(out, "\ndb") {
		t.Fatalf("sandbox: %q", out)
	}
	if _, err := os.Stat("/usr/pwned"); err == nil {
		t.Fatal("the sandbox wrote to /usr")
	}
	if b, _ := os.ReadFile(filepath.Join(k.home, "workspaces", "telegram:dm:2", "mine.txt")); string(b) != "ok\n" {
		t.Fatalf("workspace file: %q", b)
	}
}
