package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

// settle runs Settle and waits for its commit.
func settle(t *testing.T, s *store.Store, st store.Settlement) {
	t.Helper()
	done := make(chan error, 1)
	s.Settle(st, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestInbox_AcceptKeepsTheWholeEnvelopeUntilSettled(t *testing.T) {
	forEachBackend(t, testInbox_AcceptKeepsTheWholeEnvelopeUntilSettled)
}

func testInbox_AcceptKeepsTheWholeEnvelopeUntilSettled(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	s := mustOpen(t, path)
	const key = "telegram:group:-5:u7"
	first := &messages.UserMessage{SessionKey: key, MessageId: "10", SenderId: "7", SenderName: "Ann", Text: "hello", FromVoice: true,
		ReplyToId: "9", Attachments: []*messages.Attachment{{Kind: "voice", MimeType: "audio/ogg", Size: 1234, DurationSecs: 2.5}}}
	seq1, err := s.Accept(ctx, key, first)
	if err != nil {
		t.Fatal(err)
	}
	seq2, err := s.Accept(ctx, key, &messages.UserMessage{SessionKey: key, MessageId: "11", Text: "second"})
	if err != nil || seq2 <= seq1 {
		t.Fatalf("second accept: seq %d after %d, err %v", seq2, seq1, err)
	}
	if _, err := s.Accept(ctx, key, &messages.UserMessage{SessionKey: key, MessageId: "10", Text: "hello"}); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("redelivered message: err = %v, want store.ErrDuplicate", err)
	}

	// A restart reads back the same envelope, in arrival order.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path)
	p, err := s.Pending(ctx, key)
	if err != nil || len(p) != 2 {
		t.Fatalf("pending = %v, %v; want 2", p, err)
	}
	got := p[0].Message
	if !got.GetFromVoice() || got.GetSenderName() != "Ann" || got.GetReplyToId() != "9" || len(got.GetAttachments()) != 1 ||
		got.GetAttachments()[0].GetDurationSecs() != 2.5 || got.GetInboxSeq() != seq1 {
		t.Fatalf("pending[0] lost its envelope: %v", got)
	}
	if p[1].Message.GetText() != "second" {
		t.Fatalf("pending order: %v", p)
	}
	if keys, err := s.Owed(ctx); err != nil || len(keys) != 1 || keys[0] != key {
		t.Fatalf("Owed = %v, %v", keys, err)
	}

	// Settling answers the first, appends the answer and queues two replies
	// in one write; the second input stays pending.
	replies := []*messages.Delivery{{Text: "hi Ann"}, {Kind: messages.DeliveryKind_DELIVERY_KIND_VOICE, Audio: []byte("OggS")}}
	settle(t, s, store.Settlement{Key: key, Inputs: []uint64{seq1}, Outcome: store.Answered,
		History: []store.Message{{Role: store.Assistant, Content: "hi Ann"}}, Replies: replies})
	if replies[0].GetSeq() != 1 || replies[1].GetSeq() != 2 || replies[1].GetIdempotencyKey() != key+"#2" {
		t.Fatalf("reply numbering: %v", replies)
	}
	if p, _ := s.Pending(ctx, key); len(p) != 1 || p[0].Message.GetMessageId() != "11" {
		t.Fatalf("pending after settle: %v", p)
	}
	unsent, err := s.Unsent(ctx, key)
	if err != nil || len(unsent) != 2 || string(unsent[1].GetAudio()) != "OggS" {
		t.Fatalf("unsent = %v, %v", unsent, err)
	}
	if err := s.MarkDelivered(ctx, key, 1, []string{"500"}); err != nil {
		t.Fatal(err)
	}
	if ids, ok, err := s.Delivered(ctx, key, 1); err != nil || !ok || ids != `["500"]` {
		t.Fatalf("Delivered(1) = %q, %v, %v", ids, ok, err)
	}
	if unsent, _ := s.Unsent(ctx, key); len(unsent) != 1 || unsent[0].GetSeq() != 2 {
		t.Fatalf("unsent after delivery: %v", unsent)
	}

	// Numbering continues after a restart; settling twice changes nothing.
	settle(t, s, store.Settlement{Key: key, Inputs: []uint64{seq1}, Outcome: store.Failed, Replies: []*messages.Delivery{{Text: "late"}}})
	if unsent, _ := s.Unsent(ctx, key); len(unsent) != 2 || unsent[1].GetSeq() != 3 {
		t.Fatalf("numbering: %v", unsent)
	}
	// /new leaves pending inputs to the session, which settles them.
	if _, err := s.NewConversation(ctx, key); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Pending(ctx, key); len(p) != 1 {
		t.Fatalf("pending after /new: %v", p)
	}
}

func TestInbox_SettleNamesItsConversation(t *testing.T) {
	forEachBackend(t, testInbox_SettleNamesItsConversation)
}

func testInbox_SettleNamesItsConversation(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const key = "web:dm:a"
	seq, err := s.Accept(ctx, key, &messages.UserMessage{SessionKey: key, MessageId: "1", Text: "old question"})
	if err != nil {
		t.Fatal(err)
	}
	// /new lands while the turn for "old question" is still running.
	if _, err := s.NewConversation(ctx, key); err != nil {
		t.Fatal(err)
	}
	settle(t, s, store.Settlement{Key: key, Conversation: 1, Inputs: []uint64{seq}, Outcome: store.Answered,
		History: []store.Message{{Role: store.Assistant, Content: "old answer"}}})
	h, err := s.History(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 0 {
		t.Fatalf("the old turn's answer leaked into the new conversation: %v", h)
	}
}
