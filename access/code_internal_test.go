package access

import (
	"strings"
	"testing"
)

func TestNewCode_Alphabet(t *testing.T) {
	seen := map[string]bool{}
	counts := map[rune]int{}
	for range 2000 {
		c := newCode()
		if len(c) != CodeLength {
			t.Fatalf("code %q has length %d", c, len(c))
		}
		for _, r := range c {
			if !strings.ContainsRune(CodeAlphabet, r) {
				t.Fatalf("code %q has %q outside the alphabet", c, r)
			}
			counts[r]++
		}
		seen[c] = true
	}
	if len(seen) < 1999 {
		t.Fatalf("only %d distinct codes out of 2000", len(seen))
	}
	// Every symbol shows up: no part of the alphabet is unreachable.
	if len(counts) != len(CodeAlphabet) {
		t.Fatalf("%d symbols used, want %d", len(counts), len(CodeAlphabet))
	}
	for _, bad := range "IO01" {
		if strings.ContainsRune(CodeAlphabet, bad) {
			t.Fatalf("alphabet has the ambiguous %q", bad)
		}
	}
}

func TestNormalizeCode(t *testing.T) {
	if got := normalizeCode(" abcd-efgh "); got != "ABCDEFGH" {
		t.Fatalf("normalizeCode = %q", got)
	}
}
