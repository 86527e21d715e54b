package metrics_test

import (
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// payload is a user message, as a session would receive.
type payload struct{ n int }

// BenchmarkReceive sends b.N messages to one actor and waits until it has
// handled them all: the end-to-end cost of a receive through protoactor,
// bare and with hermesd's instrumentation (metrics, the inspection tree,
// both as the daemon installs them).
func BenchmarkReceive(b *testing.B) {
	cases := []struct {
		name       string
		instrument func(in instrumented, p *actor.Props) *actor.Props
	}{
		{"bare", func(_ instrumented, p *actor.Props) *actor.Props { return p }},
		{"metrics", func(in instrumented, p *actor.Props) *actor.Props { return in.m.Props("session", p) }},
		{"tree", func(in instrumented, p *actor.Props) *actor.Props { return in.tree.Props("session", p) }},
		{"metrics+tree", func(in instrumented, p *actor.Props) *actor.Props { return in.props("session", p) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			in := newInstrumented(b)
			sys := quietSystem(b)
			var handled atomic.Int64
			target := int64(b.N)
			done := make(chan struct{})
			props := c.instrument(in, actor.PropsFromFunc(func(ctx actor.Context) {
				if _, ok := ctx.Message().(*payload); ok && handled.Add(1) == target {
					close(done)
				}
			}))
			pid := sys.Root.Spawn(props)
			msg := &payload{}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				sys.Root.Send(pid, msg)
			}
			<-done
			b.StopTimer()
			_ = sys.Root.StopFuture(pid).Wait()
		})
	}
}
