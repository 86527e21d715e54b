package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// turnKind is what a turn-shaped child of a session is for.
type turnKind string

// Turn kinds: the user's turn, the background kinds, and sub-agents.
const (
	kindTurn       turnKind = "turn"
	kindReview              = turnKind(tools.SkillReview)
	kindSweep               = turnKind(tools.MemorySweep)
	kindBackground          = turnKind(tools.BackgroundPrompt)
	kindCron       turnKind = "cron"
	kindDelegate   turnKind = "delegate"
)

// startBackground is a request from a bound actor (a tool, a turn) to its
// session: run prompt as a background child.
type startBackground struct {
	kind   turnKind
	prompt string
	// answers, if set, is the command message this follow-up acknowledges.
	answers *messages.UserMessage
}

// bgTurn is a running background child.
type bgTurn struct {
	pid    *actor.PID
	cancel context.CancelFunc
	kind   turnKind
	conv   int64
	spoke  bool // it already delivered speech: no auto-voice for its answer
	expiry *time.Timer
}

// maxBackgroundWaiting bounds the follow-ups waiting for a slot; past it a
// cron run is refused (and logged) rather than held without limit.
const maxBackgroundWaiting = 64

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
	c.Send(session, &startBackground{kind: turnKind(kind), prompt: prompt})
	return nil
}

// handleStartBackground spawns a background turn of kind as a child of the
// session. A cron run or /background prompt that finds every slot taken
// waits for one; a periodic review or sweep is skipped (the next comes).
func (a *session) handleStartBackground(c actor.Context, m *startBackground) {
	periodic := m.kind == kindReview || m.kind == kindSweep
	for _, b := range a.bg {
		if periodic && b.kind == m.kind {
			return // one review and one sweep at a time is plenty
		}
	}
	if len(a.bg) >= a.rt.cfg.MaxBackground {
		switch {
		case periodic:
			a.logger().Info("periodic follow-up skipped: background slots full", "kind", m.kind)
		case len(a.bgWaiting) < maxBackgroundWaiting:
			a.bgWaiting = append(a.bgWaiting, m)
			if m.answers != nil {
				a.reply(c, m.answers, "⏳ Other background tasks are running; this one starts when one of them is done.")
			}
		default:
			a.logger().Warn("background follow-up refused: too many waiting", "kind", m.kind)
			if m.answers != nil {
				a.reply(c, m.answers, "⏳ Too many background tasks are waiting; try again later.")
			}
		}
		return
	}
	a.turnSeq = a.rt.turnIDs.Add(1)
	ctx, cancel := context.WithTimeout(a.rt.ctx, a.rt.cfg.TurnTimeout)
	t := &turn{rt: a.rt, ctx: ctx, id: a.turnSeq, session: c.Self(), reportTo: c.Self(), history: a.history, kind: m.kind, model: a.model}
	t.summary = a.summary
	prompt := m.prompt
	switch m.kind {
	case kindReview:
		t.instructions, t.allow = reviewInstructions, only("skills", "memory", "text_to_speech")
		if prompt == "" {
			prompt = reviewPrompt
		}
	case kindSweep:
		t.instructions, t.allow = sweepInstructions, only("memory", "text_to_speech")
		if prompt == "" {
			prompt = sweepPrompt
		}
	}
	t.inputs = []*messages.UserMessage{{Text: prompt}}
	if !a.spawnBackground(c, m.kind, a.rt.turnProps(t), cancel) {
		return
	}
	if m.answers != nil {
		a.reply(c, m.answers, "⏳ Working on it in the background; the result will arrive here.")
	}
}

// spawnBackground spawns props as the background child a.turnSeq of kind,
// whose context cancel ends, and holds a slot for it until it reports, dies
// or outlives TurnTimeout (bgGone). It reports whether the child started.
func (a *session) spawnBackground(c actor.Context, kind turnKind, props *actor.Props, cancel context.CancelFunc) bool {
	pid, err := c.SpawnNamed(props, fmt.Sprintf("%s-%d", kind, a.turnSeq))
	if err != nil {
		cancel()
		a.logger().Error("spawn background child", "kind", kind, "err", err)
		return false
	}
	if a.bg == nil {
		a.bg = make(map[uint64]*bgTurn)
	}
	id, self, sys := a.turnSeq, c.Self(), c.ActorSystem()
	a.bg[id] = &bgTurn{pid: pid, cancel: cancel, kind: kind, conv: a.conv,
		expiry: time.AfterFunc(a.rt.cfg.TurnTimeout+turnGrace, func() { sys.Root.Send(self, &bgGone{turn: id, why: "timed out"}) })}
	return true
}

