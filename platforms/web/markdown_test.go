package web

import (
	"strings"
	"testing"
)

// TestMarkdown_RendersFormattingAndDropsActiveContent: what the model
// writes becomes formatting, and whatever it was tricked into writing that
// could run in the page does not survive.
func TestMarkdown_RendersFormattingAndDropsActiveContent(t *testing.T) {
	m := newMarkdown()
	for _, tc := range []struct {
		name, in string
		want     []string
		never    []string
	}{
		{"bold and list", "**bold** and _it_\n\n- one\n- two", []string{"<strong>bold</strong>", "<em>it</em>", "<li>one</li>"}, nil},
		{"code fence", "```go\nfmt.Println(\"<b>\")\n```", []string{`<pre><code class="language-go">`, "&lt;b&gt;"}, []string{"<b>"}},
		{"script tag", "hi <script>alert(1)</script>", []string{"hi"}, []string{"<script", "alert(1)</script>"}},
		{"event handler", `<img src=x onerror="alert(1)">`, nil, []string{"onerror", "<img"}},
		{"javascript link", "[click](javascript:alert(1))", []string{"click"}, []string{"javascript:"}},
		{"data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", []string{"x"}, []string{"data:text/html"}},
		{"hostile class", "<code class=\"x onload\">c</code>", nil, []string{"onload", `class="x`}},
		{"link", "[docs](https://example.org/a)", []string{`href="https://example.org/a"`, `rel="nofollow noreferrer noopener"`, `target="_blank"`}, nil},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", []string{"<table>", "<td>1</td>"}, nil},
	} {
		got := m.render(tc.in)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, n := range tc.never {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q contains %q", tc.name, got, n)
			}
		}
	}
	if got := m.render(strings.Repeat("a", maxMarkdownBytes+1)); got != "" {
		t.Errorf("an oversized text was rendered (%d bytes)", len(got))
	}
}
