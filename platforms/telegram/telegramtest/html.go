package telegramtest

import (
	"fmt"
	"strconv"
	"strings"
)

// htmlTags are the tags Telegram's HTML parse mode accepts.
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// VisibleText parses text in Telegram's HTML parse mode the strict way the
// Bot API documents it — only the supported tags, properly nested and closed;
// every <, > and & outside a tag written as an entity; only &lt; &gt; &amp;
// &quot; and numeric entities — and returns the text a user sees. Telegram
// answers "can't parse entities" for whatever this rejects, so tests use it
// to check rendered messages.
func VisibleText(html string) (string, error) {
	var b strings.Builder
	var stack []string
	for i := 0; i < len(html); {
		switch c := html[i]; c {
		case '<':
			end := strings.IndexByte(html[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("unclosed start tag at byte offset %d", i)
			}
			tag := html[i+1 : i+end]
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				name = strings.ToLower(strings.TrimSpace(name))
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("can't find start tag corresponding to end tag \"%s\" at byte offset %d", name, i)
				}
				stack = stack[:len(stack)-1]
			} else {
				name, attrs, _ := strings.Cut(tag, " ")
				name = strings.ToLower(name)
				if !htmlTags[name] {
					return "", fmt.Errorf("unsupported start tag \"%s\" at byte offset %d", name, i)
				}
				if strings.ContainsAny(attrs, "<") || strings.Count(attrs, `"`)%2 != 0 {
					return "", fmt.Errorf("malformed attributes of tag \"%s\" at byte offset %d", name, i)
				}
				if name == "a" && !strings.Contains(attrs, "href=") {
					return "", fmt.Errorf("tag \"a\" without href at byte offset %d", i)
				}
				stack = append(stack, name)
			}
			i += end + 1
		case '>':
			return "", fmt.Errorf("character '>' is reserved and must be escaped at byte offset %d", i)
		case '&':
			semi := strings.IndexByte(html[i:], ';')
			if semi < 0 || semi > 10 {
				return "", fmt.Errorf("character '&' is reserved and must be escaped at byte offset %d", i)
			}
			r, ok := entity(html[i+1 : i+semi])
			if !ok {
				return "", fmt.Errorf("unsupported HTML entity \"%s\" at byte offset %d", html[i:i+semi+1], i)
			}
			b.WriteString(r)
			i += semi + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1])
	}
	return b.String(), nil
}

func entity(name string) (string, bool) {
	switch name {
	case "lt":
		return "<", true
	case "gt":
		return ">", true
	case "amp":
		return "&", true
	case "quot":
		return `"`, true
	}
	num, ok := strings.CutPrefix(name, "#")
	if !ok {
		return "", false
	}
	base := 10
	if h, ok := strings.CutPrefix(num, "x"); ok {
		num, base = h, 16
	}
	n, err := strconv.ParseInt(num, base, 32)
	if err != nil || n <= 0 || n > 0x10FFFF {
		return "", false
	}
	return string(rune(n)), true
}
