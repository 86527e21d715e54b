package telegram_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithTimeout(context.Background(), d)
}

// ledger records, across adapters, which texts reached hermesd and how often.
type ledger struct {
	mu    sync.Mutex
	count map[string]int
	order map[string][]int // per session, the sequence numbers in arrival order
	total int
}

func newLedger() *ledger { return &ledger{count: map[string]int{}, order: map[string][]int{}} }

// note records m, whose text is "<session tag> <n>".
func (l *ledger) note(m *messages.UserMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count[m.Text]++
	var tag string
	var n int
	fmt.Sscanf(m.Text, "%s %d", &tag, &n)
	l.order[m.SessionKey] = append(l.order[m.SessionKey], n)
	l.total++
}

// check fails unless every one of want arrived exactly once, each session's
// in order.
func (l *ledger) check(t *testing.T, want []string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range want {
		if c := l.count[w]; c != 1 {
			t.Errorf("%q reached hermesd %d times, want exactly once", w, c)
		}
	}
	if l.total != len(want) {
		t.Errorf("%d messages reached hermesd, want %d", l.total, len(want))
	}
	for key, seq := range l.order {
		for i := 1; i < len(seq); i++ {
			if seq[i] <= seq[i-1] {
				t.Errorf("%s: out of order: %v", key, seq)
				break
			}
		}
	}
}

func (l *ledger) waitTotal(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for {
		l.mu.Lock()
		got := l.total
		l.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages arrived", got, n)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter with a deadline
	}
}

// inject sends n numbered texts into each of chats, interleaved.
func inject(srv *telegramtest.Server, chats []int64, from, n int) []string {
	var want []string
	for i := from; i < from+n; i++ {
		for _, c := range chats {
			s := "c" + strconv.FormatInt(c, 10) + " " + strconv.Itoa(i)
			srv.SendText(c, c, s)
			want = append(want, s)
		}
	}
	return want
}

// Graceful restart: Run is stopped while updates are in flight; a new
// adapter on the same store picks up exactly what was not handled.
func TestRestart_StopAndStartLosesAndRepeatsNothing(t *testing.T) {
	srv := telegramtest.NewServer(t)
	st := newStore()
	led := newLedger()
	chats := []int64{11, 12, 13}
	want := inject(srv, chats, 0, 10)

	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st })
	var seen atomic.Int32
	enough := make(chan struct{})
	stopA := run(t, a, func(_ context.Context, m *messages.UserMessage) error {
		time.Sleep(time.Millisecond) // some work, so that polls confirm part of the backlog
		led.note(m)
		if seen.Add(1) == 12 {
			close(enough)
		}
		return nil
	})
	<-enough
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	t.Logf("first adapter handled %d; persisted offset %s; Telegram still holds %d", seen.Load(), st.cursor(t), srv.Pending())
	if srv.Pending() == 0 {
		t.Fatal("the test needs updates left unconfirmed at the restart")
	}

	want = append(want, inject(srv, chats, 10, 5)...)
	b := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st.restarted() })
	run(t, b, func(_ context.Context, m *messages.UserMessage) error { led.note(m); return nil })
	led.waitTotal(t, len(want))
	last := srv.SendText(99, 99, "c99 0") // flush: once it is confirmed, nothing else is coming
	want = append(want, "c99 0")
	if err := srv.WaitConfirmed(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	led.check(t, want)
}

// Kill -9: the process dies inside Inbound, before it accepted the 8th
// message. Its store writes and network stop at that instant. The new
// process must deliver the 8th and everything after, and nothing before.
func TestRestart_KillDuringInboundLosesNothing(t *testing.T) {
	srv := telegramtest.NewServer(t)
	st := newStore()
	net := &killableClient{}
	led := newLedger()
	want := inject(srv, []int64{21}, 0, 20)

	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store, d.HTTPClient = st, net.client() })
	released := make(chan struct{})
	var n atomic.Int32
	stopA := run(t, a, func(ctx context.Context, m *messages.UserMessage) error {
		if n.Add(1) == 8 { // kill -9 now
			st.crash()
			net.dead.Store(true)
			<-released // a dead process does nothing more
			return fmt.Errorf("dead")
		}
		if st.dead.Load() {
			<-released
			return fmt.Errorf("dead")
		}
		led.note(m)
		return nil
	})
	waitFor(t, func() bool { return st.dead.Load() })
	close(released)
	_ = stopA() // reap the corpse's goroutines; it can write nothing any more

	b := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st.restarted() })
	run(t, b, func(_ context.Context, m *messages.UserMessage) error { led.note(m); return nil })
	led.waitTotal(t, len(want))
	last := srv.SendText(21, 21, "c21 20")
	want = append(want, "c21 20")
	if err := srv.WaitConfirmed(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	led.check(t, want)
}

