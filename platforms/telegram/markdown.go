package telegram

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The model writes Markdown; Telegram shows HTML with a handful of tags.
// Rather than translate Markdown to HTML text (and then cut HTML, which can
// split a tag or an entity), the reply is parsed into spans of visible text
// with a style each. Chunking cuts the visible text; each chunk is rendered
// on its own, so every message is well-formed HTML whose visible length is
// exactly what was measured, and its plain-text fallback is the same text.

// style is a set of text styles Telegram can show.
type style uint8

const (
	sBold style = 1 << iota
	sItalic
	sStrike
	sCode // inline code: excludes every other style
	sPre  // code block: excludes every other style
)

// span is a run of visible text in one style.
type span struct {
	text string
	st   style
	href string // link target, for styled text
	lang string // language of a code block
}

// parseMarkdown reads the Markdown a model writes: fenced code blocks, ATX
// headings (shown bold), bullets, **bold**, __bold__, *italic*, _italic_,
// ~~strike~~, `code` and [links](https://…). Anything it does not recognise,
// an unmatched delimiter included, stays literal text.
func parseMarkdown(src string) []span {
	src = strings.ToValidUTF8(strings.ReplaceAll(src, "\r\n", "\n"), "\uFFFD")
	lines := strings.Split(src, "\n")
	var out []span
	var fence string // the open fence ("```" or "~~~…"), "" outside a code block
	var lang string
	var code []string
	for i, line := range lines {
		last := i == len(lines)-1
		if fence != "" {
			if closesFence(line, fence) {
				out = append(out, span{text: strings.Join(code, "\n"), st: sPre, lang: lang})
				fence, code = "", nil
				if !last {
					out = append(out, span{text: "\n"})
				}
			} else {
				code = append(code, line)
			}
			continue
		}
		if f, l, ok := opensFence(line); ok {
			fence, lang = f, l
			continue
		}
		out = append(out, parseLine(line)...)
		if !last {
			out = append(out, span{text: "\n"})
		}
	}
	if fence != "" { // unclosed block: show what there is
		out = append(out, span{text: strings.Join(code, "\n"), st: sPre, lang: lang})
	}
	return out
}

// opensFence recognises ``` or ~~~ (three or more, indented at most three
// spaces) and the language word after it.
func opensFence(line string) (fence, lang string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info := strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(info, "`") {
		return "", "", false
	}
	if f := strings.Fields(info); len(f) > 0 {
		lang = f[0]
	}
	return t[:n], lang, true
}

func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == "" && t[0] == fence[0]
}

// parseLine handles one line outside code blocks: headings, bullets, rules,
// then inline styles.
func parseLine(line string) []span {
	t := strings.TrimLeft(line, " \t")
	indent := line[:len(line)-len(t)]
	if n := headingLevel(t); n > 0 {
		text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[n:]), "#"))
		spans := parseInline(text)
		for i := range spans {
			if spans[i].st&(sCode|sPre) == 0 {
				spans[i].st |= sBold
			}
		}
		return spans
	}
	if isRule(t) {
		return []span{{text: "──────────"}}
	}
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && t[1] == ' ' {
		return append([]span{{text: indent + "• "}}, parseInline(t[2:])...)
	}
	if indent == "" {
		return parseInline(line)
	}
	return append([]span{{text: indent}}, parseInline(t)...)
}

func headingLevel(t string) int {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return 0
	}
	return n
}

func isRule(t string) bool {
	t = strings.ReplaceAll(strings.TrimSpace(t), " ", "")
	return len(t) >= 3 && (strings.Trim(t, "-") == "" || strings.Trim(t, "*") == "" || strings.Trim(t, "_") == "")
}

// token is one piece of a line: text, a candidate delimiter, code or a link.
type token struct {
	kind    tokenKind
	text    string
	inner   []span // link text
	href    string
	canOpen bool
	canShut bool
	paired  int // +1 opens a pair, -1 closes one, 0 unpaired (shown literally)
}

type tokenKind uint8

const (
	tokText tokenKind = iota
	tokDelim
	tokCode
	tokLink
)

