package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

func TestLeases_ClaimRenewExpireTakeOver(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		ctx := context.Background()
		clk := newClock()
		s := mustOpen(t, newDB(t), store.WithClock(clk.Now))
		const key = "telegram:dm:1"

		if _, err := s.LeaseOf(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("LeaseOf a never-claimed key: %v, want ErrNotFound", err)
		}
		e1, err := s.ClaimLease(ctx, key, "a#1", 10*time.Second)
		if err != nil || e1 != 1 {
			t.Fatalf("first claim: epoch %d, %v; want 1", e1, err)
		}
		// Claiming what it holds renews it, with the same epoch.
		clk.Advance(5 * time.Second)
		if e, err := s.ClaimLease(ctx, key, "a#1", 10*time.Second); err != nil || e != e1 {
			t.Fatalf("re-claim by the holder: epoch %d, %v; want %d", e, err, e1)
		}
		// Another owner is refused while it is held (now until +15 s).
		clk.Advance(9 * time.Second)
		if _, err := s.ClaimLease(ctx, key, "b#1", 10*time.Second); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("claim of a held lease: %v, want ErrLeaseHeld", err)
		}
		l, err := s.LeaseOf(ctx, key)
		if err != nil || l.Owner != "a#1" || l.Epoch != 1 || !l.HeldAt(clk.Now()) {
			t.Fatalf("LeaseOf = %+v, %v", l, err)
		}
		if err := s.RenewLease(ctx, key, store.Fence{Owner: "a#1", Epoch: 1}, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		// Renewed to +24 s: still held at +23 s, free at +24 s.
		clk.Advance(9 * time.Second)
		if _, err := s.ClaimLease(ctx, key, "b#1", 10*time.Second); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("claim before the renewed expiry: %v, want ErrLeaseHeld", err)
		}
		clk.Advance(time.Second)
		e2, err := s.ClaimLease(ctx, key, "b#1", 10*time.Second)
		if err != nil || e2 != 2 {
			t.Fatalf("claim of an expired lease: epoch %d, %v; want 2", e2, err)
		}
		// The old holder has lost it for good.
		if err := s.RenewLease(ctx, key, store.Fence{Owner: "a#1", Epoch: 1}, 10*time.Second); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("renew of a lost lease: %v, want ErrFenced", err)
		}
		if err := s.ReleaseLease(ctx, key, store.Fence{Owner: "a#1", Epoch: 1}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("release of a lost lease: %v, want ErrFenced", err)
		}
		if ls, err := s.Leases(ctx, ""); err != nil || len(ls) != 1 || ls[0].Owner != "b#1" || ls[0].Epoch != 2 {
			t.Fatalf("Leases = %+v, %v", ls, err)
		}
		// Released, it is free at once, and the next claim (even by the
		// same owner) gets the next epoch.
		if err := s.ReleaseLease(ctx, key, store.Fence{Owner: "b#1", Epoch: 2}); err != nil {
			t.Fatal(err)
		}
		if ls, err := s.Leases(ctx, "b#1"); err != nil || len(ls) != 0 {
			t.Fatalf("Leases after release = %+v, %v", ls, err)
		}
		if e, err := s.ClaimLease(ctx, key, "b#1", 10*time.Second); err != nil || e != 3 {
			t.Fatalf("claim after release: epoch %d, %v; want 3", e, err)
		}

		for _, bad := range []struct {
			key, owner string
			ttl        time.Duration
		}{{"", "a", time.Second}, {key, " ", time.Second}, {key, "a", 0}} {
			if _, err := s.ClaimLease(ctx, bad.key, bad.owner, bad.ttl); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("ClaimLease(%q, %q, %v) = %v, want ErrInvalid", bad.key, bad.owner, bad.ttl, err)
			}
		}
	})
}