// Kill -9 twice in a row inside Inbound for the same update: the first
// process dies handling the 3rd message, the second dies handling it again
// (its redelivery). The third process must still deliver it: handling an
// interrupted update again must not mark it handled before it was.
func TestRestart_KilledTwiceDuringInboundLosesNothing(t *testing.T) {
	srv := telegramtest.NewServer(t)
	st := newStore()
	led := newLedger()
	want := inject(srv, []int64{23}, 0, 6)

	// die runs a process that delivers messages until the 3rd, and is
	// killed inside Inbound when it gets there.
	die := func(st *store) {
		net := &killableClient{}
		a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store, d.HTTPClient = st, net.client() })
		released := make(chan struct{})
		stop := run(t, a, func(ctx context.Context, m *messages.UserMessage) error {
			if m.Text == "c23 3" && !st.dead.Load() { // kill -9 now
				st.crash()
				net.dead.Store(true)
			}
			if st.dead.Load() {
				<-released // a dead process does nothing more
				return fmt.Errorf("dead")
			}
			led.note(m)
			return nil
		})
		waitFor(t, func() bool { return st.dead.Load() })
		close(released)
		_ = stop()
	}
	die(st)
	st = st.restarted()
	die(st)

	c := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st.restarted() })
	run(t, c, func(_ context.Context, m *messages.UserMessage) error { led.note(m); return nil })
	led.waitTotal(t, len(want))
	last := srv.SendText(23, 23, "c23 6")
	want = append(want, "c23 6")
	if err := srv.WaitConfirmed(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	led.check(t, want)
}

// Kill -9 between updates: after the 5th was accepted and marked handled,
// before anything else happened. Nothing is lost and nothing repeats.
func TestRestart_KillBetweenUpdatesRepeatsNothing(t *testing.T) {
	srv := telegramtest.NewServer(t)
	st := newStore()
	net := &killableClient{}
	led := newLedger()
	want := inject(srv, []int64{31}, 0, 12)

	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store, d.HTTPClient = st, net.client() })
	released := make(chan struct{})
	stopA := run(t, a, func(ctx context.Context, m *messages.UserMessage) error {
		if m.Text == "c31 6" {
			eventually(func() bool { return st.dead.Load() }) // the kill comes first
		}
		if st.dead.Load() {
			<-released
			return fmt.Errorf("dead")
		}
		led.note(m)
		if m.Text == "c31 5" {
			// Let this one be marked handled, then die.
			go func() {
				if !eventually(func() bool { return doneMarked(st, 6) }) {
					t.Error("update 6 was never marked handled")
				}
				st.crash()
				net.dead.Store(true)
			}()
		}
		return nil
	})
	waitFor(t, func() bool { return st.dead.Load() })
	close(released)
	_ = stopA()

	b := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st.restarted() })
	run(t, b, func(_ context.Context, m *messages.UserMessage) error { led.note(m); return nil })
	led.waitTotal(t, len(want))
	last := srv.SendText(31, 31, "c31 12")
	want = append(want, "c31 12")
	if err := srv.WaitConfirmed(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	led.check(t, want)
}

// doneMarked reports whether update id was recorded as handled.
func doneMarked(st *store, id int) bool {
	st.d.mu.Lock()
	defer st.d.mu.Unlock()
	suffix := fmt.Sprintf(":%d:done", id)
	for k := range st.d.seen {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// The one window the design leaves: a crash after Inbound accepted an update
// and before it was marked handled. The update comes again — with the same
// message id, so hermesd can recognise it — and is never lost.
func TestRestart_KillAfterAcceptRedeliversWithSameMessageID(t *testing.T) {
	srv := telegramtest.NewServer(t)
	st := newStore()
	net := &killableClient{}
	inject(srv, []int64{41}, 0, 3)

	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store, d.HTTPClient = st, net.client() })
	var first *messages.UserMessage
	released := make(chan struct{})
	stopA := run(t, a, func(ctx context.Context, m *messages.UserMessage) error {
		if st.dead.Load() {
			<-released
			return fmt.Errorf("dead")
		}
		if m.Text == "c41 1" {
			first = m
			st.crash() // accepted, then killed before returning
			net.dead.Store(true)
		}
		return nil
	})
	waitFor(t, func() bool { return st.dead.Load() })
	close(released)
	_ = stopA()

	box := newInbox()
	b := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Store = st.restarted() })
	run(t, b, box.Inbound)
	got := box.wait(t, 2)
	if got[0].Text != "c41 1" || got[0].MessageId != first.MessageId || got[0].SessionKey != first.SessionKey {
		t.Errorf("redelivered %+v, want the interrupted %q with message id %s", got[0], first.Text, first.MessageId)
	}
	if got[1].Text != "c41 2" {
		t.Errorf("then %q, want c41 2", got[1].Text)
	}
}

// waitFor polls cond with a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatal("condition never held")
	}
}

// eventually polls cond until it holds or testWait passed.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}
