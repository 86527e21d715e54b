package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hermesd/hermesd/model"
)

// genHistory draws a well-formed history: user messages, plain answers, and
// assistant messages with tool calls each followed by their results.
func genHistory(t *rapid.T) []model.Message {
	var h []model.Message
	n := rapid.IntRange(0, 40).Draw(t, "exchanges")
	for i := range n {
		h = append(h, model.Message{Role: model.RoleUser, Content: strings.Repeat("u", rapid.IntRange(0, 2000).Draw(t, "user"))})
		for r := range rapid.IntRange(0, 3).Draw(t, "rounds") {
			calls := rapid.IntRange(1, 3).Draw(t, "calls")
			a := model.Message{Role: model.RoleAssistant}
			for k := range calls {
				a.ToolCalls = append(a.ToolCalls, model.ToolCall{ID: fmt.Sprintf("c%d_%d_%d", i, r, k), Name: "t", Arguments: "{}"})
			}
			h = append(h, a)
			for k := range calls {
				h = append(h, model.Message{Role: model.RoleTool, ToolCallID: a.ToolCalls[k].ID,
					Content: strings.Repeat("r", rapid.IntRange(0, 30000).Draw(t, "result"))})
			}
		}
		h = append(h, model.Message{Role: model.RoleAssistant, Content: strings.Repeat("a", rapid.IntRange(0, 2000).Draw(t, "answer"))})
	}
	return h
}

// wellFormed reports whether every tool result in msgs follows, in the same
// run of tool messages, the assistant message that called it.
func wellFormed(msgs []model.Message) error {
	var open map[string]bool
	for i, m := range msgs {
		switch {
		case m.Role == model.RoleTool:
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result %s without its call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case len(open) > 0:
			return fmt.Errorf("message %d: calls %v left without results", i, open)
		default:
			open = nil
		}
		if len(m.ToolCalls) > 0 {
			open = make(map[string]bool)
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("calls %v left without results at the end", open)
	}
	return nil
}

func TestFitHistory_NeverSplitsToolCallsAndFits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHistory(t)
		room := rapid.IntRange(0, 30000).Draw(t, "room")
		limit := rapid.SampledFrom([]int{0, 1000, 16 << 10}).Draw(t, "limit")
		start := fitHistory(h, room, limit)
		kept := h[start:]
		if err := wellFormed(kept); err != nil {
			t.Fatalf("kept from %d: %v", start, err)
		}
		est := 0
		for _, m := range kept {
			sent := forModel(m, limit)
			if e, want := estimateForModel(&m, limit), estimateMessage(&sent); e < want {
				t.Fatalf("estimate without the copy %d < %d with it", e, want)
			}
			est += estimateForModel(&m, limit)
		}
		if est > room {
			t.Fatalf("kept %d tokens in a room of %d", est, room)
		}
		// It keeps as much as it can: one more valid start would not fit.
		for i := start - 1; i >= 0; i-- {
			if h[i].Role == model.RoleTool {
				continue
			}
			more := 0
			for j := range h[i:] {
				more += estimateForModel(&h[i+j], limit)
			}
			if more <= room {
				t.Fatalf("start %d fits (%d <= %d) but %d was chosen", i, more, room, start)
			}
			break
		}
	})
}

func TestCompressCut_NeverSplitsToolCalls(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHistory(t)
		entries := make([]Entry, len(h))
		for i := range h {
			entries[i] = Entry{ID: int64(i + 1), Message: h[i]}
		}
		budget := rapid.IntRange(256, 40000).Draw(t, "budget")
		keep := rapid.SampledFrom([]float64{-1, 0, 0.25, 0.5, 0.9}).Draw(t, "keep")
		cut := compressCut(entries, "", budget, keep, 16<<10)
		if cut < 0 || cut > len(h) {
			t.Fatalf("cut %d of %d", cut, len(h))
		}
		if err := wellFormed(h[:cut]); err != nil {
			t.Fatalf("summarised part (cut %d): %v", cut, err)
		}
		if err := wellFormed(h[cut:]); err != nil {
			t.Fatalf("kept part (cut %d): %v", cut, err)
		}
		// A forced cut keeps at least the last exchange verbatim.
		if keep < 0 && cut > max(0, lastUserIndex(h)) {
			t.Fatalf("forced cut %d, past the last user message at %d", cut, lastUserIndex(h))
		}
	})
}

