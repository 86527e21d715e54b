//go:build unix

package metrics_test

// The cost of metrics on whole turns: actors.BenchmarkTurns (1,000 sessions
// in a closed loop, instant model, in-memory persistence) run plain, with
// the metrics wired as the daemon wires them (daemon/observe.go), and with
// the live actor tree as well. The runtime helpers are copied from
// actors/bench_test.go.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/inspect"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/metrics"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// turnAdapter is a web platform that wakes whoever waits for the last reply
// to a message id, and keeps nothing else.
type turnAdapter struct {
	waiters sync.Map // message id → chan struct{}
}

func (w *turnAdapter) Capabilities() platforms.Capabilities {
	return platforms.Capabilities{Platform: messages.Web, VoiceFormat: messages.FormatMP3}
}

func (w *turnAdapter) Run(ctx context.Context, _ platforms.Inbound) error { <-ctx.Done(); return nil }

func (w *turnAdapter) Send(_ context.Context, _ messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	if d.GetLast() {
		for _, id := range d.GetAnswers() {
			if ch, ok := w.waiters.LoadAndDelete(id); ok {
				close(ch.(chan struct{}))
			}
		}
	}
	return &messages.DeliveryReceipt{}, nil
}

func (w *turnAdapter) expect(id string) chan struct{} {
	ch := make(chan struct{})
	w.waiters.Store(id, ch)
	return ch
}

type instantModel struct{}

var instantReply = model.Response{Message: model.Message{Role: "assistant", Content: "ok"}}

func (instantModel) Complete(context.Context, model.Request) (model.Response, error) {
	return instantReply, nil
}

// observeLike is daemon/observe.go's instrument: per kind, the options of
// the tree (if any) and of the metrics, built once, applied in one Clone.
func observeLike(m *metrics.Metrics, tree *inspect.Tree) func(kind string, p *actor.Props) *actor.Props {
	var mu sync.Mutex
	byKind := make(map[string][]actor.PropsOption)
	return func(kind string, p *actor.Props) *actor.Props {
		mu.Lock()
		opts, ok := byKind[kind]
		if !ok {
			if tree != nil {
				opts = tree.PropsOptions(kind)
			}
			opts = slices.Concat(opts, m.PropsOptions(kind))
			byKind[kind] = opts
		}
		mu.Unlock()
		return p.Clone(opts...)
	}
}

// startTurnBench starts a runtime over in-memory persistence, with the
// metrics (and the tree) wired when given.
func startTurnBench(b *testing.B, m *metrics.Metrics, tree *inspect.Tree) (*actors.Runtime, *turnAdapter) {
	b.Helper()
	cfg := actors.DefaultConfig()
	cfg.SweepInterval = 0
	cfg.TypingRefresh = time.Hour
	cfg.ReviewEvery, cfg.SweepEvery, cfg.SweepOnIdle = 0, 0, false
	w := &turnAdapter{}
	deps := actors.Deps{Persist: actors.NewMemory(), Model: instantModel{}, Adapters: []platforms.Adapter{w}}
	if m != nil {
		deps.Observer = m
		deps.Instrument = observeLike(m, tree)
	}
	rt, err := actors.Start(cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx, 0)
	})
	return rt, w
}

// turnsClosedLoop runs total turns over `sessions` sessions, each sending
// its next message when the previous reply arrived, and returns the
// per-turn latencies.
func turnsClosedLoop(b *testing.B, rt *actors.Runtime, w *turnAdapter, sessions, total int, prefix string) []time.Duration {
	b.Helper()
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
					b.Error(err)
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

// BenchmarkTurnsObserved measures turns per second with 1,000 sessions in a
// closed loop: plain (no observer, no middleware), with the metrics
// (Observer plus their receiver middleware and spawn counter on every
// actor), and with the metrics and the live actor tree, as the daemon runs.
func BenchmarkTurnsObserved(b *testing.B) {
	for _, c := range []struct {
		name             string
		metrics, inspect bool
	}{
		{"plain", false, false},
		{"metrics", true, false},
		{"metrics+tree", true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var (
				m    *metrics.Metrics
				tree *inspect.Tree
			)
			if c.inspect {
				tree = inspect.NewTree()
			}
			if c.metrics {
				o := metrics.Options{}
				if tree != nil {
					o.Actors = tree.EachKind
				}
				var err error
				if m, err = metrics.New(o); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = m.Shutdown(context.Background()) })
			}
			rt, w := startTurnBench(b, m, tree)
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
		})
	}
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
