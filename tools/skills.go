package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hermesd/hermesd/skills"
)

// Bounds of the skills tool and prompt.
const (
	// MaxSkillView is the most characters of a skill view returns; a
	// hand-written SKILL.md may be longer than the tool would write.
	MaxSkillView = 2 * skills.MaxSize
	// MaxSkillsPrompt bounds the skills section of the system prompt, in
	// bytes, whatever the number of skills.
	MaxSkillsPrompt = 4 * 1024
	// skillPromptDescription bounds each description in that section.
	skillPromptDescription = 160
)

// Skills lets the model list, read, write and improve skill documents:
// reusable instructions for recurring tasks, kept as HERMES_HOME/skills/
// <name>/SKILL.md files a person can edit too. Skills are shared by every
// conversation of this daemon, like the Python gateway's.
func Skills(lib *skills.Library) Tool {
	return Tool{
		Name: "skills",
		Description: "Reusable instructions for recurring tasks. Actions: list; view (name) to load a skill before doing its task; " +
			"create (name, description, content) after working out a non-trivial procedure worth reusing; " +
			"update (name, and description and/or content) to improve one. Names use a-z, 0-9 and -. Content is Markdown, at most 32 KiB.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["list","view","create","update"]},` +
			`"name":{"type":"string","description":"Skill name, e.g. deploy-checklist."},` +
			`"description":{"type":"string","description":"One line: when to use the skill."},` +
			`"content":{"type":"string","description":"The skill's Markdown body."}},"required":["action"]}`),
		Run: func(_ context.Context, _ Env, args json.RawMessage) (string, error) {
			var a skillArgs
			if err := decode(args, &a); err != nil {
				return "", err
			}
			a.Name = strings.TrimSpace(a.Name)
			switch strings.ToLower(strings.TrimSpace(a.Action)) {
			case "list":
				return listSkills(lib)
			case "view", "read":
				return viewSkill(lib, a.Name)
			case "create":
				return createSkill(lib, a)
			case "update", "edit":
				return updateSkill(lib, a)
			default:
				return "", fmt.Errorf("%w: action %q, want list, view, create or update", ErrBadArguments, a.Action)
			}
		},
	}
}

type skillArgs struct {
	Action      string `json:"action"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Content     string `json:"content"`
}

func listSkills(lib *skills.Library) (string, error) {
	type view struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Size        int64  `json:"size"`
	}
	out := struct {
		Skills []view `json:"skills"`
	}{Skills: []view{}}
	for _, s := range lib.List() {
		out.Skills = append(out.Skills, view{Name: s.Name, Description: s.Description, Size: s.Size})
	}
	return jsonResult(out)
}

func viewSkill(lib *skills.Library, name string) (string, error) {
	d, err := lib.Read(name)
	if err != nil {
		return "", skillError(err)
	}
	head := fmt.Sprintf("Skill %q", d.Name)
	if d.Description != "" {
		head += ": " + d.Description
	}
	return clip(head+"\n\n"+d.Body, MaxSkillView), nil
}

func createSkill(lib *skills.Library, a skillArgs) (string, error) {
	desc, body, err := skillText(a)
	if err != nil {
		return "", err
	}
	if body == "" {
		return "", fmt.Errorf("%w: content is empty", ErrBadArguments)
	}
	if desc == "" {
		return "", fmt.Errorf("%w: description is empty: say in one line when to use the skill", ErrBadArguments)
	}
	s, err := lib.Create(a.Name, desc, body)
	if err != nil {
		return "", skillError(err)
	}
	return fmt.Sprintf("Created skill %q (%d bytes).", s.Name, s.Size), nil
}

func updateSkill(lib *skills.Library, a skillArgs) (string, error) {
	desc, body, err := skillText(a)
	if err != nil {
		return "", err
	}
	if desc == "" && body == "" {
		return "", fmt.Errorf("%w: give a new description, content or both", ErrBadArguments)
	}
	old, err := lib.Read(a.Name)
	if err != nil {
		return "", skillError(err)
	}
	if desc == "" {
		desc = old.Description
	}
	if body == "" {
		body = old.Body
	}
	s, err := lib.Update(a.Name, desc, body)
	if err != nil {
		return "", skillError(err)
	}
	return fmt.Sprintf("Updated skill %q (%d bytes).", s.Name, s.Size), nil
}

// skillText returns the description and body of a create or update. A
// model that sends a whole SKILL.md (front matter included) as content gets
// its front matter read, not stored twice.
func skillText(a skillArgs) (desc, body string, err error) {
	if n := len(a.Content); n > skills.MaxSize {
		return "", "", fmt.Errorf("%w: content is %d bytes, a skill may hold at most %d", ErrBadArguments, n, skills.MaxSize)
	}
	fm, body, err := skills.SplitFrontMatter(a.Content)
	if err != nil {
		return "", "", fmt.Errorf("%w: content: %v", ErrBadArguments, err)
	}
	desc = strings.Join(strings.Fields(a.Description), " ")
	if desc == "" {
		desc = fm.Description
	}
	return desc, strings.TrimSpace(body), nil
}

// skillError words a Library error for the model.
func skillError(err error) error {
	switch {
	case errors.Is(err, skills.ErrInvalidName):
		return fmt.Errorf("%w: %v", ErrBadArguments, err)
	case errors.Is(err, skills.ErrExists):
		return fmt.Errorf("skills: %w; use action update to change it", err)
	case errors.Is(err, skills.ErrNotFound):
		return fmt.Errorf("skills: %w; use action list to see the skills", err)
	case errors.Is(err, skills.ErrTooLarge):
		return fmt.Errorf("%w: %v", ErrBadArguments, err)
	}
	return fmt.Errorf("skills: %w", err)
}

// SkillsPrompt returns the skills section of a system prompt: each skill's
// name and description, one per line, in at most MaxSkillsPrompt bytes, so
// the model knows what it can load without loading it. "" when there are no
// skills (or no library).
func SkillsPrompt(lib *skills.Library) string {
	if lib == nil {
		return ""
	}
	list := lib.List()
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Skills you have (load one with the skills tool, action \"view\", before a task it covers):")
	more := func(n int) string { return fmt.Sprintf("\n- … and %d more (action \"list\")", n) }
	for i, s := range list {
		line := "\n- " + s.Name
		if d := []rune(s.Description); len(d) > skillPromptDescription {
			line += ": " + string(d[:skillPromptDescription-1]) + "…"
		} else if len(d) > 0 {
			line += ": " + s.Description
		}
		reserve := 0
		if i < len(list)-1 {
			reserve = len(more(len(list)))
		}
		if b.Len()+len(line)+reserve > MaxSkillsPrompt {
			b.WriteString(more(len(list) - i))
			break
		}
		b.WriteString(line)
	}
	return b.String()
}
