package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/actors/actorstest"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/tools"
)

// toolClock is an in-process model that calls the no-op tool once per turn
// and a tool that notes when it ran, so the benchmark can measure the
// runtime's share of a tool call: from the model's answer asking for the
// tool to the tool running (the turn handles the answer, spawns the tool
// actor, binds it), plus from the tool's return to the next model call (the
// result's trip back to the turn). One session at a time, so one set of
// timestamps is live.
type toolClock struct {
	mu        sync.Mutex
	answered  time.Time // the model returned the tool call
	ran, done time.Time // the tool's Run began and returned
	overhead  []time.Duration
}

func (k *toolClock) Complete(_ context.Context, req model.Request) (model.Response, error) {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
		k.overhead = append(k.overhead, k.ran.Sub(k.answered)+now.Sub(k.done))
		return model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}}, nil
	}
	k.answered = time.Now()
	return model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "noop", Arguments: "{}"}}}}, nil
}

func (k *toolClock) tool() tools.Tool {
	return tools.Tool{Name: "noop", Parameters: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, tools.Env, json.RawMessage) (string, error) {
			k.mu.Lock()
			k.ran = time.Now()
			k.done = k.ran
			k.mu.Unlock()
			return "done", nil
		}}
}

// BenchmarkToolCallOverhead measures the runtime's cost of one tool call,
// excluding the tool's own work and the model: spawn, bind, and the round
// trip of the call and its result through the turn (p50, p99).
func BenchmarkToolCallOverhead(b *testing.B) {
	k := &toolClock{}
	reg, err := tools.NewRegistry(k.tool())
	if err != nil {
		b.Fatal(err)
	}
	w := &actorstest.WaitAdapter{}
	cfg := actors.DefaultConfig()
	cfg.SweepInterval, cfg.TypingRefresh = 0, time.Hour
	cfg.ReviewEvery, cfg.SweepEvery, cfg.SweepOnIdle = 0, 0, false
	rt, err := actors.Start(cfg, actors.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Persist: actors.NewMemory(), Model: k, Tools: reg, Adapters: []platforms.Adapter{w}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx, 0)
	})
	actorstest.ClosedLoop(b, rt, w, 1, 200, "warm")
	k.mu.Lock()
	k.overhead = nil
	k.mu.Unlock()
	b.ResetTimer()
	actorstest.ClosedLoop(b, rt, w, 1, max(b.N, 200), fmt.Sprintf("t%d-", b.N))
	b.StopTimer()
	k.mu.Lock()
	defer k.mu.Unlock()
	b.ReportMetric(float64(actorstest.Percentile(k.overhead, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(actorstest.Percentile(k.overhead, 0.99).Microseconds()), "p99-µs")
}
