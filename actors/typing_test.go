package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// indicatingRecorder is a recorder that also shows chat actions.
type indicatingRecorder struct {
	*recorder
	mu      sync.Mutex
	actions []string
}

func (r *indicatingRecorder) Indicate(_ context.Context, s messages.Session, a platforms.ChatAction) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions = append(r.actions, s.Key()+" "+string(a))
	return nil
}

func (r *indicatingRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.actions...)
}

// TestTyping_ShownOnlyForSlowTurns: a turn that answers at once shows no
// typing indicator (no flicker, no wasted API call); a slow one shows it,
// and "recording" when the reply will be spoken.
func TestTyping_ShownOnlyForSlowTurns(t *testing.T) {
	release := make(chan struct{})
	m := modelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		if lastUser(req) == "slow" {
			<-release
		}
		return model.Response{Message: model.Message{Content: "done"}}, nil
	})
	cfg := testConfig()
	cfg.TypingDelay, cfg.TypingRefresh = 50*time.Millisecond, 50*time.Millisecond
	tg := &indicatingRecorder{recorder: newRecorder(messages.Telegram)}
	h := startWith(t, m, cfg, func(d *Deps) { d.Adapters = append(d.Adapters, tg) })
	s := messages.MustSession(messages.Telegram, messages.DM, "5", "", "")
	send := func(id, text string) {
		if err := h.rt.Receive(context.Background(), &messages.UserMessage{SessionKey: s.Key(), MessageId: id, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	send("f1", "fast")
	tg.waitFor(t, "fast reply", lastFor("f1"))
	// A bounded wait for what must not happen (twice the typing delay); the
	// slow turn below is the positive control.
	time.Sleep(2 * cfg.TypingDelay)
	if a := tg.seen(); len(a) != 0 {
		t.Fatalf("a fast turn showed %v", a)
	}
	send("s1", "slow")
	deadline := time.Now().Add(5 * time.Second)
	for len(tg.seen()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	tg.waitFor(t, "slow reply", lastFor("s1"))
	a := tg.seen()
	if len(a) < 2 || a[0] != s.Key()+" typing" {
		t.Fatalf("slow turn actions %v: want typing, refreshed", a)
	}
}
