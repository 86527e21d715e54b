package skills_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/skills"
)

func open(t *testing.T, dir string, opts ...skills.Option) *skills.Library {
	t.Helper()
	opts = append([]skills.Option{skills.WithPollInterval(10 * time.Millisecond), skills.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	lib, err := skills.Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lib.Close() })
	return lib
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func find(lib *skills.Library, name string) (skills.Skill, bool) {
	for _, s := range lib.List() {
		if s.Name == name {
			return s, true
		}
	}
	return skills.Skill{}, false
}

func TestLibrary_CreateWritesSkillFile(t *testing.T) {
	dir := t.TempDir()
	lib := open(t, dir)
	s, err := lib.Create("deploy-checklist", "Steps to deploy: the web app", "# Deploy\n\n1. Run the tests.\n2. Tag.\n")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "deploy-checklist", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "---\nname: deploy-checklist\ndescription: 'Steps to deploy: the web app'\n---\n\n# Deploy\n\n1. Run the tests.\n2. Tag.\n"
	if string(data) != want {
		t.Errorf("SKILL.md =\n%s\nwant\n%s", data, want)
	}
	if s.Size != int64(len(data)) || s.Description != "Steps to deploy: the web app" {
		t.Errorf("Create returned %+v", s)
	}
	// Listed at once, without waiting for a rescan.
	if got, ok := find(lib, "deploy-checklist"); !ok || got.Description != s.Description {
		t.Errorf("List after Create: %+v, %v", got, ok)
	}
	d, err := lib.Read("deploy-checklist")
	if err != nil || d.Body != "# Deploy\n\n1. Run the tests.\n2. Tag.\n" {
		t.Errorf("Read = %+v, %v", d, err)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Join(dir, "deploy-checklist"))
	if len(entries) != 1 {
		t.Errorf("skill directory holds %d files, want only SKILL.md", len(entries))
	}
	if _, err := lib.Create("deploy-checklist", "again", "x"); !errors.Is(err, skills.ErrExists) {
		t.Errorf("second Create: %v, want ErrExists", err)
	}
	if _, err := lib.Update("no-such-skill", "d", "x"); !errors.Is(err, skills.ErrNotFound) {
		t.Errorf("Update of a missing skill: %v, want ErrNotFound", err)
	}
}

// A person edits, adds and deletes skill files while the daemon runs; the
// index follows without a restart.
func TestLibrary_HotReload(t *testing.T) {
	dir := t.TempDir()
	lib := open(t, dir)
	if _, err := lib.Create("greet", "Say hello", "Say hello politely."); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "greet", "SKILL.md")
	if err := os.WriteFile(path, []byte("---\nname: greet\ndescription: Greet in French, edited by hand\n---\nDis bonjour.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hand edit to show in List", func() bool {
		s, _ := find(lib, "greet")
		return s.Description == "Greet in French, edited by hand"
	})
	if d, _ := lib.Read("greet"); d.Body != "Dis bonjour.\n" {
		t.Errorf("Read after the edit: body %q", d.Body)
	}

	// A skill written by hand, without front matter.
	if err := os.MkdirAll(filepath.Join(dir, "by-hand"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "by-hand", "SKILL.md"), []byte("# By hand\n\nUse this when the user asks for haiku.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new skill directory to be indexed", func() bool {
		s, ok := find(lib, "by-hand")
		return ok && s.Description == "Use this when the user asks for haiku."
	})

	if err := os.RemoveAll(filepath.Join(dir, "greet")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted skill to leave the index", func() bool { _, ok := find(lib, "greet"); return !ok })
	if _, err := lib.Read("greet"); !errors.Is(err, skills.ErrNotFound) {
		t.Errorf("Read of a deleted skill: %v, want ErrNotFound", err)
	}
}

// Without a polling goroutine, List rescans on every call.
func TestLibrary_ReloadOnDemand(t *testing.T) {
	dir := t.TempDir()
	lib := open(t, dir, skills.WithPollInterval(0))
	if err := os.MkdirAll(filepath.Join(dir, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x", "SKILL.md"), []byte("---\ndescription: on demand\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, ok := find(lib, "x"); !ok || s.Description != "on demand" {
		t.Errorf("List = %+v, want the new skill", lib.List())
	}
}

func TestLibrary_InvalidNames(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "skills")
	lib := open(t, dir)
	for _, name := range []string{"", "../escape", "a/b", "Deploy", "has space", ".hidden", "é", strings.Repeat("a", 65), "..", "x\x00"} {
		if _, err := lib.Create(name, "d", "body"); !errors.Is(err, skills.ErrInvalidName) {
			t.Errorf("Create(%q): %v, want ErrInvalidName", name, err)
		}
		if _, err := lib.Read(name); !errors.Is(err, skills.ErrInvalidName) {
			t.Errorf("Read(%q): %v, want ErrInvalidName", name, err)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("files appeared beside the skills directory: %v", entries)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("invalid names created %v", entries)
	}
	// Directories a person named wrongly are not indexed.
	if err := os.MkdirAll(filepath.Join(dir, "Bad Name"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "Bad Name", "SKILL.md"), []byte("x"), 0o644)
	if err := lib.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := lib.List(); len(got) != 0 {
		t.Errorf("List = %+v, want nothing", got)
	}
	for _, ok := range []string{"a", "deploy-v2", strings.Repeat("z", 64), "0"} {
		if !skills.ValidName(ok) {
			t.Errorf("ValidName(%q) = false", ok)
		}
	}
}

func TestLibrary_Limits(t *testing.T) {
	lib := open(t, t.TempDir())
	if _, err := lib.Create("big", "d", strings.Repeat("x", skills.MaxSize)); !errors.Is(err, skills.ErrTooLarge) {
		t.Errorf("oversized skill: %v, want ErrTooLarge", err)
	}
	if _, err := lib.Create("long", strings.Repeat("d", skills.MaxDescription+1), "x"); !errors.Is(err, skills.ErrTooLarge) {
		t.Errorf("oversized description: %v, want ErrTooLarge", err)
	}
	if _, ok := find(lib, "big"); ok {
		t.Error("a refused skill was indexed")
	}
}

func TestLibrary_BrokenFrontMatterIsSkipped(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "broken", "SKILL.md"), []byte("---\ndescription: [unclosed\n---\nbody\n"), 0o644)
	lib := open(t, dir)
	if _, ok := find(lib, "broken"); ok {
		t.Error("a skill with invalid front matter was indexed")
	}
	if _, err := lib.Read("broken"); err == nil || !strings.Contains(err.Error(), "front matter") {
		t.Errorf("Read: %v, want a front matter error", err)
	}
	// Fixing the file by hand brings it back.
	_ = os.WriteFile(filepath.Join(dir, "broken", "SKILL.md"), []byte("---\ndescription: fixed\n---\nbody\n"), 0o644)
	eventually(t, "the fixed skill to be indexed", func() bool { s, ok := find(lib, "broken"); return ok && s.Description == "fixed" })
}

func TestLibrary_Concurrent(t *testing.T) {
	lib := open(t, t.TempDir(), skills.WithPollInterval(time.Millisecond))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("skill-%d", w)
			if _, err := lib.Create(name, "v0", "body"); err != nil {
				t.Error(err)
				return
			}
			for i := range 20 {
				if _, err := lib.Update(name, fmt.Sprintf("v%d", i+1), strings.Repeat("b", i)); err != nil {
					t.Error(err)
				}
				if _, err := lib.Read(name); err != nil {
					t.Error(err)
				}
				_ = lib.List()
			}
		}()
	}
	wg.Wait()
	for w := range 4 {
		if s, ok := find(lib, fmt.Sprintf("skill-%d", w)); !ok || s.Description != "v20" {
			t.Errorf("skill-%d = %+v, %v; want its last update", w, s, ok)
		}
	}
}

func TestSplitFrontMatter(t *testing.T) {
	cases := []struct{ in, desc, body string }{
		{"no header\n", "", "no header\n"},
		{"---\nname: x\ndescription: hi\n---\nbody", "hi", "body"},
		{"\ufeff---\r\ndescription: crlf\r\n---\r\nbody\r\n", "crlf", "body\r\n"},
		{"---\ndescription: dots\n...\n\nbody", "dots", "body"},
		{"---\nnot closed", "", "---\nnot closed"},
		{"---\ndescription: >\n  folded\n  text\nversion: 2\n---\n", "folded text", ""},
	}
	for _, c := range cases {
		fm, body, err := skills.SplitFrontMatter(c.in)
		if err != nil || fm.Description != c.desc || body != c.body {
			t.Errorf("SplitFrontMatter(%q) = %q, %q, %v; want %q, %q", c.in, fm.Description, body, err, c.desc, c.body)
		}
	}
}
