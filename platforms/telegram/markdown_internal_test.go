package telegram

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

func TestRenderHTML_FromModelMarkdown(t *testing.T) {
	cases := []struct{ in, want string }{
		{"**bold** and _it_ `code` [link](https://x.y/a_b?c=1&d=2)",
			`<b>bold</b> and <i>it</i> <code>code</code> <a href="https://x.y/a_b?c=1&amp;d=2">link</a>`},
		{"a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"snake_case_name and 2 * 3 * 4", "snake_case_name and 2 * 3 * 4"},
		{"**unclosed and *half", "**unclosed and *half"},
		{"```go\nfmt.Println(\"<hi>\")\n```", `<pre><code class="language-go">fmt.Println(&quot;&lt;hi&gt;&quot;)</code></pre>`},
		{"```\nplain block\n```\nafter", "<pre>plain block</pre>\nafter"},
		{"# Title\n- item *one*\n* item two", "<b>Title</b>\n• item <i>one</i>\n• item two"},
		{"~~gone~~ ~single~", "<s>gone</s> ~single~"},
		{"***both***", "<b><i>both</i></b>"},
		{"[bad](javascript:alert(1))", "[bad](javascript:alert(1))"},
		{"[wiki](https://en.wikipedia.org/wiki/Go_(language))", `<a href="https://en.wikipedia.org/wiki/Go_(language)">wiki</a>`},
		{"`a < b`", "<code>a &lt; b</code>"},
		{`\*not italic\*`, "*not italic*"},
		{"**bold with `code` inside**", "<b>bold with </b><code>code</code><b> inside</b>"},
		{"__bold__ *it* _it_", "<b>bold</b> <i>it</i> <i>it</i>"},
		{"```py\nunclosed <block>", `<pre><code class="language-py">unclosed &lt;block&gt;</code></pre>`},
	}
	for _, tc := range cases {
		got := renderHTML(parseMarkdown(tc.in))
		if got != tc.want {
			t.Errorf("renderHTML(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if _, err := telegramtest.VisibleText(got); err != nil {
			t.Errorf("renderHTML(%q) = %q: Telegram would refuse it: %v", tc.in, got, err)
		}
	}
}

// Whatever the model writes, every chunk is valid Telegram HTML, shows
// exactly its plain-text fallback, fits the limit, and together the chunks
// hold all of the text.
func TestChunkSpans_AlwaysValidAndComplete(t *testing.T) {
	alphabet := []string{"*", "**", "_", "__", "~~", "`", "```", "```go\n", "[", "](", "https://a.b/c", ")", "<", ">", "&", "\"",
		" ", " ", "\n", "\n\n", "# ", "- ", "word", "snake_case", "é", "😀", "👨‍👩‍👧", "\\*", "e\u0301"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		checkChunks(t, b.String(), 2+rng.IntN(40)) // a limit of 2 fits any rune
	}
}

func FuzzChunkSpans(f *testing.F) {
	for _, s := range []string{"**a** _b_ `c`", "```x\n<>&\n```", "[l](https://x)", "😀😀 😀", "a\n\nb\nc d"} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 2 || limit > 5000 {
			return
		}
		checkChunks(t, s, limit)
	})
}

func checkChunks(t *testing.T, src string, limit int) {
	t.Helper()
	spans := parseMarkdown(src)
	whole := plainText(spans)
	var rebuilt []string
	for _, c := range chunkSpans(spans, limit) {
		html := renderHTML(c)
		vis, err := telegramtest.VisibleText(html)
		if err != nil {
			t.Fatalf("source %q, limit %d: chunk %q is invalid HTML: %v", src, limit, html, err)
		}
		if vis != plainText(c) {
			t.Fatalf("source %q: chunk shows %q but its fallback is %q", src, vis, plainText(c))
		}
		if n := utf16Len(vis); n > limit {
			t.Fatalf("source %q: chunk of %d units over the limit %d", src, n, limit)
		}
		rebuilt = append(rebuilt, vis)
	}
	if got, want := strings.Join(strings.Fields(strings.Join(rebuilt, " ")), ""), strings.Join(strings.Fields(whole), ""); got != want {
		t.Fatalf("source %q, limit %d: chunks hold %q, want %q", src, limit, got, want)
	}
}
