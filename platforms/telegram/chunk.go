package telegram

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// utf16Len is the length of s in UTF-16 code units, the unit of Telegram's
// limits and entity offsets.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += runeUnits(r)
	}
	return n
}

func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// splitRanges cuts s into [start, end) byte ranges of at most limit UTF-16
// units each, preferring to cut at a paragraph break, then a line break, then
// a space, in the second half of the allowance; only a text with none of
// those is cut mid-word, and then never inside a rune (so never inside a
// surrogate pair) nor before a combining mark or joiner. Whitespace at the
// cuts is dropped, as Telegram would trim it anyway; nothing else is lost.
func splitRanges(s string, limit int) [][2]int {
	var out [][2]int
	p := 0
	for p < len(s) {
		p = skipSpace(s, p)
		if p >= len(s) {
			break
		}
		e, fits := fitEnd(s, p, limit)
		if fits {
			out = appendTrimmed(out, s, p, len(s))
			break
		}
		cut := bestCut(s, p, e)
		out = appendTrimmed(out, s, p, cut)
		p = cut
	}
	return out
}

// fitEnd returns the largest rune boundary e such that s[p:e] fits in limit
// units, and whether that reaches the end of s.
func fitEnd(s string, p, limit int) (int, bool) {
	units := 0
	for i, r := range s[p:] {
		units += runeUnits(r)
		if units > limit {
			if i == 0 { // a limit below one rune: still make progress
				return p + utf8.RuneLen(r), p+utf8.RuneLen(r) >= len(s)
			}
			return p + i, false
		}
	}
	return len(s), true
}

// bestCut chooses where the chunk starting at p and ending no later than e
// ends.
func bestCut(s string, p, e int) int {
	half := p + (e-p)/2
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(s[half:e], sep); i >= 0 {
			return half + i
		}
	}
	if i := strings.LastIndexAny(s[p:e], "\n \t"); i > 0 {
		return p + i
	}
	// No whitespace at all: cut at a rune boundary, but not right before a
	// combining mark, a variation selector or a zero-width joiner, nor right
	// after a joiner, so that an emoji sequence or accented letter stays whole
	// where it can.
	cut := e
	for cut > p+1 {
		next, _ := utf8.DecodeRuneInString(s[cut:])
		prev, _ := utf8.DecodeLastRuneInString(s[:cut])
		if !joins(next) && prev != '\u200d' {
			break
		}
		_, size := utf8.DecodeLastRuneInString(s[:cut])
		cut -= size
	}
	if cut <= p {
		return e
	}
	return cut
}

// joins reports runes that attach to the previous one.
func joins(r rune) bool {
	return r == '\u200d' || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) ||
		(r >= 0xFE00 && r <= 0xFE0F) || (r >= 0x1F3FB && r <= 0x1F3FF) || (r >= 0xE0020 && r <= 0xE007F)
}

func skipSpace(s string, p int) int {
	for p < len(s) {
		r, size := utf8.DecodeRuneInString(s[p:])
		if !unicode.IsSpace(r) {
			break
		}
		p += size
	}
	return p
}

func appendTrimmed(out [][2]int, s string, start, end int) [][2]int {
	for end > start {
		r, size := utf8.DecodeLastRuneInString(s[start:end])
		if !unicode.IsSpace(r) {
			break
		}
		end -= size
	}
	if end > start {
		out = append(out, [2]int{start, end})
	}
	return out
}
