package telegram_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// Many chats, many messages each, interleaved: every chat's messages reach
// hermesd in the order they were sent, and Inbound is called for different
// chats at the same time.
func TestOrder_PerChatUnderConcurrency(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	led := newLedger()
	var mu sync.Mutex
	active, peak := 0, 0
	run(t, a, func(_ context.Context, m *messages.UserMessage) error {
		mu.Lock()
		active++
		peak = max(peak, active)
		mu.Unlock()
		time.Sleep(time.Millisecond) // a little work, so that chats overlap
		led.note(m)
		mu.Lock()
		active--
		mu.Unlock()
		return nil
	})
	var chats []int64
	for c := int64(1); c <= 40; c++ {
		chats = append(chats, c)
	}
	want := inject(srv, chats, 0, 15)
	led.waitTotal(t, len(want))
	led.check(t, want)
	if peak < 2 {
		t.Errorf("Inbound never ran for two chats at once (peak %d)", peak)
	}
}

// One chat whose hermesd side is stuck holds up only itself.
func TestOrder_SlowChatStallsNoOther(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	release := make(chan struct{})
	box.hook = func(m *messages.UserMessage) error {
		if m.SessionKey == "telegram:dm:1" {
			<-release
		}
		return nil
	}
	run(t, a, box.Inbound)
	srv.SendText(1, 1, "stuck 0")
	srv.SendText(1, 1, "stuck 1")
	for c := int64(2); c <= 20; c++ {
		srv.SendText(c, c, "free")
	}
	box.wait(t, 19)
	close(release)
	got := box.wait(t, 21)
	if got[19].Text != "stuck 0" || got[20].Text != "stuck 1" {
		t.Errorf("stuck chat delivered %q, %q", got[19].Text, got[20].Text)
	}
	for _, m := range got[:19] {
		if m.SessionKey == "telegram:dm:1" {
			t.Errorf("stuck chat's message arrived early")
		}
	}
}

// 500 chats write at once; each reply lands in its own chat.
func TestFanOut_500ChatsEachReplyInItsOwnChat(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	const chats = 500
	var wg sync.WaitGroup
	errs := make(chan error, chats)
	run(t, a, func(ctx context.Context, m *messages.UserMessage) error {
		s, err := messages.ParseKey(m.SessionKey)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Send(context.Background(), s, text("re: "+m.Text)); err != nil {
				errs <- err
			}
		}()
		return nil
	})
	for c := int64(1); c <= chats; c++ {
		srv.SendText(1000+c, 1000+c, "from "+strconv.FormatInt(1000+c, 10))
	}
	srv.RequireCalls(t, "sendMessage", chats)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for c := int64(1); c <= chats; c++ {
		chat := 1000 + c
		sent := srv.SentTo(chat)
		if len(sent) != 1 || sent[0].Fields["text"] != "re: from "+strconv.FormatInt(chat, 10) {
			t.Fatalf("chat %d got %+v", chat, sent)
		}
	}
}

// With pacing on, a private chat never gets more than one message a second
// and the bot never more than 30 in any second, while chats that are not
// busy are not held up by the busy one.
func TestPacing_LimitsAreNeverExceeded(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 3 s")
	}
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, func(c *telegram.Config, _ *telegram.Deps) { c.RateLimit = true })
	ctx := ctxT(t)
	var wg sync.WaitGroup
	start := time.Now()
	// One busy chat: a 4-part answer.
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := a.Send(ctx, dm(7), text(strings.Repeat(strings.Repeat("x", 100)+"\n\n", 150))); err != nil {
			t.Error(err)
		}
	}()
	// And 45 other chats, one message each.
	quick := make(chan time.Duration, 45)
	for c := int64(100); c < 145; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Send(ctx, dm(c), text("hi")); err != nil {
				t.Error(err)
			}
			quick <- time.Since(start)
		}()
	}
	wg.Wait()
	close(quick)

	calls := srv.CallsTo("sendMessage")
	if len(calls) != 4+45 {
		t.Fatalf("%d messages", len(calls))
	}
	var busy []time.Time
	var all []time.Time
	for _, c := range calls {
		all = append(all, c.Time)
		if c.ChatID == 7 {
			busy = append(busy, c.Time)
		}
	}
	for i := 1; i < len(busy); i++ {
		if gap := busy[i].Sub(busy[i-1]); gap < 950*time.Millisecond {
			t.Errorf("private chat got messages %v apart", gap)
		}
	}
	// Any window of a second (less 50 ms of network jitter) holds at most 30.
	for i := range all {
		n := 0
		for j := i; j < len(all) && all[j].Sub(all[i]) < 950*time.Millisecond; j++ {
			n++
		}
		if n > 30 {
			t.Fatalf("%d messages within a second from %v", n, all[i].Sub(start))
		}
	}
	// 45+1 first messages at 30/s take about 1.5 s; the busy chat's later
	// parts must not push the others back.
	for d := range quick {
		if d > 2500*time.Millisecond {
			t.Errorf("an idle chat waited %v", d)
		}
	}
}
