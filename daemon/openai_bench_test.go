//go:build unix

package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors/actorstest"
	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model/modeltest"
)

// firstTokenClock records when the fake model wrote the first text piece
// of the current (single) stream.
type firstTokenClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *firstTokenClock) beforeChunk(_ context.Context, i int) error {
	if i == 1 { // event 0 carries the role, event 1 the first words
		c.mu.Lock()
		c.at = time.Now()
		c.mu.Unlock()
	}
	return nil
}

func (c *firstTokenClock) last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// streamOnce posts one streamed request and returns when its first content
// arrived and how many content chunks it had.
func streamOnce(tb testing.TB, url, session string) (time.Time, int) {
	body := fmt.Sprintf(`{"model":"hermesd","stream":true,"user":%q,"messages":[{"role":"user","content":"go"}]}`, session)
	res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var first time.Time
	n := 0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, `data: {`) && strings.Contains(line, `"content":"`) && !strings.Contains(line, `"content":""`) {
			if first.IsZero() {
				first = time.Now()
			}
			n++
		}
	}
	if first.IsZero() {
		tb.Fatal("no content arrived")
	}
	return first, n
}

// BenchmarkOpenAI_FirstToken: time from the model writing its first words
// to an OpenAI client reading them from /v1/chat/completions (the turn,
// the draft, the outbox and the SSE write), p50 and p99; and the process's
// CPU per streamed answer of 500 pieces (model fake and client included).
func BenchmarkOpenAI_FirstToken(b *testing.B) {
	clock := &firstTokenClock{}
	answer := strings.Repeat("word ", 400) // 2,000 runes: 500 pieces of 4
	m := modeltest.NewServer(b, modeltest.WithHandler(modeltest.Reply(answer)),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 4, BeforeChunk: clock.beforeChunk}))
	r := start(b, testConfig(b, b.TempDir(), map[string]string{"OPENAI_BASE_URL": m.URL(), "HERMES_REVIEW_EVERY": "0", "HERMES_SWEEP_EVERY": "0"}), daemon.Options{})
	streamOnce(b, r.srv.URL, "warm")
	lat := make([]time.Duration, 0, b.N)
	chunks := 0
	cpu0 := actorstest.CPUTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		first, n := streamOnce(b, r.srv.URL, fmt.Sprintf("b%d", i%50))
		lat = append(lat, first.Sub(clock.last()))
		chunks += n
	}
	b.StopTimer()
	cpu := actorstest.CPUTime(b) - cpu0
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(actorstest.Percentile(lat, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/answer")
	b.ReportMetric(float64(chunks)/float64(b.N), "chunks/answer")
}
