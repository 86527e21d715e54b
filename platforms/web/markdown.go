package web

import (
	"bytes"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// markdown renders the model's Markdown to HTML the page can insert as is.
// Two layers, because the text is shaped by whoever the model read (a web
// page, a file, another chat's words in a shared group): goldmark leaves
// raw HTML out (it never enables html.WithUnsafe), and bluemonday then
// keeps only formatting elements and safe links, so neither a <script>, an
// event handler nor a javascript: URL reaches the page. The page's CSP
// (script-src 'self') is the third layer.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newMarkdown() *markdown {
	p := bluemonday.UGCPolicy()
	// Fenced code keeps its language for the page's label; nothing else
	// may carry a class.
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[A-Za-z0-9_+#.-]{1,32}$`)).OnElements("code")
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return &markdown{
		md: goldmark.New(
			goldmark.WithExtensions(extension.GFM),
			goldmark.WithRendererOptions(html.WithHardWraps()),
		),
		policy: p,
	}
}

// maxMarkdownBytes bounds the text rendered; a longer reply is shown as
// plain text (the page falls back to it when html is empty).
const maxMarkdownBytes = 256 << 10

// render returns the sanitized HTML of text, or "" when it cannot (the
// page then shows the text as it is).
func (m *markdown) render(text string) string {
	if text == "" || len(text) > maxMarkdownBytes {
		return ""
	}
	var buf bytes.Buffer
	if err := m.md.Convert([]byte(text), &buf); err != nil {
		return ""
	}
	return string(m.policy.SanitizeBytes(buf.Bytes()))
}