// Two stores on one database race for the same leases: each key ends with
// exactly one winner per epoch.
func TestLeases_ConcurrentClaimsHaveOneWinner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		ctx := context.Background()
		db := newDB(t)
		a, b := mustOpen(t, db), mustOpen(t, db)
		const keys = 40
		type win struct {
			owner string
			epoch uint64
		}
		results := make(chan win, 2*keys)
		errs := make(chan error, 2*keys)
		for _, st := range []struct {
			s     *store.Store
			owner string
		}{{a, "a"}, {b, "b"}} {
			go func() {
				for i := range keys {
					e, err := st.s.ClaimLease(ctx, fmt.Sprintf("web:dm:%d", i), st.owner, time.Minute)
					switch {
					case err == nil:
						results <- win{st.owner + fmt.Sprint(i), e}
					case errors.Is(err, store.ErrLeaseHeld):
						results <- win{}
					default:
						errs <- err
					}
				}
			}()
		}
		won := 0
		for range 2 * keys {
			select {
			case w := <-results:
				if w.owner != "" {
					won++
					if w.epoch != 1 {
						t.Errorf("%s won epoch %d, want 1", w.owner, w.epoch)
					}
				}
			case err := <-errs:
				t.Fatal(err)
			}
		}
		if won != keys {
			t.Fatalf("%d claims won for %d keys", won, keys)
		}
	})
}

// A stale activation's settlement writes nothing and fails alone; the
// owner's settlement, committed in the same group commit, is unaffected.
func TestFence_StaleSettleWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		ctx := context.Background()
		clk := newClock()
		s := mustOpen(t, newDB(t), store.WithClock(clk.Now))
		const key, other = "telegram:dm:7", "telegram:dm:8"
		old, err := s.ClaimLease(ctx, key, "m1#1", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := s.Accept(ctx, key, &messages.UserMessage{SessionKey: key, MessageId: "1", Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		otherSeq, err := s.Accept(ctx, other, &messages.UserMessage{SessionKey: other, MessageId: "1", Text: "hey"})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Second)
		cur, err := s.ClaimLease(ctx, key, "m2#1", time.Minute)
		if err != nil || cur != old+1 {
			t.Fatalf("take-over: epoch %d, %v", cur, err)
		}
		otherEpoch, err := s.ClaimLease(ctx, other, "m1#2", time.Minute)
		if err != nil {
			t.Fatal(err)
		}

		// Hold the writer in a settlement's done so the next two queue up and
		// commit as one batch.
		hold, held := make(chan struct{}), make(chan struct{})
		s.Settle(store.Settlement{Key: other}, func(error) { close(held); <-hold })
		<-held
		before := s.Stats()
		stale, good := make(chan error, 1), make(chan error, 1)
		s.Settle(store.Settlement{Key: key, Inputs: []uint64{seq}, Outcome: store.Answered, Fence: store.Fence{Owner: "m1#1", Epoch: old},
			History: []store.Message{{Role: store.Assistant, Content: "stale answer"}},
			Replies: []*messages.Delivery{{Text: "stale answer"}}}, func(err error) { stale <- err })
		s.Settle(store.Settlement{Key: other, Inputs: []uint64{otherSeq}, Outcome: store.Answered, Fence: store.Fence{Owner: "m1#2", Epoch: otherEpoch},
			History: []store.Message{{Role: store.Assistant, Content: "fresh answer"}},
			Replies: []*messages.Delivery{{Text: "fresh answer"}}}, func(err error) { good <- err })
		close(hold)
		if err := <-stale; !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale settle: %v, want ErrFenced", err)
		}
		if err := <-good; err != nil {
			t.Fatalf("owner's settle in the same batch: %v", err)
		}
		after := s.Stats()
		if after.Batches-before.Batches != 1 || after.Fenced-before.Fenced != 1 {
			t.Fatalf("batches %d, fenced %d; want the two settlements in one batch, one fenced",
				after.Batches-before.Batches, after.Fenced-before.Fenced)
		}

		// Nothing of the stale settlement exists: the input is still pending,
		// no reply is queued, the history has only the question.
		if p, err := s.Pending(ctx, key); err != nil || len(p) != 1 {
			t.Fatalf("pending after a fenced settle = %v, %v; want the input still pending", p, err)
		}
		if u, err := s.Unsent(ctx, key); err != nil || len(u) != 0 {
			t.Fatalf("unsent after a fenced settle = %v, %v", u, err)
		}
		if h, err := s.History(ctx, key, 0); err != nil || len(h) != 1 {
			t.Fatalf("history after a fenced settle = %v, %v", h, err)
		}
		if u, err := s.Unsent(ctx, other); err != nil || len(u) != 1 || u[0].GetText() != "fresh answer" {
			t.Fatalf("owner's reply = %v, %v", u, err)
		}

		// The new owner settles it, and its outbox numbering is its own.
		settle(t, s, store.Settlement{Key: key, Inputs: []uint64{seq}, Outcome: store.Answered, Fence: store.Fence{Owner: "m2#1", Epoch: cur},
			Replies: []*messages.Delivery{{Text: "answer"}}})
		u, err := s.Unsent(ctx, key)
		if err != nil || len(u) != 1 || u[0].GetSeq() != 1 {
			t.Fatalf("new owner's reply = %v, %v", u, err)
		}
	})
}

