package workspace_test

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
	"github.com/hermesd/hermesd/tools/workspace"
)

// env is a tools.Env bound to one session, as the tool actor builds it.
type env struct{ s messages.Session }

func (e env) Session() messages.Session { return e.s }
func (env) SenderID() string            { return "" }
func (env) Speak(context.Context, string, string) (time.Duration, error) {
	return 0, errors.New("no speech")
}
func (env) Delegate(context.Context, string) (string, error) { return "", errors.New("no delegate") }
func (env) Background(tools.Background, string) error        { return errors.New("no background") }
func (env) JobsChanged()                                     {}

func bound(t *testing.T, key string) env {
	t.Helper()
	s, err := messages.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return env{s}
}

type kit struct {
	base  string
	ws    *workspace.Workspaces
	tools map[string]tools.Tool
}

func newKit(t *testing.T) *kit {
	base := filepath.Join(t.TempDir(), "workspaces")
	k := &kit{base: base, ws: workspace.New(base), tools: map[string]tools.Tool{}}
	for _, tl := range k.ws.Tools() {
		k.tools[tl.Name] = tl
	}
	return k
}

func (k *kit) call(e env, name string, args map[string]any) (string, error) {
	b, _ := json.Marshal(args)
	return k.tools[name].Run(context.Background(), e, b)
}

