package actors

import (
	"context"
	"maps"
	"strings"
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
	// Positive control: a later message's answer comes after anything the
	// redelivery could have caused (one session, one order).
	h.send(t, s, "m2", "later")
	h.rec.waitFor(t, "the later reply", lastFor("m2"))
	if n := countAnswers(h.rec.all(), "m1"); n != 1 || calls.Load() != 2 {
		t.Fatalf("m1 answered %d times with %d model calls, want 1 and 2: %s", n, calls.Load(), describe(h.rec.all()))
	}
}

// TestRecovery_AnswersWhatACrashLeftPending: messages accepted by a daemon
// that died before answering are answered when the next one starts, without
// any redelivery, in arrival order and with their whole envelope.
func TestRecovery_AnswersWhatACrashLeftPending(t *testing.T) {
	ctx := context.Background()
	mem := NewMemory()
	s := webSession("crashed")
	// What a crashed daemon left: two messages accepted, never answered.
	for _, m := range []*messages.UserMessage{
		{SessionKey: s.Key(), MessageId: "m1", Text: "first", SenderId: "ann"},
		{SessionKey: s.Key(), MessageId: "m2", Text: "second", FromVoice: true},
	} {
		if _, err := mem.Accept(ctx, s, m); err != nil {
			t.Fatal(err)
		}
	}
	saw := make(chan []string, 4)
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		var users []string
		for _, msg := range req.Messages {
			if msg.Role == "user" {
				users = append(users, msg.Content)
			}
		}
		saw <- users
		return model.Response{Message: model.Message{Content: "both answered"}}, nil
	})
	h := startWith(t, m, testConfig(), func(d *Deps) { d.Persist = mem })
	got := h.rec.waitFor(t, "the pending messages answered at start", lastFor("m2"))
	users := <-saw
	if len(users) != 2 || users[0] != "first" || !strings.Contains(users[1], "voice message") || !strings.HasSuffix(users[1], "second") {
		t.Fatalf("the model saw %q; want first, then the voice transcript second", users)
	}
	// m2 came as voice and this runtime has no speech engine: the text, then
	// a note saying so.
	if len(got) != 2 || got[0].d.GetText() != "both answered" || !got[0].d.AnswersMessage("m1") || !got[0].d.AnswersMessage("m2") {
		t.Fatalf("deliveries: %s", describe(got))
	}
	waitOutcomes(t, mem, s, map[string]Outcome{"m1": Answered, "m2": Answered})
}

// waitOutcomes waits until the recorded outcomes of s are want.
func waitOutcomes(t *testing.T, mem *Memory, s messages.Session, want map[string]Outcome) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := mem.Outcomes(s)
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outcomes of %s = %v, want %v", s.Key(), got, want)
		}
		time.Sleep(5 * time.Millisecond) // polling the store; bounded by deadline
	}
}
