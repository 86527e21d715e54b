package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// turn is one agent turn: model calls, tool fan-out, the final answer. It is
// a child of its session (and so bound to it) and may wait on I/O, but never
// in Receive: model calls run through await, tool calls are child actors
// that report back. The session owns ctx; cancelling it and stopping this
// actor quiets the whole subtree.
type turn struct {
	rt  *Runtime
	ctx context.Context
	id  uint64
	// session receives voice replies of this turn's tools; reportTo gets
	// turnDone (the session, or a delegating tool's future).
	session  *actor.PID
	reportTo *actor.PID
	history  []model.Message
	inputs   []*messages.UserMessage
	// kind is kindTurn for a user's turn, else a background kind or
	// kindDelegate.
	kind turnKind
	// allow, if set, restricts the tools offered (restricted turns).
	allow func(name string) bool
	// instructions are added to the system prompt (background kinds).
	instructions string
	// depth counts delegation levels above this turn.
	depth int
	// extra is the per-turn system prompt context (memories, skills),
	// fetched once with the first model call.
	extra       string
	extraLoaded bool
	// delegates bounds this turn's concurrent sub-agents (made on first use).
	delegates chan struct{}

	convo    []model.Message // what the model sees
	produced []model.Message // what this turn adds to the history
	// tokensIn and tokensOut add up the model's usage over the turn.
	tokensIn, tokensOut int
	rounds              int
	calls               []model.ToolCall
	results             map[string]*toolResult
	tools               map[string]*actor.PID // call id → tool actor, for Terminated
	steer               []*messages.UserMessage
	toolSeq             int
	finished            bool
	// model is the catalog model the chat chose ("" for the default);
	// fallback names the model that answered instead, if one did.
	model    string
	fallback string

	// summary stands for the conversation's compressed beginning; the
	// model sees it at the end of the system prompt (compress.go).
	summary string
	// head is how many messages open convo (the system prompt) and
	// histEnd where the history ends in it: the history between them is
	// what a request drops, oldest first, when the whole does not fit.
	head, histEnd int
	// estimate is the last request's estimated tokens, before calibration,
	// compared with what the server reports.
	estimate int
	reqModel string

	// vision says the model gets photos as images; noticeVision that this
	// turn may tell the user, once for the session, that it does not.
	// notices go before the reply (attachments.go).
	vision, noticeVision, visionNoticed bool
	notices                             []string
	// stream, if set, forwards the answer to the session as it is written
	// (stream.go).
	stream *draftStream
}

// Receive handles lifecycle first, then one handler per message.
func (t *turn) Receive(c actor.Context) {
	rethrowWork(c.Message())
	t.rt.fault(t.actorKind(), c)
	switch m := c.Message().(type) {
	case *actor.Started:
		t.begin(c)
	case *modelDone:
		t.handleModelDone(c, m)
	case *steerInput:
		t.steer = append(t.steer, m.m)
	case *toolResult:
		t.handleToolResult(c, m)
	case *actor.Terminated:
		t.handleToolStopped(c, m)
	case *toolGone:
		if t.tools != nil && t.results[m.callID] == nil {
			t.results[m.callID] = &toolResult{callID: m.callID, err: errors.New("the tool stopped before answering")}
			t.maybeContinue(c)
		}
	case *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		t.rt.log.Warn("turn: unhandled message", "type", fmt.Sprintf("%T", m))
	}
}

func (t *turn) begin(c actor.Context) {
	s, _ := identity.Of(c) // bound by construction: the turn's parent is its session
	t.convo = make([]model.Message, 0, len(t.history)+len(t.inputs)+4)
	t.convo = append(t.convo, model.Message{Role: "system", Content: withSummary(t.rt.systemPrompt(s, t.instructions), t.summary)})
	t.head = len(t.convo)
	t.convo = append(t.convo, t.history...)
	t.histEnd = len(t.convo)
	for _, in := range t.inputs {
		t.convo = append(t.convo, t.withImages(in, userContent(in, t.vision)))
	}
	t.notices, t.visionNoticed = attachmentNotices(t.inputs, t.vision, t.noticeVision)
	t.callModel(c)
}

