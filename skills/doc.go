package skills

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FrontMatter is the YAML header of a SKILL.md. Other keys (version, tags,
// …, as skills from other agents carry) are kept on disk and ignored here.
type FrontMatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
}

// SplitFrontMatter separates a SKILL.md into its optional front matter (a
// first line "---", YAML, a line "---" or "...") and its Markdown body. Text
// without front matter is all body. A header that is opened but not closed
// is body too, so a Markdown rule at the top of a file is not an error;
// a closed header that is not valid YAML is.
func SplitFrontMatter(text string) (FrontMatter, string, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimRight(first, " \t\r") != "---" {
		return FrontMatter{}, text, nil
	}
	var header []string
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if t := strings.TrimRight(line, " \t\r"); t == "---" || t == "..." {
			var fm FrontMatter
			if err := yaml.Unmarshal([]byte(strings.Join(header, "\n")), &fm); err != nil {
				return FrontMatter{}, "", fmt.Errorf("front matter: %w", err)
			}
			fm.Description = oneLine(fm.Description)
			return fm, strings.TrimLeft(rest, "\r\n"), nil
		}
		header = append(header, line)
	}
	return FrontMatter{}, text, nil
}

// render writes a SKILL.md: front matter with name and description, a blank
// line, then body ending in one newline.
func render(name, description, body string) ([]byte, error) {
	head, err := yaml.Marshal(FrontMatter{Name: name, Description: oneLine(description)})
	if err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(head)
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimSpace(body))
	b.WriteString("\n")
	return b.Bytes(), nil
}

// describe is a skill's description: the front matter's, or else the first
// line of prose in the body, so a hand-written file without a header still
// says something in the index.
func describe(fm FrontMatter, body string) string {
	if fm.Description != "" {
		return clip(fm.Description, MaxDescription)
	}
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "```") || strings.Trim(line, "-=*_ ") == "" {
			continue
		}
		return clip(line, 200)
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to at most n characters, ending with "…" when it cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