// endBackground forgets background child id and starts what waited for its
// slot.
func (a *session) endBackground(c actor.Context, id uint64, b *bgTurn) {
	b.cancel()
	b.expiry.Stop()
	c.Stop(b.pid)
	delete(a.bg, id)
	for len(a.bgWaiting) > 0 && len(a.bg) < a.rt.cfg.MaxBackground {
		next := a.bgWaiting[0]
		a.bgWaiting = a.bgWaiting[1:]
		next.answers = nil // acknowledged when it was queued
		a.handleStartBackground(c, next)
	}
}

// handleBackgroundDone delivers what a background child produced into the
// conversation: the answer of a cron run or background prompt, or a review's
// note ("memory updated") unless it saved nothing.
func (a *session) handleBackgroundDone(c actor.Context, id uint64, b *bgTurn, m *turnDone) {
	a.endBackground(c, id, b)
	text := strings.TrimSpace(m.reply)
	st := Settlement{Conversation: b.conv}
	switch b.kind {
	case kindReview, kindSweep:
		if m.failed || text == "" || strings.EqualFold(strings.Trim(text, ".! "), "nothing") {
			return
		}
		text = "💾 " + text
	default:
		if !m.failed {
			a.history = append(a.history, m.produced...)
			a.appended += len(m.produced)
			st.History = m.produced
		}
		if text == "" {
			if len(st.History) > 0 {
				a.settle(c, st)
			}
			return
		}
	}
	wantVoice := !m.failed && !b.spoke && a.voice == messages.VoiceTTS && (b.kind == kindCron || b.kind == kindBackground)
	st.Replies = []*messages.Delivery{{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, Last: !wantVoice, Origin: string(b.kind)}}
	if wantVoice {
		st.Replies = append(st.Replies, a.voicePlaceholder(text, nil, string(b.kind)))
	}
	a.settle(c, st)
}

// handleBackgroundGone frees the slot of a background child that died or
// ran out of time without answering; a cron run or /background prompt says
// so in the chat, since the user waits for it.
func (a *session) handleBackgroundGone(c actor.Context, m *bgGone) {
	b := a.bg[m.turn]
	if b == nil {
		return
	}
	a.logger().Warn("background follow-up ended without answering", "kind", b.kind, "why", m.why)
	a.endBackground(c, m.turn, b)
	if b.kind == kindCompress {
		a.compressGone(c, m.why)
	}
	if b.kind == kindCron || b.kind == kindBackground {
		a.settle(c, Settlement{Replies: []*messages.Delivery{{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT,
			Text: "⚠️ A " + backgroundName(b.kind) + " " + m.why + ".", Last: true, Origin: string(b.kind)}}})
	}
}

func backgroundName(k turnKind) string {
	if k == kindCron {
		return "scheduled task"
	}
	return "background task"
}

// cancelBackground stops every background child (on /stop, /new, stop) and
// forgets those waiting for a slot.
func (a *session) cancelBackground(c actor.Context) {
	for id, b := range a.bg {
		b.cancel()
		b.expiry.Stop()
		if c != nil {
			c.Stop(b.pid)
		}
		delete(a.bg, id)
	}
	a.bgWaiting = nil
}

// afterTurn starts the periodic follow-ups: a skill review every
// ReviewEvery turns and a memory sweep every SweepEvery turns.
func (a *session) afterTurn(c actor.Context) {
	a.sinceReview++
	a.sinceSweep++
	if n := a.rt.cfg.ReviewEvery; n > 0 && a.sinceReview >= n {
		a.sinceReview = 0
		a.handleStartBackground(c, &startBackground{kind: kindReview})
	}
	if n := a.rt.cfg.SweepEvery; n > 0 && a.sinceSweep >= n {
		a.sinceSweep = 0
		a.handleStartBackground(c, &startBackground{kind: kindSweep})
	}
}

// sweepBeforeIdle starts a memory sweep when a session is about to
// passivate with turns not yet swept; it reports whether it did.
func (a *session) sweepBeforeIdle(c actor.Context) bool {
	if !a.rt.cfg.SweepOnIdle || a.sinceSweep == 0 || a.rt.cfg.SweepEvery <= 0 {
		return false
	}
	a.sinceSweep = 0
	a.handleStartBackground(c, &startBackground{kind: kindSweep})
	return len(a.bg) > 0
}

// only returns a tool filter allowing exactly names.
func only(names ...string) func(string) bool {
	return func(n string) bool { return slices.Contains(names, n) }
}

// jobsChanged wakes the scheduler (a tool created or removed a job).
func (rt *Runtime) jobsChanged() {
	if rt.scheduler != nil {
		rt.sys.Root.Send(rt.scheduler, &schedulerTick{})
	}
}
