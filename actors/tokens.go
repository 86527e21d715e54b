package actors

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/hermesd/hermesd/model"
)

// Token estimation. hermesd talks to many OpenAI-compatible servers whose
// tokenizers differ (tiktoken's o200k, Llama's SentencePiece, Qwen's BPE …)
// and are not known from the endpoint, so it estimates instead of
// tokenizing: 3.5 bytes of text per token, plus a fixed overhead per
// message for the role and the separators the chat template adds. The
// estimate is then calibrated per model against the prompt_tokens the
// server reports (see tokenMeter). docs/conversations.md gives the method
// and its measured error.

// tokensOf estimates the tokens of n bytes of text: n/3.5, rounded up. On
// o200k this project's prose, Go code and JSON measured 3.4–3.6 bytes per
// token; 4, the usual rule of thumb, undercounted them by 8–15%.
func tokensOf(n int) int { return (2*n + 6) / 7 }

const (
	// messageOverhead is what a chat template adds per message (role
	// markers, separators): 3–4 tokens on OpenAI's, a few more on others.
	messageOverhead = 4
	// requestOverhead is the priming of the answer ("<|assistant|>").
	requestOverhead = 3
)

// estimateMessage estimates one message's tokens, before calibration.
func estimateMessage(m *model.Message) int {
	n := len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments) + 8 // the call's JSON framing
	}
	return tokensOf(n) + messageOverhead
}

// truncatedNote is an upper bound on the bytes truncateForModel adds.
const truncatedNote = 64

// estimateForModel estimates m as forModel(m, limit) would send it, without
// building that copy.
func estimateForModel(m *model.Message, limit int) int {
	n := estimateMessage(m)
	if m.Role == model.RoleTool && limit > 0 && len(m.Content) > limit {
		n -= tokensOf(len(m.Content)-limit-truncatedNote) - 1 // rounding: never below the copy's estimate
	}
	return n
}

// estimateMessages estimates msgs' tokens, before calibration.
func estimateMessages(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		n += estimateMessage(&msgs[i])
	}
	return n
}

// tokenMeter calibrates the estimate per model: after each call it moves
// the model's ratio (reported prompt tokens / estimated tokens) a quarter of
// the way towards what that call measured, so one odd request (a tool
// schema-heavy one, say) does not swing it. The ratio stays within
// [0.5, 2]: a server that reports nonsense cannot make hermesd believe a
// request is ten times smaller than it is. Safe for concurrent use by every
// turn of the runtime.
type tokenMeter struct {
	mu    sync.Mutex
	ratio map[string]float64
}

const (
	minRatio, maxRatio = 0.5, 2.0
	calibrationWeight  = 0.25
)

// scale returns the calibrated estimate of est tokens for modelName.
func (tm *tokenMeter) scale(modelName string, est int) int {
	tm.mu.Lock()
	r, ok := tm.ratio[modelName]
	tm.mu.Unlock()
	if !ok {
		return est
	}
	return int(float64(est)*r + 0.5)
}

// unscale converts a budget in calibrated tokens for modelName back to
// uncalibrated estimate units.
func (tm *tokenMeter) unscale(modelName string, tokens int) int {
	tm.mu.Lock()
	r, ok := tm.ratio[modelName]
	tm.mu.Unlock()
	if !ok {
		return tokens
	}
	return int(float64(tokens) / r)
}

// observe records that a request estimated at est tokens was reported as
// reported prompt tokens by modelName. Zero reports (servers that send no
// usage) are ignored.
func (tm *tokenMeter) observe(modelName string, est, reported int) {
	if est <= 0 || reported <= 0 {
		return
	}
	measured := min(max(float64(reported)/float64(est), minRatio), maxRatio)
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.ratio == nil {
		tm.ratio = make(map[string]float64)
	}
	r, ok := tm.ratio[modelName]
	if !ok {
		r = 1
	}
	tm.ratio[modelName] = r + calibrationWeight*(measured-r)
}

// budget is the prompt budget of a model: its context window minus the
// reserve kept for the answer (at most a quarter of a small window).
func (rt *Runtime) budget(modelName string) int {
	ctx := 0
	if rt.contextTokens != nil {
		ctx = rt.contextTokens(modelName)
	}
	if ctx <= 0 {
		ctx = rt.cfg.ContextTokens
	}
	return max(ctx-min(rt.cfg.AnswerReserve, ctx/4), 256)
}

// truncateForModel cuts a tool result longer than limit bytes (at a rune
// boundary) and says so, so the model knows it did not see everything.
// limit <= 0 disables the cut.
func truncateForModel(content string, limit int) string {
	if limit <= 0 || len(content) <= limit {
		return content
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(content[cut]) {
		cut-- // do not split a UTF-8 sequence
	}
	return content[:cut] + fmt.Sprintf("\n[… result truncated: %d of %d bytes shown]", cut, len(content))
}

// forModel returns m as the model should see it: a tool result truncated to
// limit bytes.
func forModel(m model.Message, limit int) model.Message {
	if m.Role == model.RoleTool {
		m.Content = truncateForModel(m.Content, limit)
	}
	return m
}

// fitHistory returns the newest suffix of history whose estimate fits in
// room tokens, starting at a message a model accepts first: never a tool
// result cut off from the assistant message that called it. It returns the
// index the suffix starts at; len(history) when nothing fits.
func fitHistory(history []model.Message, room int, limit int) int {
	start := len(history)
	used := 0
	for i := len(history) - 1; i >= 0; i-- {
		used += estimateForModel(&history[i], limit)
		if used > room {
			break
		}
		if history[i].Role != model.RoleTool {
			// A suffix may start here: whatever tool results follow belong
			// to messages inside it.
			start = i
		}
	}
	return start
}

// contextStats is what /status shows about a conversation's context.
type contextStats struct {
	tokens, budget int
}

func (s contextStats) String() string {
	pct := 0
	if s.budget > 0 {
		pct = s.tokens * 100 / s.budget
	}
	return fmt.Sprintf("~%d / %d tokens (%d%%)", s.tokens, s.budget, pct)
}
