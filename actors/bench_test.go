package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// waitAdapter is a platform that wakes whoever waits for the last reply to
// a message id, and keeps nothing else: the benchmarks measure the runtime,
// not a recorder.
type waitAdapter struct {
	waiters sync.Map // message id → chan struct{}
	sends   atomic.Int64
}

func (w *waitAdapter) Capabilities() platforms.Capabilities {
	return platforms.Capabilities{Platform: messages.Web, VoiceFormat: messages.FormatMP3}
}

func (w *waitAdapter) Run(ctx context.Context, _ platforms.Inbound) error { <-ctx.Done(); return nil }

func (w *waitAdapter) Send(_ context.Context, _ messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	w.sends.Add(1)
	if d.GetLast() {
		for _, id := range d.GetAnswers() {
			if ch, ok := w.waiters.LoadAndDelete(id); ok {
				close(ch.(chan struct{}))
			}
		}
	}
	return &messages.DeliveryReceipt{}, nil
}

func (w *waitAdapter) expect(id string) chan struct{} {
	ch := make(chan struct{})
	w.waiters.Store(id, ch)
	return ch
}

// instantModel answers at once, without allocating much: the runtime's own
// cost is what is left.
var instantReply = model.Response{Message: model.Message{Role: "assistant", Content: "ok"}}

func instantModel() modelFunc {
	return func(context.Context, model.Request) (model.Response, error) { return instantReply, nil }
}

// StartBench starts a runtime for benchmarks on p; exported to the daemon's
// SQLite benchmarks through export_test.go-style reuse is not possible, so
// they build their own with the same shape.
func startBench(tb testing.TB, p Persistence, m model.Completer) (*Runtime, *waitAdapter) {
	tb.Helper()
	w := &waitAdapter{}
	cfg := testConfig()
	rt, err := Start(cfg, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Persist: p, Model: m, Adapters: []platforms.Adapter{w}})
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

// turnsClosedLoop runs total turns over `sessions` sessions, each session
// sending its next message when the previous reply arrived. It returns the
// per-turn latencies.
func turnsClosedLoop(tb testing.TB, rt *Runtime, w *waitAdapter, sessions, total int, prefix string) []time.Duration {
	tb.Helper()
	per := total / sessions
	if per == 0 {
		per = 1
	}
	lat := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := messages.MustSession(messages.Web, messages.DM, fmt.Sprintf("%s%d", prefix, i), "", "")
			key := s.Key()
			for j := 0; j < per; j++ {
				id := fmt.Sprintf("%s%d-%d", prefix, i, j)
				done := w.expect(id)
				t0 := time.Now()
				if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: key, MessageId: id, Text: "hi"}); err != nil {
					tb.Error(err)
					return
				}
				<-done
				lat[i] = append(lat[i], time.Since(t0))
			}
		}(i)
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return all
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(float64(len(d)-1)*p)]
}

// BenchmarkTurns measures turns per second through the actor API (edge →
// router → session → turn → model → outbox → platform) with an instant
// in-process model and no persistence, 1,000 sessions in a closed loop.
func BenchmarkTurns(b *testing.B) {
	rt, w := startBench(b, NewMemory(), instantModel())
	turnsClosedLoop(b, rt, w, 100, 1000, "warm") // warm up
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	lat := turnsClosedLoop(b, rt, w, 1000, max(b.N, 1000), fmt.Sprintf("r%d-", b.N))
	el := time.Since(start)
	b.StopTimer()
	n := len(lat)
	b.ReportMetric(float64(n)/el.Seconds(), "turns/s")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkTurnOverhead measures one session's turn latency with nothing
// else running: the runtime's overhead per turn (p50, p99).
func BenchmarkTurnOverhead(b *testing.B) {
	rt, w := startBench(b, NewMemory(), instantModel())
	turnsClosedLoop(b, rt, w, 1, 200, "warm")
	b.ResetTimer()
	lat := turnsClosedLoop(b, rt, w, 1, max(b.N, 100), fmt.Sprintf("o%d-", b.N))
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkSessionActivation measures spawning session actors with an empty
// history: each gets one command (/voice status) that it answers without a
// turn, which is when it has loaded and handled its first message.
func BenchmarkSessionActivation(b *testing.B) {
	rt, w := startBench(b, NewMemory(), instantModel())
	n := max(b.N, 1000)
	done := make([]chan struct{}, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("a%d-%d", b.N, i)
		done[i] = w.expect(ids[i])
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
	rt, w := startBench(b, NewMemory(), instantModel())
	n := max(b.N, 10000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range n {
		id := fmt.Sprintf("m%d-%d", b.N, i)
		done := w.expect(id)
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: "web:dm:" + id, MessageId: id, Text: "/voice status"}); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 || i == n-1 {
			<-done // bound the number in flight
		}
	}
	// Wait until every session answered and every delivery goroutine ended.
	for w.sends.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	rt.deliveries.Wait()
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
func blockModel(started chan<- context.Context) modelFunc {
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
	rt, w := startBench(b, NewMemory(), blockModel(started))
	key := "web:dm:stopper"
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < max(b.N, 50); i++ {
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: key, MessageId: fmt.Sprint("t", i), Text: "work"}); err != nil {
			b.Fatal(err)
		}
		ctx := <-started
		id := fmt.Sprint("s", i)
		done := w.expect(id)
		t0 := time.Now()
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: key, MessageId: id, Text: "/stop"}); err != nil {
			b.Fatal(err)
		}
		<-ctx.Done()
		<-done
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// countingLoads counts LoadSession calls of an in-memory persistence.
type countingLoads struct {
	*Memory
	loads atomic.Int64
}

func (c *countingLoads) LoadSession(ctx context.Context, s messages.Session, limit int) (SessionState, error) {
	st, err := c.Memory.LoadSession(ctx, s, limit)
	c.loads.Add(1)
	return st, err
}

// BenchmarkSessionSpawnAndLoad measures activation as the issue defines it:
// the router spawns a session actor named by its key, and the actor loads
// its (empty) state; no turn, no reply.
func BenchmarkSessionSpawnAndLoad(b *testing.B) {
	p := &countingLoads{Memory: NewMemory()}
	rt, _ := startBench(b, p, instantModel())
	n := max(b.N, 1000)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("web:dm:l%d-%d", b.N, i)
	}
	base := p.loads.Load()
	b.ResetTimer()
	start := time.Now()
	for _, k := range keys {
		rt.sys.Root.Send(rt.routerOf(k), &resumeSession{key: k})
	}
	for p.loads.Load()-base < int64(n) {
		time.Sleep(100 * time.Microsecond)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(n)/el.Seconds(), "sessions/s")
}