// parseInline reads inline styles, pairing delimiters the CommonMark way
// (left/right flanking, no intraword underscores), simplified.
func parseInline(s string) []span {
	toks := tokenize(s)
	pairDelims(toks)
	var out []span
	var bold, italic, strike int
	for _, t := range toks {
		var st style
		if bold > 0 {
			st |= sBold
		}
		if italic > 0 {
			st |= sItalic
		}
		if strike > 0 {
			st |= sStrike
		}
		switch t.kind {
		case tokText:
			out = append(out, span{text: t.text, st: st})
		case tokCode:
			out = append(out, span{text: t.text, st: sCode})
		case tokLink:
			for _, in := range t.inner {
				if in.st&sCode != 0 {
					in.st = 0 // code cannot nest in a link on Telegram
				}
				in.st |= st
				in.href = t.href
				out = append(out, in)
			}
		case tokDelim:
			if t.paired == 0 {
				out = append(out, span{text: t.text, st: st})
				continue
			}
			switch t.text {
			case "**", "__":
				bold += t.paired
			case "*", "_":
				italic += t.paired
			case "~~":
				strike += t.paired
			}
		}
	}
	return out
}

func tokenize(s string) []token {
	var toks []token
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			toks = append(toks, token{kind: tokText, text: buf.String()})
			buf.Reset()
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			buf.WriteByte(s[i+1])
			i += 2
		case c == '`':
			n := runLen(s, i, '`')
			end := findRun(s, i+n, '`', n)
			if end < 0 {
				buf.WriteString(s[i : i+n])
				i += n
				continue
			}
			code := s[i+n : end]
			if len(code) >= 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
				code = code[1 : len(code)-1]
			}
			flush()
			toks = append(toks, token{kind: tokCode, text: code})
			i = end + n
		case c == '[':
			text, href, end, ok := parseLink(s, i)
			if !ok {
				buf.WriteByte(c)
				i++
				continue
			}
			flush()
			toks = append(toks, token{kind: tokLink, inner: parseInline(text), href: href})
			i = end
		case c == '*' || c == '_' || c == '~':
			n := runLen(s, i, c)
			if c == '~' && n != 2 {
				buf.WriteString(s[i : i+n])
				i += n
				continue
			}
			before, _ := utf8.DecodeLastRuneInString(s[:i])
			if i == 0 {
				before = ' '
			}
			after, _ := utf8.DecodeRuneInString(s[i+n:])
			if i+n >= len(s) {
				after = ' '
			}
			left := !unicode.IsSpace(after) && (!isPunct(after) || unicode.IsSpace(before) || isPunct(before))
			right := !unicode.IsSpace(before) && (!isPunct(before) || unicode.IsSpace(after) || isPunct(after))
			open, shut := left, right
			if c == '_' {
				open = left && (!right || isPunct(before))
				shut = right && (!left || isPunct(after))
			}
			flush()
			mark := string(c)
			switch {
			case c == '~' || n == 2:
				toks = append(toks, token{kind: tokDelim, text: s[i : i+n], canOpen: open, canShut: shut})
			case n == 1:
				toks = append(toks, token{kind: tokDelim, text: mark, canOpen: open, canShut: shut})
			case n == 3:
				// ***x*** is bold italic: open "**" then "*", close "*" then "**".
				first, second := mark+mark, mark
				if shut && !open {
					first, second = mark, mark+mark
				}
				toks = append(toks,
					token{kind: tokDelim, text: first, canOpen: open, canShut: shut},
					token{kind: tokDelim, text: second, canOpen: open, canShut: shut})
			default:
				buf.WriteString(s[i : i+n])
			}
			i += n
		default:
			buf.WriteByte(c)
			i++
		}
	}
	flush()
	return toks
}

