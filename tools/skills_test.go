package tools_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/skills"
	"github.com/hermesd/hermesd/tools"
)

func openLibrary(tb testing.TB, dir string) *skills.Library {
	tb.Helper()
	lib, err := skills.Open(dir, skills.WithPollInterval(10*time.Millisecond), skills.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = lib.Close() })
	return lib
}

type skillList struct {
	Skills []struct{ Name, Description string }
}

func TestSkills_CreateEditByHandView(t *testing.T) {
	dir := t.TempDir()
	lib := openLibrary(t, dir)
	sk := tools.Skills(lib)
	env := newEnv(keyA, "100")

	mustCall(t, sk, env, `{"action":"create","name":"release-notes","description":"How to write release notes",`+
		`"content":"# Release notes\n\nGroup changes by user impact."}`)
	data, err := os.ReadFile(filepath.Join(dir, "release-notes", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "---\nname: release-notes\ndescription: How to write release notes\n---\n\n# Release notes\n\nGroup changes by user impact.\n"; string(data) != want {
		t.Errorf("SKILL.md =\n%s\nwant\n%s", data, want)
	}

	// A person edits the file; the next list and view see it.
	edited := "---\nname: release-notes\ndescription: Release notes, house style (edited)\n---\n\nAlways thank contributors.\n"
	if err := os.WriteFile(filepath.Join(dir, "release-notes", "SKILL.md"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l := decodeResult[skillList](t, mustCall(t, sk, env, `{"action":"list"}`))
		if len(l.Skills) == 1 && l.Skills[0].Description == "Release notes, house style (edited)" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list never showed the hand edit: %+v", l)
		}
		time.Sleep(5 * time.Millisecond)
	}
	view := mustCall(t, sk, env, `{"action":"view","name":"release-notes"}`)
	if !strings.Contains(view, "Always thank contributors.") || strings.Contains(view, "Group changes") {
		t.Errorf("view = %q, want the edited body", view)
	}

	// Update keeps what it is not given.
	mustCall(t, sk, env, `{"action":"update","name":"release-notes","content":"Always thank contributors by name."}`)
	d, err := lib.Read("release-notes")
	if err != nil || d.Description != "Release notes, house style (edited)" || d.Body != "Always thank contributors by name.\n" {
		t.Errorf("after update: %+v, %v", d, err)
	}
	// A whole SKILL.md sent as content is not nested in another header.
	mustCall(t, sk, env, `{"action":"update","name":"release-notes","content":"---\nname: release-notes\ndescription: New line\n---\nBody only."}`)
	if d, _ := lib.Read("release-notes"); d.Description != "New line" || d.Body != "Body only.\n" {
		t.Errorf("after a full-file update: %+v", d)
	}
}

func TestSkills_Refusals(t *testing.T) {
	dir := t.TempDir()
	lib := openLibrary(t, dir)
	sk := tools.Skills(lib)
	env := newEnv(keyA, "100")
	mustCall(t, sk, env, `{"action":"create","name":"exists","description":"d","content":"c"}`)
	cases := []struct{ args, want string }{
		{`{"action":"create","name":"../../etc/passwd","description":"d","content":"c"}`, "invalid skill name"},
		{`{"action":"create","name":"Has Caps","description":"d","content":"c"}`, "invalid skill name"},
		{`{"action":"view","name":"../exists"}`, "invalid skill name"},
		{`{"action":"create","name":"exists","description":"d","content":"c"}`, "use action update"},
		{`{"action":"update","name":"missing","content":"c"}`, "no such skill"},
		{`{"action":"view","name":"missing"}`, "no such skill"},
		{`{"action":"create","name":"empty","description":"d","content":" "}`, "content is empty"},
		{`{"action":"create","name":"nodesc","content":"c"}`, "description is empty"},
		{`{"action":"update","name":"exists"}`, "give a new description, content or both"},
		{fmt.Sprintf(`{"action":"create","name":"huge","description":"d","content":%q}`, strings.Repeat("x", 33*1024)), "at most 32768"},
		{`{"action":"delete","name":"exists"}`, "want list, view, create or update"},
	}
	for _, c := range cases {
		_, err := call(t, sk, env, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80s: err = %v, want %q", c.args, err, c.want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("skills directory holds %v, want only the one created", entries)
	}
}

func TestSkillsPrompt(t *testing.T) {
	dir := t.TempDir()
	lib := openLibrary(t, dir)
	if got := tools.SkillsPrompt(lib); got != "" {
		t.Errorf("no skills: prompt %q, want empty", got)
	}
	if got := tools.SkillsPrompt(nil); got != "" {
		t.Errorf("nil library: prompt %q", got)
	}
	if _, err := lib.Create("alpha", "First skill", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Create("beta", "Second skill", "x"); err != nil {
		t.Fatal(err)
	}
	got := tools.SkillsPrompt(lib)
	if !strings.Contains(got, "\n- alpha: First skill\n- beta: Second skill") {
		t.Errorf("prompt = %q", got)
	}
	// Many skills, written by hand: the prompt stays bounded.
	for i := range 200 {
		name := fmt.Sprintf("s-%03d", i)
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		text := "---\ndescription: " + strings.Repeat("long description ", 20) + "\n---\nx\n"
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := lib.Reload(); err != nil {
		t.Fatal(err)
	}
	got = tools.SkillsPrompt(lib)
	if len(got) > tools.MaxSkillsPrompt || !strings.Contains(got, "more (action \"list\")") || !strings.Contains(got, "- alpha") {
		t.Errorf("prompt for 202 skills: %d bytes, ends %q", len(got), got[max(0, len(got)-80):])
	}
}