// Every session write made with a fenced context is refused once the lease
// moved, and works under the current fence or with none.
func TestFence_ContextFencesSessionWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		ctx := context.Background()
		clk := newClock()
		s := mustOpen(t, newDB(t), store.WithClock(clk.Now))
		const key = "discord:thread:1:2"
		e1, err := s.ClaimLease(ctx, key, "m1", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		mine := store.WithFence(ctx, store.Fence{Owner: "m1", Epoch: e1})
		if store.FenceOf(mine) != (store.Fence{Owner: "m1", Epoch: e1}) || !store.FenceOf(ctx).IsZero() {
			t.Fatal("FenceOf does not return the context's fence")
		}
		if err := s.SetVoiceMode(mine, key, messages.VoiceOff); err != nil {
			t.Fatalf("write under the current fence: %v", err)
		}
		settle(t, s, store.Settlement{Key: key, Replies: []*messages.Delivery{{Text: "r"}}, Fence: store.Fence{Owner: "m1", Epoch: e1}})

		clk.Advance(2 * time.Second)
		e2, err := s.ClaimLease(ctx, key, "m2", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		writes := map[string]func(context.Context) error{
			"SetVoiceMode":  func(c context.Context) error { return s.SetVoiceMode(c, key, messages.VoiceTTS) },
			"SetBusyPolicy": func(c context.Context) error { return s.SetBusyPolicy(c, key, messages.Queue) },
			"NewConversation": func(c context.Context) error {
				_, err := s.NewConversation(c, key)
				return err
			},
			"MarkDelivered": func(c context.Context) error { return s.MarkDelivered(c, key, 1, []string{"p1"}) },
			"Append": func(c context.Context) error {
				return s.Append(c, store.Message{SessionKey: key, Role: store.Assistant, Content: "x"})
			},
			"PutJob": func(c context.Context) error {
				return s.PutJob(c, store.Job{ID: "j", SessionKey: key, Schedule: "in 1m", Prompt: "p"})
			},
			"SetTitle":        func(c context.Context) error { return s.SetTitle(c, key, 0, "t") },
			"SetSessionModel": func(c context.Context) error { return s.SetSessionModel(c, key, "spare") },
		}
		for name, w := range writes {
			if err := w(mine); !errors.Is(err, store.ErrFenced) {
				t.Errorf("%s under a stale fence: %v, want ErrFenced", name, err)
			}
		}
		// /resume, compression and /undo of a session that lost its lease.
		if err := s.ResumeConversation(mine, key, 1); !errors.Is(err, store.ErrFenced) {
			t.Errorf("ResumeConversation under a stale fence: %v, want ErrFenced", err)
		}
		stale := store.Fence{Owner: "m1", Epoch: e1}
		errc := make(chan error, 2)
		s.CompactAsync(key, stale, 0, 1, "summary", 0, func(_ store.Summary, _ []store.Message, err error) { errc <- err })
		s.UndoAsync(key, stale, 0, true, 0, func(_ int, _ store.Summary, _ []store.Message, err error) { errc <- err })
		for range 2 {
			if err := <-errc; !errors.Is(err, store.ErrFenced) {
				t.Errorf("compaction or undo under a stale fence: %v, want ErrFenced", err)
			}
		}
		if m, _ := s.SessionModel(ctx, key); m != "" {
			t.Errorf("a stale /model write changed the model to %q", m)
		}
		rec, err := s.Session(ctx, key)
		if err != nil || rec.VoiceMode != messages.VoiceOff || rec.BusyPolicy != messages.Interrupt || rec.Conversation != 1 {
			t.Fatalf("stale writes changed the session: %+v, %v", rec, err)
		}
		if _, ok, err := s.Delivered(ctx, key, 1); err != nil || ok {
			t.Fatalf("stale MarkDelivered recorded a receipt: %v, %v", ok, err)
		}
		if h, _ := s.History(ctx, key, 0); len(h) != 0 {
			t.Fatalf("stale Append wrote history: %v", h)
		}
		if j, _ := s.JobsForSession(ctx, key); len(j) != 0 {
			t.Fatalf("stale PutJob wrote a job: %v", j)
		}

		theirs := store.WithFence(ctx, store.Fence{Owner: "m2", Epoch: e2})
		for name, w := range writes {
			if err := w(theirs); err != nil {
				t.Errorf("%s under the current fence: %v", name, err)
			}
		}
		if err := s.RemoveJob(mine, key, "j"); !errors.Is(err, store.ErrFenced) {
			t.Errorf("RemoveJob under a stale fence: %v", err)
		}
		// Unfenced writes (one process, no leases) are not checked.
		if err := s.SetVoiceMode(ctx, "web:dm:nolease", messages.VoiceOff); err != nil {
			t.Fatalf("unfenced write: %v", err)
		}
		// A fence for a key that has no lease is stale.
		if err := s.SetVoiceMode(theirs, "web:dm:nolease", messages.VoiceOn); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("fenced write without a lease: %v, want ErrFenced", err)
		}
	})
}

