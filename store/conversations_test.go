package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

// compact runs CompactAsync and waits for its outcome.
func compact(t *testing.T, s *store.Store, key string, upto int64, text string) (store.Summary, []store.Message) {
	t.Helper()
	type res struct {
		sum  store.Summary
		msgs []store.Message
		err  error
	}
	ch := make(chan res, 1)
	s.CompactAsync(key, store.Fence{}, 0, upto, text, 0, func(sum store.Summary, msgs []store.Message, err error) { ch <- res{sum, msgs, err} })
	r := <-ch
	if r.err != nil {
		t.Fatalf("compact: %v", r.err)
	}
	return r.sum, r.msgs
}

func undo(s *store.Store, key string, dropUser bool) (int, []store.Message, error) {
	type res struct {
		n    int
		msgs []store.Message
		err  error
	}
	ch := make(chan res, 1)
	s.UndoAsync(key, store.Fence{}, 0, dropUser, 0, func(n int, _ store.Summary, msgs []store.Message, err error) { ch <- res{n, msgs, err} })
	r := <-ch
	return r.n, r.msgs, r.err
}

func appendN(t *testing.T, s *store.Store, key string, msgs ...store.Message) {
	t.Helper()
	for i := range msgs {
		msgs[i].SessionKey = key
	}
	if err := s.Append(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

func TestCompact_SummaryHidesWhatItCoversAndSurvivesRestart(t *testing.T) {
	forEachBackend(t, testCompact_SummaryHidesWhatItCoversAndSurvivesRestart)
}

func testCompact_SummaryHidesWhatItCoversAndSurvivesRestart(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	const key = "web:dm:alice"
	s := mustOpen(t, path)
	appendN(t, s, key,
		store.Message{Role: store.User, Content: "one"}, store.Message{Role: store.Assistant, Content: "1"},
		store.Message{Role: store.User, Content: "two"}, store.Message{Role: store.Assistant, Content: "2"})
	_, all, err := s.ConversationContext(ctx, key, 0, 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("context before: %v %v", all, err)
	}
	sum, msgs := compact(t, s, key, all[1].ID, "they said one")
	if sum.Text != "they said one" || sum.UpTo != all[1].ID || contents(msgs) != "two 2" {
		t.Fatalf("after compact: %+v %q", sum, contents(msgs))
	}
	// An older summary does not replace a newer one.
	sum, _ = compact(t, s, key, all[0].ID, "stale")
	if sum.Text != "they said one" {
		t.Fatalf("a summary moved back: %+v", sum)
	}
	mustClose(t, s)

	s = mustOpen(t, path)
	sum, msgs, err = s.ConversationContext(ctx, key, 0, 0)
	if err != nil || sum.Text != "they said one" || contents(msgs) != "two 2" {
		t.Fatalf("after restart: %+v %q %v", sum, contents(msgs), err)
	}
	// Another session sees nothing of it, and /new starts without it.
	if sum, msgs, _ := s.ConversationContext(ctx, "web:dm:bob", 0, 0); sum.Text != "" || len(msgs) != 0 {
		t.Fatalf("another session sees %+v %v", sum, msgs)
	}
	if _, err := s.NewConversation(ctx, key); err != nil {
		t.Fatal(err)
	}
	if sum, msgs, _ := s.ConversationContext(ctx, key, 0, 0); sum.Text != "" || len(msgs) != 0 {
		t.Fatalf("a new conversation has %+v %v", sum, msgs)
	}
}

func TestCompact_NeverHidesAPendingInput(t *testing.T) {
	forEachBackend(t, testCompact_NeverHidesAPendingInput)
}

func testCompact_NeverHidesAPendingInput(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const key = "web:dm:alice"
	appendN(t, s, key, store.Message{Role: store.User, Content: "one"}, store.Message{Role: store.Assistant, Content: "1"})
	if _, err := s.Accept(ctx, key, &messages.UserMessage{SessionKey: key, MessageId: "m2", Text: "waiting"}); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, key, store.Message{Role: store.Assistant, Content: "late answer"})
	_, all, _ := s.ConversationContext(ctx, key, 0, 0)
	// The pending input is left out of the context...
	if contents(all) != "one 1 late answer" {
		t.Fatalf("context = %q", contents(all))
	}
	// ...and a summary up to the last message stops below it.
	sum, msgs := compact(t, s, key, all[2].ID, "sum")
	if sum.UpTo >= all[2].ID || contents(msgs) != "late answer" {
		t.Fatalf("summary %+v hides a pending input; context %q", sum, contents(msgs))
	}
	settle(t, s, store.Settlement{Key: key, Inputs: []uint64{1}, Outcome: store.Answered})
	if _, msgs, _ := s.ConversationContext(ctx, key, 0, 0); contents(msgs) != "waiting late answer" {
		t.Fatalf("after settling, context = %q", contents(msgs))
	}
}

func TestUndo_DropsTheLastExchangeOnly(t *testing.T) {
	forEachBackend(t, testUndo_DropsTheLastExchangeOnly)
}

func testUndo_DropsTheLastExchangeOnly(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const key = "web:dm:alice"
	appendN(t, s, key,
		store.Message{Role: store.User, Content: "one"}, store.Message{Role: store.Assistant, Content: "1"},
		store.Message{Role: store.User, Content: "two"}, store.Message{Role: store.Assistant, Content: "calling"},
		store.Message{Role: store.Tool, Content: "result"}, store.Message{Role: store.Assistant, Content: "2"})
	appendN(t, s, "web:dm:bob", store.Message{Role: store.User, Content: "bob's"})
	// Without the user message: what /retry replaces.
	n, msgs, err := undo(s, key, false)
	if err != nil || n != 3 || contents(msgs) != "one 1 two" {
		t.Fatalf("undo answer: %d %q %v", n, contents(msgs), err)
	}
	n, msgs, err = undo(s, key, true)
	if err != nil || n != 1 || contents(msgs) != "one 1" {
		t.Fatalf("undo exchange: %d %q %v", n, contents(msgs), err)
	}
	// Nothing after a summary: nothing to undo.
	_, all, _ := s.ConversationContext(ctx, key, 0, 0)
	compact(t, s, key, all[1].ID, "sum")
	if _, _, err := undo(s, key, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("undo under a summary: %v, want ErrNotFound", err)
	}
	if _, msgs, _ := s.ConversationContext(ctx, "web:dm:bob", 0, 0); contents(msgs) != "bob's" {
		t.Fatalf("another session's history changed: %q", contents(msgs))
	}
	// Search no longer finds what was undone.
	hits, err := s.Search(ctx, key, "result", 10)
	if err != nil || len(hits) != 0 {
		t.Fatalf("search finds undone messages: %v %v", hits, err)
	}
}

func TestConversations_ListTitleResumeStayPerSession(t *testing.T) {
	forEachBackend(t, testConversations_ListTitleResumeStayPerSession)
}

func testConversations_ListTitleResumeStayPerSession(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const alice, bob = "web:dm:alice", "web:dm:bob"
	appendN(t, s, alice, store.Message{Role: store.User, Content: "apple"}, store.Message{Role: store.Assistant, Content: "a"})
	if err := s.SetTitle(ctx, alice, 0, "Fruit"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewConversation(ctx, alice); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, alice, store.Message{Role: store.User, Content: "banana"})
	appendN(t, s, bob, store.Message{Role: store.User, Content: "bob's own"})

	list, err := s.Conversations(ctx, alice, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Number != 2 || list[0].Messages != 1 || list[1].Number != 1 || list[1].Title != "Fruit" || list[1].Messages != 2 {
		t.Fatalf("alice's conversations = %+v", list)
	}
	if title, _ := s.Title(ctx, alice, 0); title != "" {
		t.Fatalf("the new conversation's title = %q", title)
	}
	if err := s.ResumeConversation(ctx, alice, 1); err != nil {
		t.Fatal(err)
	}
	if _, msgs, _ := s.ConversationContext(ctx, alice, 0, 0); contents(msgs) != "apple a" {
		t.Fatalf("after /resume 1: %q", contents(msgs))
	}
	if title, _ := s.Title(ctx, alice, 0); title != "Fruit" {
		t.Fatalf("the resumed conversation's title = %q", title)
	}
	// /new after going back starts past every number used.
	if conv, err := s.NewConversation(ctx, alice); err != nil || conv != 3 {
		t.Fatalf("/new after /resume = %d, %v; want 3", conv, err)
	}
	// Bob reaches none of it: his conversation 2 does not exist.
	if err := s.ResumeConversation(ctx, bob, 2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob resuming alice's number: %v", err)
	}
	if list, _ := s.Conversations(ctx, bob, 0); len(list) != 1 || list[0].Messages != 1 {
		t.Fatalf("bob's conversations = %+v", list)
	}
}
