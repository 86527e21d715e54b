package metrics

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// BenchmarkMiddleware isolates the per-message cost of the metrics
// receiver middleware (timing, histogram record, panic guard) from the
// actor system: the same handler called directly and through it.
func BenchmarkMiddleware(b *testing.B) {
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = m.Shutdown(b.Context()) }()
	var n int
	next := func(actor.ReceiverContext, *actor.MessageEnvelope) { n++ }
	env := &actor.MessageEnvelope{Message: &struct{ x int }{}}
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			next(nil, env)
		}
	})
	b.Run("metrics", func(b *testing.B) {
		h := m.probe("session").middleware(next)
		b.ReportAllocs()
		for range b.N {
			h(nil, env)
		}
	})
	// The same work recorded into an OpenTelemetry histogram instead of
	// receiveHistogram: why the receive histogram is aggregated in place.
	b.Run("otel-histogram", func(b *testing.B) {
		hist, err := m.provider.Meter("bench").Float64Histogram("bench_receive_seconds", metric.WithExplicitBucketBoundaries(receiveBuckets...))
		if err != nil {
			b.Fatal(err)
		}
		opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(
			attribute.String("actortype", "session"), attribute.String("address", "nonhost"), attribute.String("messagetype", "struct { x int }")))}
		b.ReportAllocs()
		for range b.N {
			start := time.Now()
			next(nil, env)
			hist.Record(bg, time.Since(start).Seconds(), opts...)
		}
	})
	b.Run("metrics-parallel", func(b *testing.B) {
		h := m.probe("session").middleware(next)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h(nil, env)
			}
		})
	})
}
