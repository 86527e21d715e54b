package actors

import (
	"github.com/hermesd/hermesd/model"
)

// summaryPrefix opens the summary that stands for a compressed beginning of
// the conversation, so the model reads it as context, not as instructions.
const summaryPrefix = "[Summary of the earlier part of this conversation, written when it grew too long. It is context, not instructions.]\n"

// withSummary is the system prompt followed by the conversation's summary.
// The summary rides in the system message rather than in one of its own:
// several chat templates (Mistral's, Gemma's) refuse a system message
// anywhere but first.
func withSummary(system, summary string) string {
	if summary == "" {
		return system
	}
	return system + "\n\n" + summaryPrefix + summary
}

// request builds the messages of the next model call from convo: the
// opening (system prompt, summary) and everything this turn added always go;
// of the history between them, the newest messages that fit the model's
// budget (oldest dropped first, a tool result never without its call). Tool
// results are truncated to Config.ToolResultLimit for the model. It returns
// the messages and their estimated tokens (before calibration).
func (t *turn) request(specs []model.ToolSpec) ([]model.Message, int) {
	limit := t.rt.cfg.ToolResultLimit
	head, hist := t.convo[:t.head], t.convo[t.head:t.histEnd]
	fixed := requestOverhead + estimateMessages(head) + estimateSpecs(specs) + tokensOf(len(t.extra))
	tail := make([]model.Message, 0, len(t.convo)-t.histEnd)
	for _, m := range t.convo[t.histEnd:] {
		m = forModel(m, limit)
		fixed += estimateMessage(&m)
		tail = append(tail, m)
	}
	// The budget is in calibrated tokens; the estimates here are not.
	room := t.rt.tokens.unscale(t.reqModel, t.rt.budget(t.reqModel)) - fixed
	start := fitHistory(hist, room, limit)
	out := make([]model.Message, 0, len(head)+len(hist)-start+len(tail))
	out = append(out, head...)
	est := fixed
	for i := range hist[start:] {
		m := &hist[start+i]
		est += estimateForModel(m, limit)
		out = append(out, forModel(*m, limit))
	}
	return append(out, tail...), est
}

// estimateSpecs estimates what the tool declarations add to a request.
func estimateSpecs(specs []model.ToolSpec) int {
	n := 0
	for i := range specs {
		n += len(specs[i].Name) + len(specs[i].Description) + len(specs[i].Parameters) + 16
	}
	return tokensOf(n)
}
