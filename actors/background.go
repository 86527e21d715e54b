package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/tools"
)

// Background follow-ups are children of the session, not of the turn that
// asked for them: they outlive it, the session does not passivate while
// they run, and /stop, /new and shutdown cancel them. Being spawned by the
// session, they are bound to its Session like everything else below it, so
// whatever they deliver goes to this conversation in its platform's format.

// Kinds of background turns beyond tools.Background.
const (
	kindCron     = "cron"
	kindDelegate = "delegate"
)

// startBackground is a request from a bound actor (a tool, a turn) to its
// session: run prompt as a background child.
type startBackground struct {
	kind   string
	prompt string
	// answers, if set, is the command message this follow-up acknowledges.
	answers string
}

// bgTurn is a running background child.
type bgTurn struct {
	pid    *actor.PID
	cancel context.CancelFunc
	kind   string
	spoke  bool // it already delivered speech: no auto-voice for its answer
}

const (
	reviewInstructions = "[skill review] This is a background review, not a message from the user. Look at the recent conversation. " +
		"If it shows a reusable procedure worth keeping, create or improve a skill with the skills tool. " +
		"Answer with one short sentence telling the user what you saved, or exactly NOTHING if you saved nothing."
	sweepInstructions = "[memory sweep] This is a background review, not a message from the user. Save durable facts about the user " +
		"or this conversation with the memory tool (read first to avoid duplicates). " +
		"Answer with one short sentence telling the user what you saved, or exactly NOTHING if you saved nothing."
	reviewPrompt = "Review the conversation so far for skills worth keeping."
	sweepPrompt  = "Review the conversation so far for facts worth remembering."
)

// background asks a tool's session to start a follow-up; it is the
// tools.Env.Background of every tool.
func (rt *Runtime) background(c actor.Context, session *actor.PID, kind tools.Background, prompt string) error {
	switch kind {
	case tools.SkillReview, tools.MemorySweep, tools.BackgroundPrompt:
	default:
		return fmt.Errorf("unknown background kind %q", kind)
	}
	if strings.TrimSpace(prompt) == "" && kind == tools.BackgroundPrompt {
		return errors.New("background prompt is empty")
	}
	c.Send(session, &startBackground{kind: string(kind), prompt: prompt})
	return nil
}

// handleStartBackground spawns a background turn of kind as a child of the
// session.
func (a *session) handleStartBackground(c actor.Context, m *startBackground) {
	if a.state != loaded {
		// Rare (a follow-up asked for before the session loaded): try again
		// once the state is there, behind the messages already waiting.
		c.Send(c.Self(), m)
		return
	}
	for _, b := range a.bg {
		if b.kind == m.kind && m.kind != string(tools.BackgroundPrompt) && m.kind != kindCron {
			return // one review and one sweep at a time is plenty
		}
	}
	if len(a.bg) >= a.rt.cfg.MaxBackground {
		a.logger().Warn("background follow-up refused: too many running", "kind", m.kind)
		if m.answers != "" {
			a.deliver(c, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "⏳ Too many background tasks are running; try again later.", Answers: []string{m.answers}, Last: true, Origin: "command"})
		}
		return
	}
	a.turnSeq++
	ctx, cancel := context.WithTimeout(a.rt.ctx, a.rt.cfg.TurnTimeout)
	t := &turn{rt: a.rt, ctx: ctx, id: a.turnSeq, session: c.Self(), reportTo: c.Self(), history: a.history, kind: m.kind}
	prompt := m.prompt
	switch tools.Background(m.kind) {
	case tools.SkillReview:
		t.instructions, t.allow = reviewInstructions, only("skills", "memory", "text_to_speech")
		if prompt == "" {
			prompt = reviewPrompt
		}
	case tools.MemorySweep:
		t.instructions, t.allow = sweepInstructions, only("memory", "text_to_speech")
		if prompt == "" {
			prompt = sweepPrompt
		}
	default: // background prompt, cron run: a full turn whose answer is delivered
		t.persist = true
	}
	t.inputs = []*messages.UserMessage{{Text: prompt}}
	pid, err := c.SpawnNamed(a.rt.turnProps(t), fmt.Sprintf("%s-%d", m.kind, a.turnSeq))
	if err != nil {
		cancel()
		a.logger().Error("spawn background turn", "kind", m.kind, "err", err)
		return
	}
	if a.bg == nil {
		a.bg = make(map[uint64]*bgTurn)
	}
	a.bg[a.turnSeq] = &bgTurn{pid: pid, cancel: cancel, kind: m.kind}
	if m.answers != "" {
		a.deliver(c, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "⏳ Working on it in the background; the result will arrive here.", Answers: []string{m.answers}, Last: true, Origin: "command"})
	}
}

