package discord

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunkText(t *testing.T) {
	code := "```go\n" + strings.Repeat("fmt.Println(\"hello, world\") // a line of code\n", 120) + "```\n"
	cases := []struct {
		name  string
		text  string
		limit int
		want  int // chunks; -1 = don't care
	}{
		{"Empty", "", 2000, 0},
		{"Blank", " \n\t\n", 2000, 0},
		{"Short", "hello", 2000, 1},
		{"ExactlyLimit", strings.Repeat("a", 2000), 2000, 1},
		{"OneOver", strings.Repeat("a", 2001), 2000, 2},
		{"Paragraphs", strings.Repeat("Some prose that goes on for a while.\n\n", 200), 2000, -1},
		{"CodeBlock", "Here is the code:\n" + code + "That was it.", 2000, -1},
		{"LongLineNoSpaces", strings.Repeat("x", 5000), 2000, 3},
		{"LongLineInCode", "```\n" + strings.Repeat("word ", 1000) + "\n```", 2000, -1},
		{"Multibyte", strings.Repeat("héllo wörld ✓ ", 400), 2000, -1},
		{"UnclosedFence", "```py\n" + strings.Repeat("print(1)\n", 500), 2000, -1},
		{"SmallLimit", "```js\nlet a = 1;\nlet b = 2;\nlet c = 3;\n```\nafter", 24, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chunks := chunkText(tc.text, tc.limit)
			if tc.want >= 0 && len(chunks) != tc.want {
				t.Fatalf("got %d chunks, want %d: %q", len(chunks), tc.want, chunks)
			}
			for i, c := range chunks {
				if n := utf8.RuneCountInString(c); n > tc.limit {
					t.Errorf("chunk %d has %d characters, limit %d", i, n, tc.limit)
				}
				if strings.TrimSpace(c) == "" {
					t.Errorf("chunk %d is blank", i)
				}
				if i < len(chunks)-1 || tc.name != "UnclosedFence" {
					if n := fenceCount(c); n%2 != 0 {
						t.Errorf("chunk %d leaves a code block open (%d fences):\n%s", i, n, c)
					}
				}
			}
			// Nothing is lost: the text's non-fence words all survive, in order.
			if got, want := words(strings.Join(chunks, "\n")), words(tc.text); got != want {
				t.Errorf("content changed:\n got %.200q\nwant %.200q", got, want)
			}
		})
	}
}

func TestChunkText_ReopensLanguage(t *testing.T) {
	text := "```python\n" + strings.Repeat("print('hello world')\n", 200) + "```"
	chunks := chunkText(text, 2000)
	if len(chunks) < 2 {
		t.Fatalf("got %d chunks, want several", len(chunks))
	}
	for i, c := range chunks {
		if !strings.HasPrefix(c, "```python\n") {
			t.Errorf("chunk %d does not open the python block: %.40q", i, c)
		}
		if !strings.HasSuffix(c, "```") {
			t.Errorf("chunk %d does not close the block: %.40q", i, c[len(c)-40:])
		}
	}
}

func fenceCount(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if isFence(line) {
			n++
		}
	}
	return n
}

// words is s without fence lines and whitespace, to compare content.
func words(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if isFence(line) {
			continue
		}
		b.WriteString(strings.Join(strings.Fields(line), ""))
	}
	return b.String()
}
