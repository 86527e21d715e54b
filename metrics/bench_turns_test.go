//go:build unix

package metrics_test

// The cost of metrics on whole turns: actors.BenchmarkTurns (1,000 sessions
// in a closed loop, instant model, in-memory persistence) run plain, with
// the metrics wired as the daemon wires them (daemon/observe.go), and with
// the live actor tree as well. The runtime helpers are copied from
// actors/bench_test.go.

import (
	"context"
	"github.com/hermesd/hermesd/actors/actorstest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/inspect"
	"github.com/hermesd/hermesd/metrics"
	"github.com/hermesd/hermesd/platforms"
)

// observeLike instruments Props as daemon/observe.go does.
func observeLike(m *metrics.Metrics, tree *inspect.Tree) func(k actors.Kind, p *actor.Props) *actor.Props {
	var mu sync.Mutex
	byKind := make(map[string][]actor.PropsOption)
	return func(k actors.Kind, p *actor.Props) *actor.Props {
		kind := string(k)
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
func startTurnBench(b *testing.B, m *metrics.Metrics, tree *inspect.Tree) (*actors.Runtime, *actorstest.WaitAdapter) {
	b.Helper()
	cfg := actors.DefaultConfig()
	cfg.SweepInterval = 0
	cfg.TypingRefresh = time.Hour
	cfg.ReviewEvery, cfg.SweepEvery, cfg.SweepOnIdle = 0, 0, false
	w := &actorstest.WaitAdapter{}
	deps := actors.Deps{Persist: actors.NewMemory(), Model: actorstest.InstantModel{}, Adapters: []platforms.Adapter{w}}
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
			actorstest.BenchTurns(b, rt, w)
		})
	}
}
