//go:build unix

package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/store/pgtest"
)

// BenchmarkMovedActivation measures what a session that moved to another
// member does before it can answer (issue 17's goal: ≤ 20 ms with 200 turns
// of history): claim its lease, then load its settings, what it owes and
// its history through the persistence the runtime uses. Each iteration is
// a new owner taking the released lease, on a store opened just before
// (outside the timer), as on a member that never held the session: its
// read connections have not served these reads yet.
//
//	go test ./daemon -run '^$' -bench MovedActivation -benchtime 30x -count 6
func BenchmarkMovedActivation(b *testing.B) {
	b.Run("SQLite", func(b *testing.B) {
		benchMovedActivation(b, filepath.Join(b.TempDir(), "hermesd.db"))
	})
	b.Run("PostgreSQL", func(b *testing.B) {
		srv, err := pgtest.Start(context.Background(), pgtest.Options{Durable: true})
		pgtest.Skip(b, err)
		b.Cleanup(func() { _ = srv.Stop() })
		benchMovedActivation(b, srv.NewDatabase(b))
	})
}

func benchMovedActivation(b *testing.B, dsn string) {
	ctx := context.Background()
	const turns, key = 200, "telegram:dm:42"
	s, err := messages.ParseKey(key)
	if err != nil {
		b.Fatal(err)
	}
	open := func() *store.Store {
		st, err := store.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	st := open()
	for i := range turns {
		if err := st.Append(ctx,
			store.Message{SessionKey: key, Role: store.User, Content: fmt.Sprintf("question %d, a line or two as a person would ask it", i)},
			store.Message{SessionKey: key, Role: store.Assistant, Content: fmt.Sprintf("answer %d, a paragraph of what a model would say back", i)},
		); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	var claim, load time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		st := open()
		b.StartTimer()
		owner := fmt.Sprintf("member-%d", i)
		t0 := time.Now()
		epoch, err := st.ClaimLease(ctx, key, owner, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		state, err := persistence{st}.LoadSession(ctx, s, 1000)
		if err != nil || len(state.History) != 2*turns {
			b.Fatalf("loaded %d messages, %v", len(state.History), err)
		}
		claim, load = claim+t1.Sub(t0), load+time.Since(t1)
		b.StopTimer()
		if err := st.ReleaseLease(ctx, key, store.Fence{Owner: owner, Epoch: epoch}); err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(claim.Microseconds())/float64(b.N), "claim-µs")
	b.ReportMetric(float64(load.Microseconds())/float64(b.N), "load-µs")
}
