package telegram

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// splitPlain is the text of each range splitRanges cuts s into: what a
// reader of the chunks sees. (Production code sends the ranges with their
// entities; only the tests want the bare text.)
func splitPlain(s string, limit int) []string {
	var out []string
	for _, r := range splitRanges(s, limit) {
		out = append(out, s[r[0]:r[1]])
	}
	return out
}

func TestSplitPlain_PrefersParagraphsThenLinesThenWords(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		limit int
		want  []string
	}{
		{"fits", "hello world", 20, []string{"hello world"}},
		{"paragraph", "first para here\n\nsecond para", 20, []string{"first para here", "second para"}},
		{"line", "line one is\nline two", 15, []string{"line one is", "line two"}},
		{"word", "alpha beta gamma delta", 12, []string{"alpha beta", "gamma delta"}},
		{"hard cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"surrogates", "😀😀😀", 3, []string{"😀", "😀", "😀"}},
		{"combining mark stays", "abce\u0301fg", 4, []string{"abc", "e\u0301fg"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := splitPlain(tc.in, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("splitPlain(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
			}
		})
	}
}

func TestSplitPlain_NeverBreaksARuneAndLosesNothing(t *testing.T) {
	in := strings.Repeat("ab😀c👨‍👩‍👧 ", 700)
	parts := splitPlain(in, TextLimit)
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if !utf8.ValidString(p) || utf16Len(p) > TextLimit {
			t.Errorf("part %d: valid=%v units=%d", i, utf8.ValidString(p), utf16Len(p))
		}
		if strings.HasPrefix(p, "\u200d") || strings.HasSuffix(p, "\u200d") {
			t.Errorf("part %d cuts a joined emoji", i)
		}
	}
	if strings.Join(parts, " ") != strings.TrimSpace(in) {
		t.Error("text lost or reordered")
	}
}