// userContent renders an inbound message the way the model should read it.
func userContent(m *messages.UserMessage, vision bool) model.Message {
	var b strings.Builder
	if m.GetFromVoice() {
		b.WriteString("[The user sent a voice message. Transcript:] ")
	}
	b.WriteString(m.GetText())
	for _, a := range m.GetAttachments() {
		writeAttachment(&b, a, vision)
	}
	return model.Message{Role: "user", Content: b.String()}
}

func (t *turn) callModel(c actor.Context) {
	req := model.Request{Model: t.model}
	if t.rounds < t.rt.cfg.MaxToolRounds {
		req.Tools = t.specs()
	}
	// req.Model, once the chat's model is set above, also picks the
	// budget and the calibration of the request's size.
	t.reqModel = req.Model
	req.Messages, t.estimate = t.request(req.Tools)
	if t.stream != nil {
		t.stream.round()
		req.OnDelta = t.stream.onDelta
	}
	ctx, m, rt := t.ctx, t.rt.model, t.rt
	s, _ := identity.Of(c)
	sender, loaded, extra := senderOf(t.inputs), t.extraLoaded, t.extra
	// The call runs on its own goroutine, bounded by the turn's context,
	// and reports back as a message: the turn stays responsive (steer,
	// tool results, Stop) meanwhile.
	goSend(c, func() any {
		if !loaded && rt.promptContext != nil {
			extra = rt.promptContext(ctx, s, sender)
		}
		if extra != "" {
			msgs := make([]model.Message, len(req.Messages))
			copy(msgs, req.Messages)
			msgs[0].Content += "\n\n" + extra
			req.Messages = msgs
		}
		resp, err := m.Complete(ctx, req)
		if err == nil {
			rt.bookUsage(s, rt.modelName(resp.Model, req.Model), resp.Usage)
		}
		return &modelDone{resp: resp, err: err, extra: extra}
	})
}

// specs are the tools this turn may offer the model.
func (t *turn) specs() []model.ToolSpec {
	all := t.rt.tools.Specs()
	if t.allow == nil {
		return all
	}
	out := make([]model.ToolSpec, 0, len(all))
	for _, sp := range all {
		if t.allow(sp.Name) {
			out = append(out, sp)
		}
	}
	return out
}

func (t *turn) handleModelDone(c actor.Context, m *modelDone) {
	if t.finished {
		return
	}
	if errors.Is(t.ctx.Err(), context.DeadlineExceeded) {
		// Out of time: say so, rather than leave the chat waiting.
		t.finish(c, timeoutText(t.rt.cfg.TurnTimeout), true)
		return
	}
	if t.ctx.Err() != nil {
		return // cancelled: the session is no longer listening
	}
	if !t.extraLoaded {
		// The request's estimate could not count what was fetched with it.
		t.estimate += tokensOf(len(m.extra))
	}
	t.extra, t.extraLoaded = m.extra, true
	if m.err != nil {
		t.rt.log.Warn("model call failed", "session", t.sessionKey(c), "err", m.err)
		t.finish(c, model.UserMessage(m.err), true)
		return
	}
	t.handleModel(c, m.resp)
}

