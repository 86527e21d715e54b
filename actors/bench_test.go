package actors_test

// Benchmarks of the runtime alone (in-memory persistence, an instant
// in-process model). The SQLite figures are in daemon/bench_test.go; both
// use actors/actorstest. docs/benchmarks-runtime.md has the results.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/actors/actorstest"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// completer is an in-process model.
type completer func(ctx context.Context, req model.Request) (model.Response, error)

func (f completer) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	return f(ctx, req)
}

// startBench starts a runtime on p with reviews, sweeps and passivation off.
func startBench(tb testing.TB, p actors.Persistence, m model.Completer) (*actors.Runtime, *actorstest.WaitAdapter) {
	tb.Helper()
	w := &actorstest.WaitAdapter{}
	cfg := actors.DefaultConfig()
	cfg.SweepInterval, cfg.TypingRefresh = 0, time.Hour
	cfg.ReviewEvery, cfg.SweepEvery, cfg.SweepOnIdle = 0, 0, false
	rt, err := actors.Start(cfg, actors.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Persist: p, Model: m, Adapters: []platforms.Adapter{w}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx, 0)
	})
	return rt, w
}

// BenchmarkTurns measures turns per second through the actor API (edge →
// router → session → turn → model → outbox → platform) with an instant
// in-process model and no persistence, 1,000 sessions in a closed loop.
func BenchmarkTurns(b *testing.B) {
	rt, w := startBench(b, actors.NewMemory(), actorstest.InstantModel{})
	actorstest.BenchTurns(b, rt, w)
}

// BenchmarkTurnOverhead measures one session's turn latency with nothing
// else running: the runtime's overhead per turn (p50, p99).
func BenchmarkTurnOverhead(b *testing.B) {
	rt, w := startBench(b, actors.NewMemory(), actorstest.InstantModel{})
	actorstest.ClosedLoop(b, rt, w, 1, 200, "warm")
	b.ResetTimer()
	lat := actorstest.ClosedLoop(b, rt, w, 1, max(b.N, 100), fmt.Sprintf("o%d-", b.N))
	b.StopTimer()
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkSessionActivation measures spawning session actors with an empty
// history: each gets one command (/voice status) that it answers without a
// turn, which is when it has loaded and handled its first message.
func BenchmarkSessionActivation(b *testing.B) {
	rt, w := startBench(b, actors.NewMemory(), actorstest.InstantModel{})
	n := max(b.N, 1000)
	done := make([]<-chan struct{}, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("a%d-%d", b.N, i)
		done[i] = w.Expect(ids[i])
	}
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		key := "web:dm:" + ids[i]
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: key, MessageId: ids[i], Text: "/voice status"}); err != nil {
			b.Fatal(err)
		}
	}
	for _, ch := range done {
		<-ch
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(n)/el.Seconds(), "sessions/s")
}

// BenchmarkIdleSessionMemory measures the resident cost of an idle session,
// everything included (actor, mailbox, registry entry, router entry, loaded
// state), as heap growth per session after a GC.
func BenchmarkIdleSessionMemory(b *testing.B) {
	rt, w := startBench(b, actors.NewMemory(), actorstest.InstantModel{})
	n := max(b.N, 10000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range n {
		id := fmt.Sprintf("m%d-%d", b.N, i)
		done := w.Expect(id)
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: "web:dm:" + id, MessageId: id, Text: "/voice status"}); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 || i == n-1 {
			<-done // bound the number in flight
		}
	}
	// Wait until every session answered and every delivery goroutine ended.
	for w.Sends() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	rt.WaitDeliveries()
	b.StopTimer()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	list, err := rt.Sessions(context.Background(), "", 0, 1)
	if err != nil || list.Total < n {
		b.Fatalf("live sessions %v, want %d (%v)", list, n, err)
	}
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	b.ReportMetric(per, "B/session")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
}

// blockModel blocks until its context ends.
func blockModel(started chan<- context.Context) completer {
	return func(ctx context.Context, _ model.Request) (model.Response, error) {
		started <- ctx
		<-ctx.Done()
		return model.Response{}, ctx.Err()
	}
}

// BenchmarkStopToQuiet measures /stop: from the message entering hermesd to
// the running turn's context being cancelled and the "Stopped" reply sent.
func BenchmarkStopToQuiet(b *testing.B) {
	started := make(chan context.Context, 1)
	rt, w := startBench(b, actors.NewMemory(), blockModel(started))
	key := "web:dm:stopper"
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < max(b.N, 50); i++ {
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: key, MessageId: fmt.Sprint("t", i), Text: "work"}); err != nil {
			b.Fatal(err)
		}
		ctx := <-started
		id := fmt.Sprint("s", i)
		done := w.Expect(id)
		t0 := time.Now()
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: key, MessageId: id, Text: "/stop"}); err != nil {
			b.Fatal(err)
		}
		<-ctx.Done()
		<-done
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// countingLoads counts LoadSession calls of an in-memory persistence.
type countingLoads struct {
	*actors.Memory
	loads atomic.Int64
}

func (c *countingLoads) LoadSession(ctx context.Context, s messages.Session, limit int) (actors.SessionState, error) {
	st, err := c.Memory.LoadSession(ctx, s, limit)
	c.loads.Add(1)
	return st, err
}

// BenchmarkSessionSpawnAndLoad measures activation as the issue defines it:
// the router spawns a session actor named by its key, and the actor loads
// its (empty) state; no turn, no reply.
func BenchmarkSessionSpawnAndLoad(b *testing.B) {
	p := &countingLoads{Memory: actors.NewMemory()}
	rt, _ := startBench(b, p, actorstest.InstantModel{})
	n := max(b.N, 1000)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("web:dm:l%d-%d", b.N, i)
	}
	base := p.loads.Load()
	b.ResetTimer()
	start := time.Now()
	for _, k := range keys {
		rt.Activate(k)
	}
	for p.loads.Load()-base < int64(n) {
		time.Sleep(100 * time.Microsecond)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(n)/el.Seconds(), "sessions/s")
}
