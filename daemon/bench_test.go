//go:build unix

package daemon

// Benchmarks of the actor runtime over the real SQLite store: the
// persisted figures beside the in-memory ones of actors/bench_test.go,
// whose shape this file follows (shared helpers: actors/actorstest). Each turn here writes the
// accepted message (Receive, before routing), the outcome with the reply and
// its outbox entry (the session, before the reply is sent) and the delivery
// confirmation (the outbox, after the send), each a group-committed SQLite
// transaction.

import (
	"context"
	"fmt"
	"github.com/hermesd/hermesd/actors/actorstest"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/store"
)

// startPersistedBench starts a runtime over a fresh SQLite store in
// tb.TempDir(), with reviews, sweeps and passivation off.
func startPersistedBench(tb testing.TB) (*actors.Runtime, *actorstest.WaitAdapter, *store.Store) {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, filepath.Join(tb.TempDir(), "hermesd.db"), store.WithLogger(log))
	if err != nil {
		tb.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.SweepInterval = 0
	cfg.TypingRefresh = time.Hour
	cfg.ReviewEvery, cfg.SweepEvery, cfg.SweepOnIdle = 0, 0, false
	w := &actorstest.WaitAdapter{}
	rt, err := actors.Start(cfg, actors.Deps{Log: log, Persist: persistence{st}, Model: actorstest.InstantModel{}, Adapters: []platforms.Adapter{w}})
	if err != nil {
		_ = st.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx, 0)
		_ = st.Close()
	})
	return rt, w, st
}

// BenchmarkPersistedTurns is actors.BenchmarkTurns over SQLite: turns per
// second through the actor API with an instant model, 1,000 sessions in a
// closed loop (goal: at least 10,000 turns/s).
func BenchmarkPersistedTurns(b *testing.B) {
	rt, w, _ := startPersistedBench(b)
	actorstest.BenchTurns(b, rt, w)
}

// BenchmarkPersistedTurnOverhead is actors.BenchmarkTurnOverhead over
// SQLite: one session's turn latency with nothing else running, so every
// write commits alone (p50, p99).
func BenchmarkPersistedTurnOverhead(b *testing.B) {
	rt, w, _ := startPersistedBench(b)
	actorstest.ClosedLoop(b, rt, w, 1, 200, "warm")
	b.ResetTimer()
	lat := actorstest.ClosedLoop(b, rt, w, 1, max(b.N, 100), fmt.Sprintf("o%d-", b.N))
	b.StopTimer()
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkPersistedActivation is actors.BenchmarkSessionActivation over
// SQLite: each new session loads its settings and (empty) history from the
// store in its Started, then answers /voice status without a turn.
func BenchmarkPersistedActivation(b *testing.B) {
	rt, w, _ := startPersistedBench(b)
	n := max(b.N, 1000)
	done := make([]<-chan struct{}, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("a%d-%d", b.N, i)
		done[i] = w.Expect(ids[i])
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), actorstest.CPUTime(b)
	for i := range n {
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: "web:dm:" + ids[i], MessageId: ids[i], Text: "/voice status"}); err != nil {
			b.Fatal(err)
		}
	}
	for _, ch := range done {
		<-ch
	}
	el, cpu := time.Since(start), actorstest.CPUTime(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(n)/el.Seconds(), "sessions/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/session")
}