// pairDelims matches each closing delimiter with the nearest open one of
// the same kind; openers skipped over stay literal.
func pairDelims(toks []token) {
	var stack []int
	for i := range toks {
		t := &toks[i]
		if t.kind != tokDelim {
			continue
		}
		if t.canShut {
			matched := false
			for j := len(stack) - 1; j >= 0; j-- {
				if o := &toks[stack[j]]; o.text == t.text {
					o.paired, t.paired = 1, -1
					stack = stack[:j]
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		if t.canOpen {
			stack = append(stack, i)
		}
	}
}

// parseLink reads [text](target) at s[i]; only http, https, tg and mailto
// targets become links, anything else stays literal.
func parseLink(s string, i int) (text, href string, end int, ok bool) {
	depth, j := 0, i
	for ; j < len(s); j++ {
		if s[j] == '[' {
			depth++
		} else if s[j] == ']' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	if j >= len(s) || j+1 >= len(s) || s[j+1] != '(' || j == i+1 {
		return "", "", 0, false
	}
	depth = 0
	k := j + 1
	for ; k < len(s); k++ {
		if s[k] == '(' {
			depth++
		} else if s[k] == ')' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	if k >= len(s) {
		return "", "", 0, false
	}
	target := strings.TrimSpace(s[j+2 : k])
	if f := strings.Fields(target); len(f) > 0 {
		target = strings.Trim(f[0], "<>")
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", "", 0, false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "tg", "mailto":
	default:
		return "", "", 0, false
	}
	return s[i+1 : j], target, k + 1, true
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// findRun finds the next run of exactly n c's at or after i.
func findRun(s string, i int, c byte, n int) int {
	for i < len(s) {
		j := strings.IndexByte(s[i:], c)
		if j < 0 {
			return -1
		}
		j += i
		if l := runLen(s, j, c); l == n {
			return j
		} else {
			i = j + l
		}
	}
	return -1
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

func isPunct(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }

// plainText is what spans show without markup: the fallback when Telegram
// rejects the HTML.
func plainText(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.text)
	}
	return b.String()
}

// renderHTML writes spans in Telegram's HTML parse mode. Every span is
// wrapped on its own, so tags always nest properly, and every <, > and & of
// the text is escaped.
func renderHTML(spans []span) string {
	var b strings.Builder
	for _, s := range mergeSpans(spans) {
		switch {
		case s.text == "":
		case s.st&sPre != 0:
			if lang := codeLang(s.lang); lang != "" {
				b.WriteString(`<pre><code class="language-` + lang + `">`)
				escapeHTML(&b, s.text)
				b.WriteString("</code></pre>")
			} else {
				b.WriteString("<pre>")
				escapeHTML(&b, s.text)
				b.WriteString("</pre>")
			}
		case s.st&sCode != 0:
			b.WriteString("<code>")
			escapeHTML(&b, s.text)
			b.WriteString("</code>")
		default:
			var closers []string
			if s.href != "" {
				b.WriteString(`<a href="`)
				escapeHTML(&b, s.href)
				b.WriteString(`">`)
				closers = append(closers, "</a>")
			}
			for _, t := range []struct {
				st   style
				tag  string
				shut string
			}{{sBold, "<b>", "</b>"}, {sItalic, "<i>", "</i>"}, {sStrike, "<s>", "</s>"}} {
				if s.st&t.st != 0 {
					b.WriteString(t.tag)
					closers = append(closers, t.shut)
				}
			}
			escapeHTML(&b, s.text)
			for i := len(closers) - 1; i >= 0; i-- {
				b.WriteString(closers[i])
			}
		}
	}
	return b.String()
}

// mergeSpans joins neighbours of the same style, for shorter HTML.
func mergeSpans(spans []span) []span {
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].st == s.st && out[n-1].href == s.href && out[n-1].lang == s.lang {
			out[n-1].text += s.text
			continue
		}
		out = append(out, s)
	}
	return out
}

func codeLang(l string) string {
	for _, c := range []byte(l) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-' || c == '#') {
			return ""
		}
	}
	return l
}

func escapeHTML(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteByte(c)
		}
	}
}

// chunkSpans cuts spans into messages of at most limit UTF-16 units of
// visible text (see splitRanges for where).
func chunkSpans(spans []span, limit int) [][]span {
	visible := plainText(spans)
	var out [][]span
	for _, r := range splitRanges(visible, limit) {
		var chunk []span
		off := 0
		for _, s := range spans {
			start, end := off, off+len(s.text)
			off = end
			lo, hi := max(start, r[0]), min(end, r[1])
			if lo >= hi {
				continue
			}
			part := s
			part.text = s.text[lo-start : hi-start]
			chunk = append(chunk, part)
		}
		out = append(out, chunk)
	}
	return out
}
