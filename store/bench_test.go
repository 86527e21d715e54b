package store_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/store/pgtest"
)

// words vary the benchmark's message text so the full-text index does real
// work rather than indexing one repeated sentence.
var words = []string{"deploy", "voice", "reminder", "tea", "meeting", "weather", "invoice", "telegram",
	"discord", "backup", "server", "coffee", "question", "answer", "schedule", "review"}

func benchText(i int) string {
	return fmt.Sprintf("message %d: please %s the %s before the %s, then %s about %s",
		i, words[i%16], words[(i/16)%16], words[(i/256)%16], words[(i/7)%16], words[(i/3)%16])
}

// BenchmarkAppend measures persisted-and-acknowledged messages per second.
// serial: one caller waiting for each commit (commit latency bound).
// sessions=1000: 1000 goroutines, one session each, every Append a single
// user message, as 1000 chats typing at once.
func BenchmarkAppend(b *testing.B) { benchAppend(b, dbPath) }

func benchAppend(b *testing.B, newDB func(testing.TB) string) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		s := mustOpen(b, newDB(b))
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			if err := s.Append(ctx, store.Message{SessionKey: "web:dm:serial", Role: store.User, Content: benchText(i)}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("sessions=1000", func(b *testing.B) {
		const sessions = 1000
		s := mustOpen(b, newDB(b))
		keys := make([]string, sessions)
		for i := range keys {
			keys[i] = fmt.Sprintf("telegram:dm:%d", 100000+i)
		}
		var nextKey, seq atomic.Int64
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((sessions + procs - 1) / procs)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			key := keys[int(nextKey.Add(1)-1)%sessions]
			for pb.Next() {
				i := int(seq.Add(1))
				if err := s.Append(ctx, store.Message{SessionKey: key, Role: store.User, Content: benchText(i)}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		elapsed := time.Since(start)
		b.StopTimer()
		st := s.Stats()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		if st.Batches > 0 {
			b.ReportMetric(float64(st.Ops)/float64(st.Batches), "msgs/commit")
		}
	})
}

// BenchmarkHistory measures loading a session's context: the latest 50
// messages of 200 sessions holding 200 messages each, read in parallel.
func BenchmarkHistory(b *testing.B) { benchHistory(b, dbPath) }

func benchHistory(b *testing.B, newDB func(testing.TB) string) {
	ctx := context.Background()
	const sessions, perSession, limit = 200, 200, 50
	s := mustOpen(b, newDB(b))
	keys := make([]string, sessions)
	for i := range keys {
		keys[i] = fmt.Sprintf("discord:dm:%d", 5000+i)
		batch := make([]store.Message, perSession)
		for j := range batch {
			role := store.User
			if j%2 == 1 {
				role = store.Assistant
			}
			batch[j] = store.Message{SessionKey: keys[i], Role: role, Content: benchText(i*perSession + j)}
		}
		if err := s.Append(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := keys[int(next.Add(1))%sessions]
			h, err := s.History(ctx, key, limit)
			if err != nil || len(h) != limit {
				b.Errorf("History(%s) = %d messages, %v", key, len(h), err)
				return
			}
		}
	})
}

// BenchmarkPostgres runs BenchmarkAppend and BenchmarkHistory against a
// durable PostgreSQL server (fsync on), to compare the backends.
func BenchmarkPostgres(b *testing.B) {
	srv, err := pgtest.Start(context.Background(), pgtest.Options{Durable: true})
	pgtest.Skip(b, err)
	b.Cleanup(func() { _ = srv.Stop() })
	newDB := func(tb testing.TB) string { return srv.NewDatabase(tb) }
	b.Run("Append", func(b *testing.B) { benchAppend(b, newDB) })
	b.Run("History", func(b *testing.B) { benchHistory(b, newDB) })
	b.Run("Accept", func(b *testing.B) { benchAccept(b, newDB) })
}

// BenchmarkAccept measures inbound messages stored as pending work (history
// row and inbox row in one transaction) by 1000 sessions at once, as the
// runtime's ingress does for every message.
func BenchmarkAccept(b *testing.B) { benchAccept(b, dbPath) }

func benchAccept(b *testing.B, newDB func(testing.TB) string) {
	ctx := context.Background()
	const sessions = 1000
	s := mustOpen(b, newDB(b))
	keys := make([]string, sessions)
	for i := range keys {
		keys[i] = fmt.Sprintf("telegram:dm:%d", 100000+i)
	}
	var nextKey, seq atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((sessions + procs - 1) / procs)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		key := keys[int(nextKey.Add(1)-1)%sessions]
		for pb.Next() {
			i := seq.Add(1)
			m := &messages.UserMessage{SessionKey: key, MessageId: fmt.Sprint(i), SenderId: "1", Text: benchText(int(i))}
			if _, err := s.Accept(ctx, key, m); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
