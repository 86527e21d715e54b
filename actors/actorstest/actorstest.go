// Package actorstest holds what benchmarks of the actor runtime share
// (actors' own, daemon's SQLite figures, metrics' cost of metrics): a
// platform that wakes whoever waits for a reply, an instant model, and the
// closed-loop turn driver.
package actorstest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// WaitAdapter is a web platform that wakes whoever waits for the last
// reply to a message id, and keeps nothing else.
type WaitAdapter struct {
	waiters sync.Map // message id → chan struct{}
	sends   atomic.Int64
}

// Sends returns how many deliveries the adapter has received.
func (w *WaitAdapter) Sends() int64 { return w.sends.Load() }

var _ platforms.Adapter = (*WaitAdapter)(nil)

// Capabilities implements platforms.Adapter.
func (w *WaitAdapter) Capabilities() messages.Capabilities {
	return messages.Capabilities{Platform: messages.Web, VoiceFormat: messages.FormatMP3}
}

// Run implements platforms.Adapter.
func (w *WaitAdapter) Run(ctx context.Context, _ platforms.Inbound) error {
	<-ctx.Done()
	return nil
}

// Send implements platforms.Adapter.
func (w *WaitAdapter) Send(_ context.Context, _ messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
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

// Expect returns a channel closed when the last reply to message id leaves.
func (w *WaitAdapter) Expect(id string) <-chan struct{} {
	ch := make(chan struct{})
	w.waiters.Store(id, ch)
	return ch
}

// InstantModel answers "ok" at once: what is left is the runtime's cost.
type InstantModel struct{}

var instantReply = model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}}

// Complete implements model.Completer.
func (InstantModel) Complete(context.Context, model.Request) (model.Response, error) {
	return instantReply, nil
}

// ClosedLoop runs total turns over sessions web sessions, each sending its
// next message when the reply to the previous one arrived, and returns
// every turn's latency from Receive to its last reply.
func ClosedLoop(tb testing.TB, rt *actors.Runtime, w *WaitAdapter, sessions, total int, prefix string) []time.Duration {
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
				done := w.Expect(id)
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

// Percentile returns the p-quantile (0–1) of d, sorting d in place.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(float64(len(d)-1)*p)]
}

// BenchTurns is the 1,000-session closed-loop turn benchmark: it warms up,
// runs max(b.N, 1000) turns and reports turns/s, CPU per turn and the
// p50/p99 latency.
func BenchTurns(b *testing.B, rt *actors.Runtime, w *WaitAdapter) {
	ClosedLoop(b, rt, w, 100, 1000, "warm")
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), CPUTime(b)
	lat := ClosedLoop(b, rt, w, 1000, max(b.N, 1000), fmt.Sprintf("r%d-", b.N))
	el, cpu := time.Since(start), CPUTime(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(len(lat))/el.Seconds(), "turns/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-µs/turn")
	b.ReportMetric(float64(Percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(Percentile(lat, 0.99).Microseconds()), "p99-µs")
}
