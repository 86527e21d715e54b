package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/store/pgtest"
)

// BenchmarkSettle measures one session's turn being recorded (an answer in
// history and a reply in the outbox), one at a time, with and without a
// fence, on SQLite and on a PostgreSQL server that flushes its commits
// (durable, as in production). It reports p50 and p99 of the Settle latency.
func BenchmarkSettle(b *testing.B) {
	parent := b
	var durable *pgtest.Server
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, fenced := range []bool{false, true} {
			name := backend + "/unfenced"
			if fenced {
				name = backend + "/fenced"
			}
			b.Run(name, func(b *testing.B) {
				loc := dbPath(b)
				if backend == "postgres" {
					if durable == nil {
						var err error
						durable, err = pgtest.Start(context.Background(), pgtest.Options{Durable: true})
						pgtest.Skip(b, err)
						// A sub-benchmark's function runs several times: the
						// server lives as long as the whole benchmark.
						parent.Cleanup(func() { _ = durable.Stop() })
					}
					loc = durable.NewDatabase(b)
				}
				benchSettle(b, mustOpen(b, loc), fenced)
			})
		}
	}
}

func benchSettle(b *testing.B, s *store.Store, fenced bool) {
	ctx := context.Background()
	const key = "telegram:dm:424242"
	var fence store.Fence
	if fenced {
		epoch, err := s.ClaimLease(ctx, key, "bench#1", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		fence = store.Fence{Owner: "bench#1", Epoch: epoch}
	}
	lat := make([]time.Duration, 0, b.N)
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		s.Settle(store.Settlement{Key: key, Fence: fence,
			History: []store.Message{{Role: store.Assistant, Content: benchText(i)}},
			Replies: []*messages.Delivery{{Text: benchText(i)}}}, func(err error) { done <- err })
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
}