func (k *kit) must(t *testing.T, e env, name string, args map[string]any) string {
	t.Helper()
	out, err := k.call(e, name, args)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

func TestWorkspace_WriteReadEditList(t *testing.T) {
	k := newKit(t)
	alice := bound(t, "telegram:dm:1")
	k.must(t, alice, "write_file", map[string]any{"path": "notes/todo.md", "content": "- buy milk\n- call mum\n- buy milk\n"})
	if got := k.must(t, alice, "read_file", map[string]any{"path": "notes/todo.md"}); got != "- buy milk\n- call mum\n- buy milk\n" {
		t.Fatalf("read = %q", got)
	}
	if _, err := k.call(alice, "edit_file", map[string]any{"path": "notes/todo.md", "old_string": "buy milk", "new_string": "buy oat milk"}); err == nil || !strings.Contains(err.Error(), "occurs 2 times") {
		t.Fatalf("ambiguous edit: %v", err)
	}
	if _, err := k.call(alice, "edit_file", map[string]any{"path": "notes/todo.md", "old_string": "walk dog", "new_string": "x"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing edit: %v", err)
	}
	k.must(t, alice, "edit_file", map[string]any{"path": "notes/todo.md", "old_string": "- call mum\n", "new_string": "- call dad\n"})
	k.must(t, alice, "edit_file", map[string]any{"path": "notes/todo.md", "old_string": "milk", "new_string": "bread", "replace_all": true})
	if got := k.must(t, alice, "read_file", map[string]any{"path": "./notes//todo.md"}); got != "- buy bread\n- call dad\n- buy bread\n" {
		t.Fatalf("after edits = %q", got)
	}
	list := k.must(t, alice, "list_files", map[string]any{})
	if !strings.Contains(list, "notes/") || !strings.Contains(list, "notes/todo.md (35 bytes)") {
		t.Fatalf("list = %q", list)
	}
	// It is on disk where the docs say.
	if _, err := os.Stat(filepath.Join(k.base, "telegram:dm:1", "notes", "todo.md")); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspace_ChatsAreApart: the directory comes from the binding; an
// argument naming another session is ignored.
func TestWorkspace_ChatsAreApart(t *testing.T) {
	k := newKit(t)
	alice, bob := bound(t, "telegram:dm:1"), bound(t, "discord:group:9:u2")
	k.must(t, alice, "write_file", map[string]any{"path": "secret.txt", "content": "alice's"})
	if _, err := k.call(bob, "read_file", map[string]any{"path": "secret.txt", "session": "telegram:dm:1"}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("bob read alice's file: %v", err)
	}
	if got := k.must(t, bob, "list_files", map[string]any{"session": "telegram:dm:1"}); got != "(the workspace is empty)" {
		t.Fatalf("bob's list = %q", got)
	}
	if _, err := k.call(bob, "read_file", map[string]any{"path": "../telegram:dm:1/secret.txt"}); err == nil {
		t.Fatal("bob reached alice's workspace with ..")
	}
	if _, err := k.call(env{}, "list_files", nil); err == nil {
		t.Fatal("unbound call was served")
	}
}

func TestWorkspace_EscapesAreRefused(t *testing.T) {
	k := newKit(t)
	e := bound(t, "web:dm:abc")
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	k.must(t, e, "write_file", map[string]any{"path": "inside.txt", "content": "fine"})
	dir := filepath.Join(k.base, "web:dm:abc")
	// Symlinks a model could not create but a past command (or an operator
	// mistake) might have left: one to a file outside, one to a directory
	// outside, one to the parent, and one that stays inside (allowed).
	for name, target := range map[string]string{
		"to-file":   outside,
		"to-dir":    filepath.Dir(outside),
		"to-parent": "..",
		"ok-link":   "inside.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "../../../../etc/passwd"}},
		{"read_file", map[string]any{"path": "/etc/passwd"}},
		{"read_file", map[string]any{"path": "a/../../x"}},
		{"read_file", map[string]any{"path": "to-file"}},
		{"read_file", map[string]any{"path": "to-dir/outside.txt"}},
		{"read_file", map[string]any{"path": "to-parent/web:dm:abc/inside.txt"}},
		{"write_file", map[string]any{"path": "to-file", "content": "pwned"}},
		{"write_file", map[string]any{"path": "to-dir/new.txt", "content": "pwned"}},
		{"write_file", map[string]any{"path": "../escape.txt", "content": "pwned"}},
		{"edit_file", map[string]any{"path": "to-file", "old_string": "host", "new_string": "pwned"}},
		{"list_files", map[string]any{"path": "to-dir"}},
		{"list_files", map[string]any{"path": ".."}},
		{"read_file", map[string]any{"path": "x\x00y"}},
	}
	for _, c := range cases {
		if out, err := k.call(e, c.tool, c.args); err == nil {
			t.Errorf("%s %v succeeded: %q", c.tool, c.args, out)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "host secret" {
		t.Fatalf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "new.txt")); err == nil {
		t.Fatal("a file was created outside the workspace")
	}
	if _, err := os.Stat(filepath.Join(k.base, "escape.txt")); err == nil {
		t.Fatal("a file was created beside the workspaces")
	}
	if got := k.must(t, e, "read_file", map[string]any{"path": "ok-link"}); got != "fine" {
		t.Fatalf("link inside the workspace: %q", got)
	}
}

func TestWorkspace_Limits(t *testing.T) {
	k := newKit(t)
	e := bound(t, "telegram:dm:5")
	big := strings.Repeat("a", workspace.MaxReadChars*3)
	k.must(t, e, "write_file", map[string]any{"path": "big.txt", "content": big})
	out := k.must(t, e, "read_file", map[string]any{"path": "big.txt"})
	if len(out) > workspace.MaxReadChars+100 || !strings.Contains(out, "truncated") {
		t.Fatalf("big read: %d bytes", len(out))
	}
	if _, err := k.call(e, "write_file", map[string]any{"path": "huge.txt", "content": strings.Repeat("b", workspace.MaxFileBytes+1)}); !errors.Is(err, tools.ErrBadArguments) {
		t.Fatalf("huge write: %v", err)
	}
	dir := filepath.Join(k.base, "telegram:dm:5")
	if err := os.WriteFile(filepath.Join(dir, "bin"), []byte{0x7f, 'E', 'L', 'F', 0, 0, 1}, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := k.call(e, "read_file", map[string]any{"path": "bin"}); err == nil || !strings.Contains(err.Error(), "not a text file") {
		t.Fatalf("binary read: %v", err)
	}
	if _, err := k.call(e, "read_file", map[string]any{"path": "."}); err == nil {
		t.Fatal("read of the directory itself succeeded")
	}
	if _, err := k.tools["read_file"].Run(context.Background(), e, json.RawMessage(`{"path":`)); !errors.Is(err, tools.ErrBadArguments) {
		t.Fatalf("broken JSON: %v", err)
	}
}

// FuzzWorkspacePaths: whatever path the model sends, a read never returns
// a file outside the workspace and a write never creates one.
func FuzzWorkspacePaths(f *testing.F) {
	for _, seed := range []string{"../outside.txt", "/etc/passwd", "a/../../outside.txt", "to-parent/outside.txt",
		"..", ".", "x\x00", "inside.txt", "./inside.txt", "sub/../../outside.txt", "to-parent/../outside.txt"} {
		f.Add(seed)
	}
	root := f.TempDir()
	base := filepath.Join(root, "workspaces")
	outside := filepath.Join(base, "outside.txt")
	if err := os.MkdirAll(filepath.Join(base, "web:dm:f"), 0o700); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("OUTSIDE-SECRET"), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(base, "web:dm:f", "to-parent")); err != nil {
		f.Fatal(err)
	}
	ws := workspace.New(base)
	ts := map[string]tools.Tool{}
	for _, tl := range ws.Tools() {
		ts[tl.Name] = tl
	}
	s, _ := messages.ParseKey("web:dm:f")
	e := env{s}
	f.Fuzz(func(t *testing.T, p string) {
		args, _ := json.Marshal(map[string]string{"path": p, "content": "FUZZ"})
		if out, err := ts["read_file"].Run(context.Background(), e, args); err == nil && strings.Contains(out, "OUTSIDE-SECRET") {
			t.Fatalf("read %q reached outside: %q", p, out)
		}
		_, _ = ts["write_file"].Run(context.Background(), e, args)
		if b, _ := os.ReadFile(outside); string(b) != "OUTSIDE-SECRET" {
			t.Fatalf("write %q changed a file outside", p)
		}
		entries, _ := os.ReadDir(base)
		for _, en := range entries {
			if en.Name() != "outside.txt" && en.Name() != "web:dm:f" {
				t.Fatalf("write %q created %s outside the workspace", p, en.Name())
			}
		}
		if entries, _ := os.ReadDir(root); len(entries) != 1 {
			t.Fatalf("write %q created something beside the workspaces", p)
		}
	})
}