// handleBackgroundDone delivers what a background child produced into the
// conversation: the answer of a cron run or background prompt, or a review's
// note ("memory updated") unless it saved nothing.
func (a *session) handleBackgroundDone(c actor.Context, b *bgTurn, m *turnDone) {
	b.cancel()
	c.Stop(b.pid)
	delete(a.bg, m.turn)
	text := strings.TrimSpace(m.reply)
	switch b.kind {
	case string(tools.SkillReview), string(tools.MemorySweep):
		if m.failed || text == "" || strings.EqualFold(strings.Trim(text, ".! "), "nothing") {
			return
		}
		text = "💾 " + text
	default:
		if !m.failed {
			a.history = append(a.history, m.produced...)
		}
		if text == "" {
			return
		}
	}
	wantVoice := !m.failed && !b.spoke && a.voice == messages.VoiceTTS && (b.kind == kindCron || b.kind == string(tools.BackgroundPrompt))
	a.deliver(c, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, Last: !wantVoice, Origin: b.kind})
	if wantVoice {
		a.speak(c, text, nil, "")
	}
}

// cancelBackground stops every background child (on /stop, /new, stop).
func (a *session) cancelBackground(c actor.Context) {
	for id, b := range a.bg {
		b.cancel()
		if c != nil {
			c.Stop(b.pid)
		}
		delete(a.bg, id)
	}
}

// afterTurn starts the periodic follow-ups: a skill review every
// ReviewEvery turns and a memory sweep every SweepEvery turns.
func (a *session) afterTurn(c actor.Context) {
	a.sinceReview++
	a.sinceSweep++
	if n := a.rt.cfg.ReviewEvery; n > 0 && a.sinceReview >= n {
		a.sinceReview = 0
		a.handleStartBackground(c, &startBackground{kind: string(tools.SkillReview)})
	}
	if n := a.rt.cfg.SweepEvery; n > 0 && a.sinceSweep >= n {
		a.sinceSweep = 0
		a.handleStartBackground(c, &startBackground{kind: string(tools.MemorySweep)})
	}
}

// sweepBeforeIdle starts a memory sweep when a session is about to
// passivate with turns not yet swept; it reports whether it did.
func (a *session) sweepBeforeIdle(c actor.Context) bool {
	if !a.rt.cfg.SweepOnIdle || a.sinceSweep == 0 || a.rt.cfg.SweepEvery <= 0 {
		return false
	}
	a.sinceSweep = 0
	a.handleStartBackground(c, &startBackground{kind: string(tools.MemorySweep)})
	return len(a.bg) > 0
}

// only returns a tool filter allowing exactly names.
func only(names ...string) func(string) bool {
	return func(n string) bool {
		for _, x := range names {
			if n == x {
				return true
			}
		}
		return false
	}
}

// delegate runs a sub-agent turn as a child of the calling tool actor: it
// inherits the conversation's identity by construction, its voice replies
// go to the same session, and cancelling the caller cancels it. It blocks
// the tool (which runs on its own goroutine) until the sub-agent answers.
func (rt *Runtime) delegate(ctx context.Context, c actor.Context, a *toolActor, task string) (string, error) {
	if strings.TrimSpace(task) == "" {
		return "", errors.New("delegate_task: the task is empty")
	}
	if a.depth >= rt.cfg.MaxDelegateDepth {
		return "", fmt.Errorf("delegate_task: sub-agents may not delegate further (depth %d)", a.depth)
	}
	// Two bounds: per calling turn (as Hermes: three children at a time)
	// and for the whole daemon (so many users delegating cannot swamp it).
	for _, sem := range []chan struct{}{a.delegates, rt.delegates} {
		if sem == nil {
			continue
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-ctx.Done():
			return "", fmt.Errorf("delegate_task: waiting for a free sub-agent slot: %w", ctx.Err())
		}
	}
	timeout := rt.cfg.TurnTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	f := actor.NewFuture(c.ActorSystem(), timeout)
	t := &turn{
		// The sub-agent's id is its caller's turn: whatever it says aloud is
		// part of that turn's answer in the session.
		rt: rt, ctx: ctx, id: a.turn, session: a.session, reportTo: f.PID(), kind: kindDelegate, depth: a.depth + 1,
		inputs: []*messages.UserMessage{{Text: task}},
		allow:  func(n string) bool { return n != "delegate_task" },
		instructions: "[sub-agent] You are a sub-agent working on one task for the main assistant. " +
			"Do the task and answer with the result only; the main assistant will relay it.",
	}
	rt.delegateSeq.Add(1)
	if _, err := c.SpawnNamed(rt.turnProps(t), fmt.Sprintf("delegate-%d", rt.delegateSeq.Load())); err != nil {
		return "", fmt.Errorf("delegate_task: start sub-agent: %w", err)
	}
	res, err := f.Result()
	if err != nil {
		return "", fmt.Errorf("delegate_task: %w", err)
	}
	done, ok := res.(*turnDone)
	if !ok {
		return "", fmt.Errorf("delegate_task: unexpected answer %T", res)
	}
	if done.failed {
		return "", fmt.Errorf("delegate_task: the sub-agent failed: %s", done.reply)
	}
	return done.reply, nil
}

// jobsChanged wakes the scheduler (a tool created or removed a job).
func (rt *Runtime) jobsChanged() {
	if rt.scheduler != nil {
		rt.sys.Root.Send(rt.scheduler, &schedulerTick{})
	}
}
