package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

func messagesPlatform(p string) messages.Platform { return messages.Platform(p) }

func contents(ms []store.Message) string {
	var cs []string
	for _, m := range ms {
		cs = append(cs, m.Content)
	}
	return strings.Join(cs, " ")
}

func TestHistory_SurvivesRestart(t *testing.T) { forEachBackend(t, testHistory_SurvivesRestart) }

func testHistory_SurvivesRestart(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	const key = "telegram:dm:1"
	s := mustOpen(t, path)
	err := s.Append(ctx,
		store.Message{SessionKey: key, Role: store.User, Content: "what time is it", PlatformMessageID: "77"},
		store.Message{SessionKey: key, Role: store.Assistant, ToolCalls: json.RawMessage(`[{"id":"c1","name":"clock"}]`)},
		store.Message{SessionKey: key, Role: store.Tool, ToolCallID: "c1", Name: "clock", Content: "12:00"},
		store.Message{SessionKey: key, Role: store.Assistant, Content: "noon"},
	)
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)

	s = mustOpen(t, path)
	h, err := s.History(ctx, key, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 4 {
		t.Fatalf("history after restart has %d messages, want 4", len(h))
	}
	if h[0].PlatformMessageID != "77" || h[0].Role != store.User || h[0].Conversation != 1 {
		t.Errorf("first message = %+v", h[0])
	}
	if string(h[1].ToolCalls) != `[{"id":"c1","name":"clock"}]` {
		t.Errorf("tool calls = %s", h[1].ToolCalls)
	}
	if h[2].ToolCallID != "c1" || h[2].Name != "clock" {
		t.Errorf("tool message = %+v", h[2])
	}
	if got := contents(h[2:]); got != "12:00 noon" {
		t.Errorf("last two = %q", got)
	}
	last2, err := s.History(ctx, key, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(last2); got != "12:00 noon" {
		t.Fatalf("History(limit 2) = %q, want the latest two, oldest first", got)
	}
}

func TestNewConversation_IsolatesHistory(t *testing.T) {
	forEachBackend(t, testNewConversation_IsolatesHistory)
}

func testNewConversation_IsolatesHistory(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	const key, other = "discord:dm:5", "discord:dm:6"
	s := mustOpen(t, path)
	mustAppend(t, s, key, "old-1", "old-2")
	mustAppend(t, s, other, "neighbour")
	conv, err := s.NewConversation(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if conv != 2 {
		t.Fatalf("NewConversation = %d, want 2", conv)
	}
	mustAppend(t, s, key, "new-1")
	h, err := s.History(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(h); got != "new-1" {
		t.Fatalf("history after /new = %q, want only new-1", got)
	}
	if h[0].Conversation != 2 {
		t.Fatalf("new message in conversation %d, want 2", h[0].Conversation)
	}
	// Another session is untouched, and it all holds after a restart.
	mustClose(t, s)
	s = mustOpen(t, path)
	if h, _ := s.History(ctx, other, 0); contents(h) != "neighbour" {
		t.Fatalf("other session history = %q", contents(h))
	}
	if h, _ := s.History(ctx, key, 0); contents(h) != "new-1" {
		t.Fatalf("history after /new and restart = %q", contents(h))
	}
	// A session never seen can start a new conversation too.
	if conv, err := s.NewConversation(ctx, "web:dm:fresh"); err != nil || conv != 2 {
		t.Fatalf("NewConversation(fresh) = %d, %v", conv, err)
	}
}

func mustAppend(tb testing.TB, s *store.Store, key string, texts ...string) {
	tb.Helper()
	var ms []store.Message
	for _, t := range texts {
		ms = append(ms, store.Message{SessionKey: key, Role: store.User, Content: t})
	}
	if err := s.Append(context.Background(), ms...); err != nil {
		tb.Fatal(err)
	}
}

func TestAppend_RefusesInvalidMessages(t *testing.T) {
	forEachBackend(t, testAppend_RefusesInvalidMessages)
}

func testAppend_RefusesInvalidMessages(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	cases := []struct {
		name string
		m    store.Message
	}{
		{"no session", store.Message{Role: store.User, Content: "x"}},
		{"bad key", store.Message{SessionKey: "telegram:dm:a b", Role: store.User}},
		{"bad role", store.Message{SessionKey: "telegram:dm:1", Role: "robot"}},
		{"bad tool calls", store.Message{SessionKey: "telegram:dm:1", Role: store.Assistant, ToolCalls: json.RawMessage("{")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok := store.Message{SessionKey: "telegram:dm:1", Role: store.User, Content: "fine"}
			if err := s.Append(ctx, ok, c.m); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Append = %v, want ErrInvalid", err)
			}
		})
	}
	if h, _ := s.History(ctx, "telegram:dm:1", 0); len(h) != 0 {
		t.Fatalf("a refused Append wrote %d messages", len(h))
	}
}

// 200 goroutines append to 50 sessions at once; every message must arrive
// and each goroutine's messages must keep their order within the session.
func TestAppend_ConcurrentLosesNothingAndKeepsOrder(t *testing.T) {
	forEachBackend(t, testAppend_ConcurrentLosesNothingAndKeepsOrder)
}

func testAppend_ConcurrentLosesNothingAndKeepsOrder(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const goroutines, sessions, perG = 200, 50, 10
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("web:dm:s%d", g%sessions)
			for i := range perG {
				m := store.Message{SessionKey: key, Role: store.User, Content: fmt.Sprintf("g%d-%d", g, i)}
				if err := s.Append(ctx, m); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for k := range sessions {
		key := fmt.Sprintf("web:dm:s%d", k)
		h, err := s.History(ctx, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		total += len(h)
		next := map[int]int{} // goroutine → next expected index
		for _, m := range h {
			var g, i int
			if _, err := fmt.Sscanf(m.Content, "g%d-%d", &g, &i); err != nil {
				t.Fatalf("%s: unexpected content %q", key, m.Content)
			}
			if i != next[g] {
				t.Fatalf("%s: goroutine %d message %d arrived when %d was expected", key, g, i, next[g])
			}
			next[g]++
		}
		r, err := s.Session(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if r.Turns != int64(len(h)) {
			t.Fatalf("%s: turns = %d, want %d", key, r.Turns, len(h))
		}
	}
	if want := goroutines * perG; total != want {
		t.Fatalf("persisted %d messages, want %d", total, want)
	}
	st := s.Stats()
	if st.Failed != 0 {
		t.Fatalf("%d writes failed", st.Failed)
	}
	t.Logf("group commit: %d calls in %d transactions", st.Ops, st.Batches)
}

// AppendAsync never blocks the caller, reports each outcome once, keeps call
// order, and Close commits whatever is still queued.
func TestAppendAsync_OrderAndFlushOnClose(t *testing.T) {
	forEachBackend(t, testAppendAsync_OrderAndFlushOnClose)
}

func testAppendAsync_OrderAndFlushOnClose(t *testing.T, newDB func(testing.TB) string) {
	path := newDB(t)
	s := mustOpen(t, path)
	const key, n = "telegram:dm:3", 300
	var mu sync.Mutex
	calls := 0
	var firstErr error
	for i := range n {
		s.AppendAsync([]store.Message{{SessionKey: key, Role: store.User, Content: fmt.Sprint(i)}}, func(err error) {
			mu.Lock()
			calls++
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		})
	}
	mustClose(t, s) // returns once everything queued has committed
	mu.Lock()
	if calls != n || firstErr != nil {
		t.Fatalf("done called %d times (want %d), first error %v", calls, n, firstErr)
	}
	mu.Unlock()

	s = mustOpen(t, path)
	h, err := s.History(context.Background(), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != n {
		t.Fatalf("history has %d messages after Close, want %d", len(h), n)
	}
	for i, m := range h {
		if m.Content != fmt.Sprint(i) {
			t.Fatalf("message %d is %q: order lost", i, m.Content)
		}
	}
}

func TestAppendAsync_ReportsRefusal(t *testing.T) { forEachBackend(t, testAppendAsync_ReportsRefusal) }

func testAppendAsync_ReportsRefusal(t *testing.T, newDB func(testing.TB) string) {
	s := mustOpen(t, newDB(t))
	done := make(chan error, 1)
	s.AppendAsync([]store.Message{{SessionKey: "nope", Role: store.User}}, func(err error) { done <- err })
	if err := <-done; !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("AppendAsync(invalid) reported %v, want ErrInvalid", err)
	}
	mustClose(t, s)
	s.AppendAsync([]store.Message{{SessionKey: "web:dm:x", Role: store.User}}, func(err error) { done <- err })
	if err := <-done; !errors.Is(err, store.ErrClosed) {
		t.Fatalf("AppendAsync after Close reported %v, want ErrClosed", err)
	}
}

// A message queued before /new belongs to the old conversation even if it
// has not committed when /new is called: writes apply in call order.
func TestAppendAsync_BeforeNewConversationStaysInOld(t *testing.T) {
	forEachBackend(t, testAppendAsync_BeforeNewConversationStaysInOld)
}

func testAppendAsync_BeforeNewConversationStaysInOld(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const key = "telegram:topic:-100:7"
	done := make(chan error, 1)
	s.AppendAsync([]store.Message{{SessionKey: key, Role: store.User, Content: "before reset"}}, func(err error) { done <- err })
	if _, err := s.NewConversation(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if h, _ := s.History(ctx, key, 0); len(h) != 0 {
		t.Fatalf("new conversation shows %q", contents(h))
	}
	found, err := s.Search(ctx, key, "reset", 5)
	if err != nil || len(found) != 1 || found[0].Conversation != 1 {
		t.Fatalf("Search = %+v, %v; want the message in conversation 1", found, err)
	}
}