func (t *turn) handleModel(c actor.Context, resp model.Response) {
	msg := resp.Message
	msg.Role = "assistant"
	t.rt.obs.ModelCall(t.rt.modelName(resp.Model, t.model), resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
	t.rt.tokens.observe(t.reqModel, t.estimate, resp.Usage.PromptTokens)
	t.tokensIn += resp.Usage.PromptTokens
	t.tokensOut += resp.Usage.CompletionTokens
	if resp.Fallback {
		t.fallback = resp.Model
	}
	if len(msg.ToolCalls) == 0 || t.rounds >= t.rt.cfg.MaxToolRounds {
		msg.ToolCalls = nil
		t.produced = append(t.produced, msg)
		t.finish(c, msg.Content, false)
		return
	}
	t.rounds++
	t.convo = append(t.convo, msg)
	t.produced = append(t.produced, msg)
	t.calls = msg.ToolCalls
	if t.stream != nil {
		t.stream.running(msg.ToolCalls)
	}
	t.results = make(map[string]*toolResult, len(msg.ToolCalls))
	t.tools = make(map[string]*actor.PID, len(msg.ToolCalls))
	// Fan out: every call is its own child actor, all at once.
	for _, call := range msg.ToolCalls {
		t.toolSeq++
		if t.allow != nil && !t.allow(call.Name) {
			// A restricted turn's model asked for a tool it was not offered.
			t.results[call.ID] = &toolResult{callID: call.ID, err: fmt.Errorf("tool %s is not available here", call.Name)}
			continue
		}
		props := t.rt.toolProps(t.ctx, call, t, senderOf(t.inputs))
		pid, err := c.SpawnNamed(props, fmt.Sprintf("tool-%d", t.toolSeq))
		if err != nil {
			t.results[call.ID] = &toolResult{callID: call.ID, err: fmt.Errorf("start tool: %w", err)}
			continue
		}
		t.tools[call.ID] = pid
		c.Watch(pid)
	}
	t.maybeContinue(c)
}

func (t *turn) handleToolResult(c actor.Context, r *toolResult) {
	if _, waiting := t.tools[r.callID]; !waiting || t.results[r.callID] != nil {
		return
	}
	t.results[r.callID] = r
	t.maybeContinue(c)
}

// handleToolStopped turns a tool that died without answering (a panic its
// recover missed, a Stop) into an error result, so the turn never waits on
// a tool that is gone.
func (t *turn) handleToolStopped(c actor.Context, m *actor.Terminated) {
	for id, pid := range t.tools {
		if pid.Equal(m.Who) && t.results[id] == nil {
			// Its result, if it sent one, is queued behind this system message.
			c.Send(c.Self(), &toolGone{callID: id})
			return
		}
	}
}

func (t *turn) maybeContinue(c actor.Context) {
	if t.finished || len(t.results) < len(t.calls) {
		return
	}
	for _, call := range t.calls { // results in the order the model asked
		r := t.results[call.ID]
		content := r.content
		if r.err != nil {
			content = "error: " + r.err.Error()
		}
		tm := model.Message{Role: "tool", ToolCallID: call.ID, Name: call.Name, Content: content}
		t.convo = append(t.convo, tm)
		t.produced = append(t.produced, tm)
	}
	t.calls, t.results, t.tools = nil, nil, nil
	for _, m := range t.steer {
		um := t.withImages(m, userContent(m, t.vision))
		t.convo = append(t.convo, um)
		more, gave := attachmentNotices([]*messages.UserMessage{m}, t.vision, t.noticeVision && !t.visionNoticed)
		t.notices, t.visionNoticed = append(t.notices, more...), t.visionNoticed || gave
	}
	t.steer = nil
	t.callModel(c)
}

// finish reports the turn's answer and what it produced to whoever it
// reports to; the session records both with the inputs' outcome in one
// write. A failed turn's messages are not part of the conversation.
func (t *turn) finish(c actor.Context, reply string, failed bool) {
	if t.finished {
		return
	}
	t.finished = true
	if t.fallback != "" && !failed && t.kind == kindTurn && reply != "" {
		reply += fallbackNotice(t.fallback)
	}
	if t.stream != nil {
		t.stream.stop()
	}
	done := &turnDone{turn: t.id, reply: reply, failed: failed, unsteered: t.steer, tokensIn: t.tokensIn, tokensOut: t.tokensOut}
	if t.kind == kindTurn {
		done.reply, done.visionNoticed = withNotices(t.notices, reply), t.visionNoticed
	}
	if !failed && (t.kind == kindTurn || t.kind == kindCron || t.kind == kindBackground) {
		done.produced = t.produced
	}
	c.Send(t.reportTo, done)
}

// actorKind is the Kind this turn is shown and counted as.
func (t *turn) actorKind() Kind {
	if t.kind == kindTurn || t.kind == kindDelegate {
		return KindTurn
	}
	return KindBackground
}

func (t *turn) sessionKey(c actor.Context) string {
	s, _ := identity.Of(c)
	return s.Key()
}

// senderOf is the one sender of a turn's inputs, or "" when they came from
// several people (merged in a shared thread): then no one sender may stand
// for the turn, and user-scoped tools fall back to the conversation.
func senderOf(in []*messages.UserMessage) string {
	if len(in) == 0 {
		return ""
	}
	sender := in[len(in)-1].GetSenderId()
	for _, m := range in {
		if m.GetSenderId() != sender {
			return ""
		}
	}
	return sender
}
