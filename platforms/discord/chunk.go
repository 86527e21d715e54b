package discord

import (
	"strings"
	"unicode/utf8"
)

// fenceCloseReserve is the room kept in a chunk inside a code block for the
// closing fence ("\n```").
const fenceCloseReserve = 4

// maxFenceHeader bounds a reopened fence line ("```python"); a longer info
// string is dropped when the block is reopened.
const maxFenceHeader = 24

// chunkText splits text into messages of at most limit characters (Unicode
// code points, as Discord counts them). It breaks between lines when it can,
// inside a line at a space when it must, and never leaves a code block
// broken: a chunk that ends inside a ``` block closes it, and the next chunk
// reopens it with the same language tag, so each message renders on its own.
// Empty and all-blank text gives no chunks.
func chunkText(text string, limit int) []string {
	text = strings.TrimRight(text, " \t\r\n")
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	c := chunker{limit: limit}
	for _, line := range strings.SplitAfter(text, "\n") {
		c.add(line)
	}
	c.flush(true)
	return c.out
}

// chunker accumulates lines into chunks; fence is the opening line of the
// code block the current position is in, or "".
type chunker struct {
	limit int
	out   []string
	buf   strings.Builder
	n     int  // runes in buf
	fresh bool // buf holds nothing but a reopened fence
	fence string
}

func reserveFor(fence string) int {
	if fence == "" {
		return 0
	}
	return fenceCloseReserve
}

// add appends one line (with its newline, if any).
func (c *chunker) add(line string) {
	after := c.fence
	if isFence(line) {
		if c.fence == "" {
			after = fenceHeader(line)
		} else {
			after = ""
		}
	}
	need := utf8.RuneCountInString(line)
	if c.n+need+reserveFor(after) <= c.limit {
		c.write(line, after)
		return
	}
	if c.n > 0 && !c.fresh {
		closing := c.fence != "" && after == ""
		c.flush(false)
		if closing {
			// The flush closed the block already; do not reopen it only to
			// close it again.
			c.buf.Reset()
			c.n, c.fresh, c.fence = 0, false, ""
			return
		}
		if c.n+need+reserveFor(after) <= c.limit {
			c.write(line, after)
			return
		}
	}
	// One line longer than a whole chunk: cut it, preferring spaces. It is
	// treated as plain text of the current block.
	for line != "" {
		avail := c.limit - c.n - reserveFor(c.fence)
		piece, rest := cutRunes(line, avail)
		c.write(piece, c.fence)
		line = rest
		if line != "" {
			c.flush(false)
		}
	}
}

func (c *chunker) write(s, fenceAfter string) {
	c.buf.WriteString(s)
	c.n += utf8.RuneCountInString(s)
	c.fence = fenceAfter
	c.fresh = false
}

// flush ends the current chunk. Inside a code block it closes the block and
// starts the next chunk by reopening it, unless this is the final chunk (an
// unclosed block in the text stays as the author left it).
func (c *chunker) flush(final bool) {
	s := c.buf.String()
	if !final && c.fence != "" {
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += "```"
	}
	if !c.fresh && strings.TrimSpace(s) != "" {
		c.out = append(c.out, strings.TrimRight(s, " \t\r\n"))
	}
	c.buf.Reset()
	c.n = 0
	c.fresh = false
	if !final && c.fence != "" {
		c.buf.WriteString(c.fence)
		c.buf.WriteByte('\n')
		c.n = utf8.RuneCountInString(c.fence) + 1
		c.fresh = true
	}
}

// isFence reports whether line opens or closes a code block: ``` at the
// start (after up to three spaces) and no second ``` on the same line.
func isFence(line string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, "```") {
		return false
	}
	return strings.Count(t, "```") == 1
}

// fenceHeader is the line that reopens the block: ``` plus its language tag.
func fenceHeader(line string) string {
	h := strings.TrimSpace(line)
	if utf8.RuneCountInString(h) > maxFenceHeader || strings.ContainsAny(h[3:], " \t") {
		return "```"
	}
	return h
}

// cutRunes splits s after at most n runes, at the last space in the second
// half of that span when there is one.
func cutRunes(s string, n int) (string, string) {
	n = max(n, 1)
	r := []rune(s)
	if len(r) <= n {
		return s, ""
	}
	cut := n
	for i := n; i > n/2; i-- {
		if r[i-1] == ' ' {
			cut = i
			break
		}
	}
	return string(r[:cut]), string(r[cut:])
}
