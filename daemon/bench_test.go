//go:build unix

package daemon

// Benchmarks of the actor runtime over the real SQLite store: the
// persisted figures beside the in-memory ones of actors/bench_test.go,
// whose shape (and few helpers) this file copies. Each turn here writes the
// user's message (Receive, before routing), the assistant's reply (the turn,
// before the reply is sent) and the delivery record (the outbox, after the
// send), each as a group-committed SQLite transaction.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/store"
)

// benchAdapter is a web platform that wakes whoever waits for the last
// reply to a message id, and keeps nothing else.
type benchAdapter struct {
	waiters sync.Map // message id → chan struct{}
}

func (w *benchAdapter) Capabilities() platforms.Capabilities {
	return platforms.Capabilities{Platform: messages.Web, VoiceFormat: messages.FormatMP3}
}

func (w *benchAdapter) Run(ctx context.Context, _ platforms.Inbound) error { <-ctx.Done(); return nil }

func (w *benchAdapter) Send(_ context.Context, _ messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	if d.GetLast() {
		for _, id := range d.GetAnswers() {
			if ch, ok := w.waiters.LoadAndDelete(id); ok {
				close(ch.(chan struct{}))
			}
		}
	}
	return &messages.DeliveryReceipt{}, nil
}

func (w *benchAdapter) expect(id string) chan struct{} {
	ch := make(chan struct{})
	w.waiters.Store(id, ch)
	return ch
}

// instantModel answers at once: what is left is the runtime and the store.
type instantModel struct{}

var instantReply = model.Response{Message: model.Message{Role: "assistant", Content: "ok"}}

func (instantModel) Complete(context.Context, model.Request) (model.Response, error) {
	return instantReply, nil
}

// startPersistedBench starts a runtime over a fresh SQLite store in
// tb.TempDir(), with reviews, sweeps and passivation off.
func startPersistedBench(tb testing.TB) (*actors.Runtime, *benchAdapter, *store.Store) {
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
	w := &benchAdapter{}
	rt, err := actors.Start(cfg, actors.Deps{Log: log, Persist: persistence{st}, Model: instantModel{}, Adapters: []platforms.Adapter{w}})
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

// turnsClosedLoop runs total turns over `sessions` sessions, each session
// sending its next message when the previous reply arrived, and returns the
// per-turn latencies.
func turnsClosedLoop(tb testing.TB, rt *actors.Runtime, w *benchAdapter, sessions, total int, prefix string) []time.Duration {
	tb.Helper()
	per := max(total/sessions, 1)
	lat := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := messages.MustSession(messages.Web, messages.DM, fmt.Sprintf("%s%d", prefix, i), "", "").Key()
			for j := range per {
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
		}()
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

// BenchmarkPersistedTurns is actors.BenchmarkTurns over SQLite: turns per
// second through the actor API with an instant model, 1,000 sessions in a
// closed loop (goal: at least 10,000 turns/s).
func BenchmarkPersistedTurns(b *testing.B) {
	rt, w, _ := startPersistedBench(b)
	turnsClosedLoop(b, rt, w, 100, 1000, "warm") // warm up
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	lat := turnsClosedLoop(b, rt, w, 1000, max(b.N, 1000), fmt.Sprintf("r%d-", b.N))
	el, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(len(lat))/el.Seconds(), "turns/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-µs/turn")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkPersistedTurnOverhead is actors.BenchmarkTurnOverhead over
// SQLite: one session's turn latency with nothing else running, so every
// write commits alone (p50, p99).
func BenchmarkPersistedTurnOverhead(b *testing.B) {
	rt, w, _ := startPersistedBench(b)
	turnsClosedLoop(b, rt, w, 1, 200, "warm")
	b.ResetTimer()
	lat := turnsClosedLoop(b, rt, w, 1, max(b.N, 100), fmt.Sprintf("o%d-", b.N))
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkPersistedActivation is actors.BenchmarkSessionActivation over
// SQLite: each new session loads its settings and (empty) history from the
// store in its Started, then answers /voice status without a turn.
func BenchmarkPersistedActivation(b *testing.B) {
	rt, w, _ := startPersistedBench(b)
	n := max(b.N, 1000)
	done := make([]chan struct{}, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("a%d-%d", b.N, i)
		done[i] = w.expect(ids[i])
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	for i := range n {
		if err := rt.Receive(context.Background(), &messages.UserMessage{SessionKey: "web:dm:" + ids[i], MessageId: ids[i], Text: "/voice status"}); err != nil {
			b.Fatal(err)
		}
	}
	for _, ch := range done {
		<-ch
	}
	el, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(n)/el.Seconds(), "sessions/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/session")
}

// cpuTime is the CPU time (user + system) this process has used so far, all
// threads and the GC included. The box the benchmarks run on is shared, so
// wall-clock rates vary with the neighbours' load; CPU per turn does not.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
