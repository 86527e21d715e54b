package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// TestRedelivery_NeverStartsASecondTurn: a platform that sends a message
// again (Telegram after a kill -9 between accepting an update and recording
// it) gets no second answer.
func TestRedelivery_NeverStartsASecondTurn(t *testing.T) {
	var calls atomic.Int32
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		calls.Add(1)
		return model.Response{Message: model.Message{Content: "answer to " + lastUser(req)}}, nil
	})
	h := startRuntime(t, m, testConfig())
	s := webSession("again")
	h.send(t, s, "m1", "hello")
	h.rec.waitFor(t, "reply", lastFor("m1"))
	h.send(t, s, "m1", "hello") // the same message, redelivered
	time.Sleep(200 * time.Millisecond)
	if n := len(h.rec.all()); n != 1 || calls.Load() != 1 {
		t.Fatalf("redelivery produced %d deliveries and %d model calls, want 1 and 1: %s", n, calls.Load(), describe(h.rec.all()))
	}
}

// TestRedelivery_AnswersAMessageThatWasNeverAnswered: the crash came after
// the message was stored but before its turn ran; the redelivery makes the
// session answer it, once.
func TestRedelivery_AnswersAMessageThatWasNeverAnswered(t *testing.T) {
	h := startRuntime(t, echoModel(), testConfig())
	s := webSession("crashed")
	// What a crashed daemon left: the message stored, never routed.
	if err := h.persist.AppendUser(context.Background(), s, &messages.UserMessage{SessionKey: s.Key(), MessageId: "m1", Text: "lost?"}); err != nil {
		t.Fatal(err)
	}
	h.send(t, s, "m1", "lost?")
	got := h.rec.waitFor(t, "the stored message answered", lastFor("m1"))
	if len(got) != 1 || got[0].d.GetText() != "echo: lost?" {
		t.Fatalf("deliveries: %s", describe(got))
	}
}
