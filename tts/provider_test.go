package tts

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	cases := []struct {
		name, in string
		limit    int
		want     string
		cut      bool
	}{
		{"fits", "Short text.", 20, "Short text.", false},
		{"no limit", "Anything at all.", 0, "Anything at all.", false},
		{"sentence", "First sentence here. Second one is longer and will not fit.", 40, "First sentence here.", true},
		{"question", "Is it? Yes it is, certainly, without any doubt.", 30, "Is it? Yes it is, certainly,", true},
		{"not a decimal point", "Pi is 3.14159 and more digits follow here", 20, "Pi is 3.14159 and", true},
		{"word", "one two three four five six seven eight", 17, "one two three", true},
		{"line break", "A title\nand a body that goes on and on", 12, "A title", true},
		{"no space at all", strings.Repeat("x", 50), 10, strings.Repeat("x", 10), true},
		{"runes not bytes", "Привет мир. Как дела сегодня у тебя", 15, "Привет мир.", true},
		{"CJK full stop", "你好世界。今天天气很好我们去公园", 8, "你好世界。", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := Truncate(tc.in, tc.limit)
			if got != tc.want || cut != tc.cut {
				t.Errorf("Truncate(%q, %d) = %q, %v; want %q, %v", tc.in, tc.limit, got, cut, tc.want, tc.cut)
			}
			if tc.limit > 0 && utf8.RuneCountInString(got) > tc.limit {
				t.Errorf("result has %d runes, over the limit %d", utf8.RuneCountInString(got), tc.limit)
			}
		})
	}
}