func TestTruncateForModel(t *testing.T) {
	cases := []struct {
		name, in string
		limit    int
		want     string
	}{
		{"short", "hello", 10, "hello"},
		{"off", strings.Repeat("x", 100), 0, strings.Repeat("x", 100)},
		{"cut", strings.Repeat("x", 100), 10, strings.Repeat("x", 10) + "\n[… result truncated: 10 of 100 bytes shown]"},
		// "é" is two bytes: a cut in its middle moves back before it.
		{"rune", "aéééé", 4, "aé\n[… result truncated: 3 of 9 bytes shown]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := truncateForModel(c.in, c.limit); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTokenMeter_CalibratesTowardsReportedAndStaysBounded(t *testing.T) {
	var tm tokenMeter
	if got := tm.scale("m", 1000); got != 1000 {
		t.Fatalf("uncalibrated scale = %d", got)
	}
	for range 40 {
		tm.observe("m", 1000, 1300) // the server counts 30% more
	}
	if got := tm.scale("m", 1000); got < 1280 || got > 1300 {
		t.Fatalf("calibrated scale = %d, want about 1300", got)
	}
	if got := tm.scale("other", 1000); got != 1000 {
		t.Fatalf("another model's scale = %d", got)
	}
	for range 40 {
		tm.observe("m", 1000, 1_000_000) // nonsense
	}
	if got := tm.scale("m", 1000); got > 2000 {
		t.Fatalf("scale after nonsense reports = %d, want at most 2000", got)
	}
	tm.observe("m", 1000, 0) // no usage reported: ignored
	if got := tm.unscale("m", tm.scale("m", 1000)); got < 990 || got > 1010 {
		t.Fatalf("unscale(scale(1000)) = %d", got)
	}
}

// history200 is a 200-turn conversation: each turn a user message, a tool
// call with its result, and an answer, of realistic sizes.
func history200() []model.Message {
	var h []model.Message
	for i := range 200 {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			model.Message{Role: model.RoleUser, Content: strings.Repeat("What about this, then? ", 8)},
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "session_search", Arguments: `{"query":"earlier plans"}`}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Name: "session_search", Content: strings.Repeat("result line ", 100)},
			model.Message{Role: model.RoleAssistant, Content: strings.Repeat("Here is a considered answer. ", 20)},
		)
	}
	return h
}

// BenchmarkRequest measures token estimation and request building for a
// 200-turn history (800 messages), as a turn does before each model call:
// the budget cuts it, so the fitting runs over the whole history.
func BenchmarkRequest(b *testing.B) {
	for _, ctxTokens := range []int{8192, 131072} {
		b.Run(fmt.Sprintf("turns=200/context=%d", ctxTokens), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.ContextTokens = ctxTokens
			rt := &Runtime{cfg: cfg}
			t := &turn{rt: rt, history: history200(), summary: "an earlier summary"}
			t.convo = append(t.convo, model.Message{Role: model.RoleSystem, Content: withSummary(cfg.SystemPrompt, t.summary)})
			t.head = len(t.convo)
			t.convo = append(t.convo, t.history...)
			t.histEnd = len(t.convo)
			t.convo = append(t.convo, model.Message{Role: model.RoleUser, Content: "and now?"})
			specs := []model.ToolSpec{{Name: "memory", Description: strings.Repeat("d", 300), Parameters: []byte(`{"type":"object"}`)}}
			b.ReportAllocs()
			var n int
			for b.Loop() {
				msgs, _ := t.request(specs)
				n = len(msgs)
			}
			b.ReportMetric(float64(n), "msgs/request")
		})
	}
}

// TestTurn_CalibratesFromReportedUsage: a server whose tokenizer counts
// half again as many tokens as the estimate teaches the runtime so. The
// fake computes the estimate from what it was sent, so the ratio lands on
// 1.5 only if the turn's estimate is of the very request it sent.
func TestTurn_CalibratesFromReportedUsage(t *testing.T) {
	m := modelFunc(func(_ context.Context, req model.Request) (model.Response, error) {
		est := requestOverhead + estimateMessages(req.Messages) + estimateSpecs(req.Tools)
		return model.Response{Message: model.Message{Role: "assistant", Content: "ok"},
			Usage: model.Usage{PromptTokens: est * 3 / 2, CompletionTokens: 1}}, nil
	})
	h := startRuntime(t, m, testConfig())
	s := webSession("calib")
	for i := range 20 {
		id := fmt.Sprint("m", i)
		h.send(t, s, id, "hello there, how are you today?")
		h.rec.waitFor(t, "answer "+id, lastFor(id))
	}
	if got := h.rt.tokens.scale("", 1000); got < 1480 || got > 1500 {
		t.Fatalf("after 20 calls reported at 1.5× the estimate, 1000 estimated tokens scale to %d, want about 1500", got)
	}
}
