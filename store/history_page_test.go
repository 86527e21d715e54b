package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/store"
)

// TestHistoryPage_PagesWhatAPersonReads: pages walk back from the newest
// without overlap or gap, skip tool traffic, stay inside the session and
// its current conversation, on both backends.
func TestHistoryPage_PagesWhatAPersonReads(t *testing.T) {
	forEachBackend(t, testHistoryPage)
}

func testHistoryPage(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const key, other = "web:dm:alice", "web:dm:bob"
	var msgs []store.Message
	for i := 1; i <= 5; i++ {
		msgs = append(msgs,
			store.Message{SessionKey: key, Role: store.User, Content: fmt.Sprintf("q%d", i)},
			store.Message{SessionKey: key, Role: store.Assistant, ToolCalls: json.RawMessage(`[{"id":"c"}]`)},
			store.Message{SessionKey: key, Role: store.Tool, ToolCallID: "c", Content: "tool output"},
			store.Message{SessionKey: key, Role: store.Assistant, Content: fmt.Sprintf("a%d", i)},
			store.Message{SessionKey: other, Role: store.User, Content: "bob's secret"},
		)
	}
	if err := s.Append(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	var got []string
	before, pages := int64(0), 0
	for {
		page, more, err := s.HistoryPage(ctx, key, before, 4)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append([]string{contents(page)}, got...)
		if !more {
			break
		}
		before = page[0].ID
	}
	if want := "q1 a1 | q2 a2 q3 a3 | q4 a4 q5 a5"; strings.Join(got, " | ") != want || pages != 3 {
		t.Fatalf("pages %q, want %q", strings.Join(got, " | "), want)
	}

	// After /new the page shows only the new conversation.
	if _, err := s.NewConversation(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, store.Message{SessionKey: key, Role: store.User, Content: "fresh"}); err != nil {
		t.Fatal(err)
	}
	page, more, err := s.HistoryPage(ctx, key, 0, 50)
	if err != nil || more || contents(page) != "fresh" {
		t.Fatalf("after /new: %q more=%v err=%v", contents(page), more, err)
	}
	if _, _, err := s.HistoryPage(ctx, "not a key", 0, 10); err == nil {
		t.Fatal("a malformed key was read")
	}
}