// Two members on one database: the one that took the lease over writes, the
// one that lost it is refused, and the outbox numbering continues after what
// the old owner committed.
func TestLeases_TakeOverBetweenTwoStores(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		ctx := context.Background()
		db := newDB(t)
		clkA, clkB := newClock(), newClock()
		a := mustOpen(t, db, store.WithClock(clkA.Now))
		b := mustOpen(t, db, store.WithClock(clkB.Now))
		const key = "telegram:group:-100:u5"
		e1, err := a.ClaimLease(ctx, key, "a#1", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.ClaimLease(ctx, key, "b#1", 5*time.Second); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("b claims a held lease: %v", err)
		}
		fa := store.Fence{Owner: "a#1", Epoch: e1}
		settle(t, a, store.Settlement{Key: key, Fence: fa, Replies: []*messages.Delivery{{Text: "one"}, {Text: "two"}}})

		// a stops renewing (it hangs, or its member died); b's clock passes
		// the expiry.
		clkB.Advance(6 * time.Second)
		e2, err := b.ClaimLease(ctx, key, "b#1", 5*time.Second)
		if err != nil || e2 != e1+1 {
			t.Fatalf("take-over: epoch %d, %v; want %d", e2, err, e1+1)
		}
		done := make(chan error, 1)
		a.Settle(store.Settlement{Key: key, Fence: fa, Replies: []*messages.Delivery{{Text: "stale"}}}, func(err error) { done <- err })
		if err := <-done; !errors.Is(err, store.ErrFenced) {
			t.Fatalf("old owner's settle: %v, want ErrFenced", err)
		}
		if err := a.RenewLease(ctx, key, fa, 5*time.Second); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("old owner's renewal: %v, want ErrFenced", err)
		}
		if err := a.MarkDelivered(store.WithFence(ctx, fa), key, 1, []string{"m1"}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("old owner's receipt: %v, want ErrFenced", err)
		}
		// The new owner sends what has no receipt, and numbers on from it.
		unsent, err := b.Unsent(ctx, key)
		if err != nil || len(unsent) != 2 || unsent[0].GetText() != "one" {
			t.Fatalf("new owner's unsent = %v, %v", unsent, err)
		}
		fb := store.Fence{Owner: "b#1", Epoch: e2}
		if err := b.MarkDelivered(store.WithFence(ctx, fb), key, 1, []string{"m1"}); err != nil {
			t.Fatal(err)
		}
		settle(t, b, store.Settlement{Key: key, Fence: fb, Replies: []*messages.Delivery{{Text: "three"}}})
		unsent, err = b.Unsent(ctx, key)
		if err != nil || len(unsent) != 2 || unsent[0].GetSeq() != 2 || unsent[1].GetSeq() != 3 || unsent[1].GetText() != "three" {
			t.Fatalf("outbox after the take-over = %v, %v; want seqs 2 (two) and 3 (three)", unsent, err)
		}
		if l, err := a.LeaseOf(ctx, key); err != nil || l.Owner != "b#1" || l.Epoch != e2 {
			t.Fatalf("LeaseOf from the old owner's store = %+v, %v", l, err)
		}
	})
}
