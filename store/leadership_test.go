package store_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/hermesd/hermesd/store"
)

// closedWithin reports whether ch closes within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select { // first, since a zero timer and a closed ch are both ready
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func mustLead(t *testing.T, s *store.Store, name string) *store.Leader {
	t.Helper()
	l, ok, err := s.TryLeadership(context.Background(), name)
	if err != nil || !ok {
		t.Fatalf("TryLeadership(%q) = %v, %v; want it held", name, ok, err)
	}
	return l
}

func mustNotLead(t *testing.T, s *store.Store, name string) {
	t.Helper()
	l, ok, err := s.TryLeadership(context.Background(), name)
	if err != nil || ok {
		if l != nil {
			l.Release()
		}
		t.Fatalf("TryLeadership(%q) = %v, %v; want it refused (held elsewhere)", name, ok, err)
	}
}

// One store holds a name once: a second attempt is refused until the first
// is released, names are independent, and Close lets go of everything.
func TestLeadership_OneHolderPerNameAndRelease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		s := mustOpen(t, newDB(t))
		const name = "telegram-poller"
		l := mustLead(t, s, name)
		mustNotLead(t, s, name)
		other := mustLead(t, s, `o'ther "lock"; DROP TABLE x --`)
		if closedWithin(l.Done(), 0) {
			t.Fatal("Done is closed while the lock is held")
		}
		l.Release()
		if !closedWithin(l.Done(), 0) {
			t.Fatal("Done is still open after Release")
		}
		l.Release() // a second Release does nothing
		again := mustLead(t, s, name)
		mustClose(t, s)
		for _, h := range []*store.Leader{again, other} {
			if !closedWithin(h.Done(), 5*time.Second) {
				t.Fatal("a lock's Done is still open after Close")
			}
		}
		if _, _, err := s.TryLeadership(context.Background(), name); !errors.Is(err, store.ErrClosed) {
			t.Fatalf("TryLeadership after Close: err = %v, want ErrClosed", err)
		}
	})
}

// Members sharing a PostgreSQL database: only one holds the lock; when it
// releases it, or its store closes, another takes it.
func TestPostgres_LeadershipOneMemberAtATime(t *testing.T) {
	url := pgURL(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	const name = "telegram-poller"
	la := mustLead(t, a, name)
	mustNotLead(t, b, name)
	la.Release()
	lb := mustLead(t, b, name)
	mustNotLead(t, a, name)
	mustClose(t, b)
	if !closedWithin(lb.Done(), 5*time.Second) {
		t.Fatal("Done still open after the holder's store closed")
	}
	mustLead(t, a, name).Release()
}

// The holder's connection is ended by the server (its process died, a
// failover, an administrator): the holder is told within the check period,
// and another member can take the lock at once.
func TestPostgres_LeadershipLostWithItsConnection(t *testing.T) {
	ctx := context.Background()
	url := pgURL(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	const name = "telegram-poller"
	la := mustLead(t, a, name)
	mustNotLead(t, b, name)

	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var killed int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("%d connections hold an advisory lock, want 1", killed)
	}
	// The server released the lock with the session: b takes it before a
	// even noticed (wait for pg_terminate_backend to take effect).
	deadline := time.Now().Add(5 * time.Second)
	var lb *store.Leader
	for {
		l, ok, err := b.TryLeadership(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			lb = l
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock of the ended connection was never freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer lb.Release()
	if !closedWithin(la.Done(), 5*time.Second) {
		t.Fatal("the holder was not told it lost the lock within 5 s")
	}
	if closedWithin(lb.Done(), 1500*time.Millisecond) {
		t.Fatal("the new holder lost the lock though its connection is fine")
	}
	// a's released name can be tried again: refused, b holds it.
	mustNotLead(t, a, name)
}
