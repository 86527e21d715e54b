package regression

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// Time to first visible token: from the moment the fake model writes the
// first piece of text of an answer to the moment the user could see it (the
// web chat's event stream delivers a draft; the fake Telegram or Discord
// receives the first draft request). Answers run one after another; each
// reports one sample, and the benchmark reports the median and p99.
//
//	go test ./regression/ -run '^$' -bench 'BenchmarkStream_FirstToken' -benchtime 200x

// firstTokenWorld is a world whose model streams a 100-piece answer and
// notes when it writes the first piece of text of each answer.
func firstTokenWorld(b *testing.B, env map[string]string) (*world, *atomic.Int64) {
	b.Helper()
	w := newWorld(b, worldOptions{env: env})
	var first atomic.Int64
	w.model.SetStreaming(modeltest.Streaming{ChunkRunes: 4, Delay: time.Millisecond,
		BeforeChunk: func(_ context.Context, i int) error {
			if i == 1 { // event 0 is the role; 1 is the first text
				first.Store(time.Now().UnixNano())
			}
			return nil
		}})
	w.model.SetHandler(func(_ context.Context, req model.Request) (model.Response, error) {
		if strings.Contains(req.Messages[0].Content, "[skill review]") {
			return final("nothing to save"), nil
		}
		return final(strings.Repeat("word ", 80)), nil
	})
	return w, &first
}

// report adds the median and p99 of samples to b's output.
func report(b *testing.B, samples []time.Duration) {
	b.Helper()
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[min(len(samples)-1, int(q*float64(len(samples))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "max-ms")
}

func BenchmarkStream_FirstTokenWeb(b *testing.B) {
	w, first := firstTokenWorld(b, nil)
	events, stop := w.watchEvents(b, "ttft")
	defer stop()
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		first.Store(0)
		body := fmt.Sprintf(`{"chat":"ttft","text":"answer %d"}`, i)
		go func() {
			if res, err := http.Post(w.http.URL+"/api/chat", "application/json", strings.NewReader(body)); err == nil {
				res.Body.Close()
			}
		}()
		seen := false
		for !seen {
			select {
			case ev := <-events:
				if ev.name == "draft" && len(samples) == i {
					samples = append(samples, ev.at.Sub(time.Unix(0, first.Load())))
				}
				seen = ev.name == "reply"
			case <-time.After(30 * time.Second):
				b.Fatalf("answer %d: no reply", i)
			}
		}
	}
	b.StopTimer()
	report(b, samples)
}

func BenchmarkStream_FirstTokenTelegram(b *testing.B) {
	w, first := firstTokenWorld(b, map[string]string{"TELEGRAM_RATE_LIMIT": "on"})
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		first.Store(0)
		chat := int64(-5000 - i) // a group: the draft is a message, then edits
		w.tg.SendText(chat, 7, "answer", telegramtest.InGroup(), telegramtest.Mention())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
			for _, c := range calls {
				if c.ChatID == chat && c.Method == "sendMessage" {
					samples = append(samples, c.Time.Sub(time.Unix(0, first.Load())))
					return true
				}
			}
			return false
		})
		cancel()
		if err != nil {
			b.Fatalf("answer %d: no draft", i)
		}
		deadline := time.Now().Add(30 * time.Second)
		// The answer is plain text: the final edit may find the last draft
		// identical ("not modified"), so wait for what the chat shows.
		for v := w.tg.Visible(chat); len(v) != 1 || v[0] != strings.TrimSpace(strings.Repeat("word ", 80)); v = w.tg.Visible(chat) {
			if time.Now().After(deadline) {
				b.Fatalf("answer %d: no final", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	report(b, samples)
}

func BenchmarkStream_FirstTokenDiscord(b *testing.B) {
	w, first := firstTokenWorld(b, nil)
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		first.Store(0)
		ch := fmt.Sprint(90000 + i)
		w.dc.DM(ch, "42", "answer")
		posts := w.dc.WaitPostsTo(b, ch, 1)
		samples = append(samples, posts[0].At.Sub(time.Unix(0, first.Load())))
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := w.dc.Visible(ch)
			if len(got) == 1 && got[0] == strings.TrimSpace(strings.Repeat("word ", 80)) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("answer %d: channel shows %q", i, got)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	report(b, samples)
}

// BenchmarkStream_CPUPerAnswer measures the CPU time of this whole process
// (daemon, fake model, event-stream reader) per answer of 500 tokens (500
// pieces of 4 characters) in the web chat: streamed as fast as the fake
// writes ("burst", one draft), streamed at 500 tokens/s ("paced", a draft
// every 50 ms), and, for comparison, answered in one piece by a server that
// does not stream ("whole").
//
//	go test ./regression/ -run '^$' -bench 'BenchmarkStream_CPUPerAnswer' -benchtime 50x
func BenchmarkStream_CPUPerAnswer(b *testing.B) {
	for _, mode := range []struct {
		name string
		st   modeltest.Streaming
	}{
		{"burst", modeltest.Streaming{ChunkRunes: 4}},
		{"paced", modeltest.Streaming{ChunkRunes: 4, Delay: 2 * time.Millisecond}},
		{"whole", modeltest.Streaming{IgnoreStream: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			w := newWorld(b, worldOptions{})
			w.model.SetStreaming(mode.st)
			answer := strings.Repeat("tok ", 500) // 500 pieces of 4 characters
			w.model.SetHandler(func(_ context.Context, req model.Request) (model.Response, error) {
				if strings.Contains(req.Messages[0].Content, "[skill review]") {
					return final("nothing to save"), nil
				}
				return final(answer), nil
			})
			events, stop := w.watchEvents(b, "cpu")
			defer stop()
			drafts := 0
			run := func(i int) {
				body := fmt.Sprintf(`{"chat":"cpu","text":"answer %d"}`, i)
				res, err := http.Post(w.http.URL+"/api/chat", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				var a struct{ Replies []struct{ Text string } }
				_ = json.NewDecoder(res.Body).Decode(&a)
				res.Body.Close()
				if len(a.Replies) != 1 || strings.TrimSpace(a.Replies[0].Text) != strings.TrimSpace(answer) {
					b.Fatalf("answer %d: %d replies: %.80q", i, len(a.Replies), a.Replies)
				}
				for { // drain this answer's events up to its reply
					ev := <-events
					if ev.name == "draft" {
						drafts++
					}
					if ev.name == "reply" {
						return
					}
				}
			}
			run(-1) // warm up: connections, session load
			drafts = 0
			before := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				run(i)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/answer")
			b.ReportMetric(float64(drafts)/float64(b.N), "drafts/answer")
		})
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
