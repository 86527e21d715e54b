package actors

import (
	"strings"
	"testing"
	"time"
)

func TestFormatConversations(t *testing.T) {
	at := time.Date(2026, 12, 1, 17, 5, 0, 0, time.UTC)
	got := formatConversations([]ConversationInfo{
		{Number: 3, Opening: "line one\nline two\t\tand " + strings.Repeat("é", 60), Last: at, Messages: 4},
		{Number: 2, Title: "Trip", Opening: "ignored when titled", Last: at, Messages: 10},
		{Number: 1, Last: at, Messages: 1},
	}, 2)
	want := "Conversations in this chat, newest first:\n" +
		"3. (untitled) “line one line two and " + strings.Repeat("é", 17) + "…” — 2026-12-01 17:05 UTC, 4 messages\n" +
		"2. Trip — 2026-12-01 17:05 UTC, 10 messages ← current\n" +
		"1. (untitled) — 2026-12-01 17:05 UTC, 1 message\n" +
		"Send /resume <n> to go back to one."
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := formatConversations(nil, 1); got != "No conversations yet." {
		t.Fatalf("empty: %q", got)
	}
}
