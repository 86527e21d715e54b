//go:build unix

package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/actors/actorstest"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/store"
)

// BenchmarkRecovery: a restart finds 10,000 accepted, unanswered messages
// (one per web chat) in the store. It reports how long the new runtime takes
// to send its first answer and to answer all of them with an instant model
// (goal: answering within 2 s, draining at the model's pace).
//
//	go test ./daemon -run XXX -bench Recovery -benchtime 1x -count 5
func BenchmarkRecovery(b *testing.B) {
	const pending = 10000
	for _, conc := range []int{32, 256} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) { benchRecovery(b, pending, conc) })
	}
}

func benchRecovery(b *testing.B, pending, concurrency int) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(b.TempDir(), "hermesd.db"), store.WithLogger(log))
		if err != nil {
			b.Fatal(err)
		}
		p := persistence{st}
		w := &actorstest.WaitAdapter{}
		var waits []<-chan struct{}
		for n := 0; n < pending; n++ {
			s := messages.MustSession(messages.Web, messages.DM, fmt.Sprintf("r%d", n), "", "")
			id := fmt.Sprintf("m%d", n)
			if _, err := p.Accept(ctx, s, &messages.UserMessage{SessionKey: s.Key(), MessageId: id, Text: "still there?"}); err != nil {
				b.Fatal(err)
			}
			waits = append(waits, w.Expect(id))
		}
		cfg := actors.DefaultConfig()
		cfg.SweepInterval = 0
		cfg.ReviewEvery, cfg.SweepEvery, cfg.SweepOnIdle = 0, 0, false
		cfg.RecoveryConcurrency = concurrency
		b.StartTimer()
		start := time.Now()
		rt, err := actors.Start(cfg, actors.Deps{Log: log, Persist: p, Model: actorstest.InstantModel{}, Adapters: []platforms.Adapter{w}})
		if err != nil {
			b.Fatal(err)
		}
		<-waits[0] // Owed lists the oldest first
		first := time.Since(start)
		for _, ch := range waits {
			select {
			case <-ch:
			case <-time.After(2 * time.Minute):
				b.Fatalf("recovery stalled after %d of %d answers", w.Sends(), pending)
			}
		}
		all := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(first.Milliseconds()), "first-answer-ms")
		b.ReportMetric(float64(all.Milliseconds()), "all-answered-ms")
		b.ReportMetric(float64(pending)/all.Seconds(), "answers/s")
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = rt.Shutdown(sctx, 0)
		cancel()
		_ = st.Close()
	}
}
