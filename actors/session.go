package actors

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// session is the actor for one conversation. It is named by its session key
// and bound to that Session at spawn (identity.ByName); everything it spawns
// inherits the binding. It never blocks: loading, turns and deliveries all
// run elsewhere and report back as messages.
//
// It owns the conversation's order: inbound messages are handled in the
// order the router received them, and replies leave through the platform
// outbox numbered by seq.
type session struct {
	rt *Runtime
	s  messages.Session

	state sessionLoad
	// resume is set by resumeSession until the state is loaded.
	resume bool
	// saving is set while settings are written; saveAgain when they changed
	// meanwhile.
	saving, saveAgain bool
	// speaking is set while an auto-voice reply is synthesized; replies
	// delivered meanwhile wait in held, so the conversation's order holds.
	// speakGen tells a cancelled synthesis from the current one.
	speaking bool
	speakGen uint64

	voice   messages.VoiceMode
	busy    messages.BusyPolicy
	history []model.Message
	handled uint64 // routed messages handled, for passivation
	// waiting holds messages that arrived before the state was loaded.
	waiting []*messages.UserMessage
	// pending are loaded user messages not answered yet (see
	// SessionState.Pending); absorbed are the ids of those folded into a
	// turn before they arrived, so their arrival starts nothing.
	pending  []*messages.UserMessage
	absorbed map[string]bool
	held     []*messages.Delivery
	queued   []*messages.UserMessage

	turnSeq uint64
	turn    *runningTurn
	// bg are the session's background children (reviews, sweeps, cron
	// runs, /background).
	bg          map[uint64]*bgTurn
	sinceReview int
	sinceSweep  int
	seq         uint64 // delivery sequence
}

type sessionLoad uint8

const (
	unloaded sessionLoad = iota
	loading
	loaded
)

// runningTurn is the session's handle on its turn: it owns the context that
// cancels the turn's whole subtree (model streams, tools, subprocesses).
type runningTurn struct {
	id      uint64
	pid     *actor.PID
	cancel  context.CancelFunc
	inputs  []*messages.UserMessage
	spoke   bool
	voiceIn bool
	started time.Time
	typing  *time.Timer
}

func newSession(rt *Runtime) actor.Actor { return &session{rt: rt} }

// Receive handles lifecycle first, then one handler per message.
func (a *session) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.started(c)
	case *actor.Stopping:
		a.stopping()
	case *actor.Restarting:
		a.stopping()
	case *messages.UserMessage:
		a.handled++
		a.handleUser(c, m)
	case *messages.ScheduledFire:
		a.handled++
		// A cron run is a child of this session like any follow-up: it does
		// not interrupt the user's turn, and its answer is delivered here.
		a.handleStartBackground(c, &startBackground{kind: kindCron, prompt: m.GetPrompt()})
	case *startBackground:
		a.handleStartBackground(c, m)
	case *resumeSession:
		a.handled++
		a.resume = true
		a.resumePending(c)
	case *stateLoaded:
		a.handleLoaded(c, m)
	case *turnDone:
		a.handleTurnDone(c, m)
	case *voiceReply:
		a.handleVoiceReply(c, m)
	case *turnGone:
		a.handleTurnGone(c, m)
	case *typingTick:
		a.handleTyping(c, m)
	case *messages.DeliveryReceipt:
		a.handleReceipt(m)
	case *passivate:
		ok := m.routed == a.handled && a.idle(c)
		if ok && a.sweepBeforeIdle(c) {
			ok = false // save what is worth keeping first; asked again later
		}
		c.Respond(&passivateReply{key: a.s.Key(), routed: m.routed, ok: ok})
	case *actor.Terminated:
		a.handleTerminated(c, m)
	case *actor.Stopped, *actor.ReceiveTimeout:
	default:
		a.logger().Warn("session: unhandled message", "type", fmt.Sprintf("%T", m))
	}
}

func (a *session) started(c actor.Context) {
	s, ok := identity.Of(c)
	if !ok {
		// Spawned under a name that is not a session key: refuse to run
		// rather than serve a conversation without an identity.
		a.rt.log.Error("session actor without identity; stopping", "id", c.Self().GetId())
		c.Stop(c.Self())
		return
	}
	a.s = s
	a.voice, a.busy = messages.VoiceOn, a.rt.cfg.DefaultBusy
	a.rt.obs.SessionStarted(s)
	a.load(c)
}

func (a *session) stopping() {
	a.cancelBackground(nil) // children are stopped with the session
	if a.turn != nil {
		a.turn.cancel()
		if a.turn.typing != nil {
			a.turn.typing.Stop()
		}
		a.turn = nil
	}
	if a.s.Valid() {
		a.rt.obs.SessionStopped(a.s)
	}
}

// logger returns the runtime's logger with this session's key; built per
// call because a logger held by each of a million idle sessions would cost
// more than the session itself.
func (a *session) logger() *slog.Logger { return a.rt.log.With("session", a.s.Key()) }

// load reads settings and history from the store on its own goroutine, which
// reports back with stateLoaded; messages that arrive meanwhile wait in order.
func (a *session) load(c actor.Context) {
	a.state = loading
	s, limit, p, timeout := a.s, a.rt.cfg.HistoryLimit, a.rt.persist, a.rt.cfg.StoreTimeout
	self, root := c.Self(), c.ActorSystem().Root
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		st, err := p.LoadSession(ctx, s, limit)
		root.Send(self, &stateLoaded{st, err})
	}()
}

func (a *session) handleLoaded(c actor.Context, m *stateLoaded) {
	if a.state != loading {
		return
	}
	a.state = loaded
	if m.err != nil {
		// The conversation still works, with no memory of the past; say so
		// in the log rather than dropping the user's message.
		a.logger().Error("load session state", "err", m.err)
	} else {
		st := m.state
		a.history = slices.Clip(st.History)
		a.pending = st.Pending
		if st.Voice != "" {
			a.voice = st.Voice
		}
		if st.Busy != "" {
			a.busy = st.Busy
		}
	}
	waiting := a.waiting
	a.waiting = nil
	for _, w := range waiting {
		a.handleUser(c, w)
	}
	a.resumePending(c)
}

// resumePending answers loaded, unanswered messages when asked to (a
// platform redelivered one of them) and nothing else is running.
func (a *session) resumePending(c actor.Context) {
	if !a.resume || a.state != loaded {
		return
	}
	a.resume = false
	if a.turn == nil && len(a.pending) > 0 {
		a.startTurn(c, nil)
	}
}

func (a *session) idle(c actor.Context) bool {
	return a.state == loaded && a.turn == nil && !a.speaking && len(a.bg) == 0 && len(a.queued) == 0 && len(a.waiting) == 0 && len(c.Children()) == 0
}

func (a *session) handleUser(c actor.Context, m *messages.UserMessage) {
	if a.state != loaded {
		a.waiting = append(a.waiting, m)
		return
	}
	if id := m.GetMessageId(); a.absorbed[id] {
		delete(a.absorbed, id) // already answered by the turn that absorbed it
		return
	}
	if cmd, arg, ok := parseCommand(m.GetText()); ok {
		a.handleCommand(c, m, cmd, arg)
		return
	}
	if strings.TrimSpace(m.GetText()) == "" && !m.GetFromVoice() && hasVoice(m) {
		a.reply(c, m, "🎤 I received your voice message but can't listen to it: no speech-to-text provider is configured (the owner can set HERMES_STT_PROVIDER=openai). Please send text.")
		return
	}
	if strings.TrimSpace(m.GetText()) == "" && len(m.GetAttachments()) == 0 {
		a.reply(c, m, "I received an empty message.")
		return
	}
	if a.turn == nil {
		a.startTurn(c, []*messages.UserMessage{m})
		return
	}
	switch a.busy {
	case messages.Queue:
		if len(a.queued) >= a.rt.cfg.QueueLimit {
			a.reply(c, m, fmt.Sprintf("⏳ I'm still working and %d messages are already waiting; this one was not queued. Send /stop to cancel.", len(a.queued)))
			return
		}
		a.queued = append(a.queued, m)
	case messages.Steer:
		a.turn.inputs = append(a.turn.inputs, m)
		c.Send(a.turn.pid, &steerInput{m})
	default: // messages.Interrupt
		inputs := append(a.turn.inputs, m)
		a.cancelTurn(c, "interrupted")
		a.startTurn(c, inputs)
	}
}

// startTurn spawns a turn for inputs with a context the session owns.
func (a *session) startTurn(c actor.Context, inputs []*messages.UserMessage) {
	inputs = a.absorbPending(inputs)
	a.turnSeq++
	ctx, cancel := context.WithTimeout(a.rt.ctx, a.rt.cfg.TurnTimeout)
	voiceIn := false
	for _, m := range inputs {
		voiceIn = voiceIn || m.GetFromVoice()
	}
	t := &turn{
		rt:       a.rt,
		ctx:      ctx,
		id:       a.turnSeq,
		session:  c.Self(),
		reportTo: c.Self(),
		history:  a.history,
		inputs:   inputs,
		kind:     "turn",
		persist:  true,
	}
	// The turn is a plain child: identity.inherit binds it to this session.
	pid, err := c.SpawnNamed(a.rt.turnProps(t), fmt.Sprintf("turn-%d", a.turnSeq))
	if err != nil {
		cancel()
		a.logger().Error("spawn turn", "err", err)
		a.reply(c, inputs[len(inputs)-1], "⚠️ Internal error: could not start a turn.")
		return
	}
	a.turn = &runningTurn{id: a.turnSeq, pid: pid, cancel: cancel, inputs: inputs, voiceIn: voiceIn, started: time.Now()}
	a.rt.obs.TurnStarted(a.s)
	if a.rt.indicates(a.s.Platform()) {
		// Most turns of a fast model finish before a typing indicator would
		// be seen; show it only once the turn has taken TypingDelay.
		id, self, sys := a.turnSeq, c.Self(), c.ActorSystem()
		a.turn.typing = time.AfterFunc(a.rt.cfg.TypingDelay, func() { sys.Root.Send(self, &typingTick{turn: id}) })
	}
}

// absorbPending puts loaded, unanswered messages in front of the first
// turn's inputs, so each is answered once: those among inputs are dropped
// from pending, the others are answered now and ignored when they arrive.
func (a *session) absorbPending(inputs []*messages.UserMessage) []*messages.UserMessage {
	if len(a.pending) == 0 {
		return inputs
	}
	in := make(map[string]bool, len(inputs))
	for _, m := range inputs {
		in[m.GetMessageId()] = true
	}
	var merged []*messages.UserMessage
	for _, p := range a.pending {
		if id := p.GetMessageId(); !in[id] {
			if a.absorbed == nil {
				a.absorbed = make(map[string]bool)
			}
			a.absorbed[id] = true
			merged = append(merged, p)
		}
	}
	a.pending = nil
	return append(merged, inputs...)
}

// cancelTurn stops the running turn's whole subtree: the context reaches
// model calls and tool subprocesses, and Stop ends the actors.
func (a *session) cancelTurn(c actor.Context, why string) {
	t := a.turn
	if t == nil {
		return
	}
	a.turn = nil
	t.cancel()
	if t.typing != nil {
		t.typing.Stop()
	}
	c.Stop(t.pid)
	a.rt.obs.TurnFinished(a.s, why, time.Since(t.started))
	a.logger().Info("turn cancelled", "turn", t.id, "why", why)
}

func (a *session) handleTyping(c actor.Context, m *typingTick) {
	if a.turn == nil || a.turn.id != m.turn {
		return
	}
	action := string(platforms.Typing)
	if a.speaks(a.turn.voiceIn) {
		action = string(platforms.RecordVoice)
	}
	c.Request(a.rt.outbox(a.s.Platform()), &indicate{action: action})
	id, self, sys := a.turn.id, c.Self(), c.ActorSystem()
	a.turn.typing = time.AfterFunc(a.rt.cfg.TypingRefresh, func() { sys.Root.Send(self, &typingTick{turn: id}) })
}

// speaks reports whether the voice mode wants a spoken reply.
func (a *session) speaks(voiceIn bool) bool {
	return a.voice == messages.VoiceTTS || a.voice == messages.VoiceOn && voiceIn
}

func (a *session) handleTurnDone(c actor.Context, m *turnDone) {
	if b := a.bg[m.turn]; b != nil {
		a.handleBackgroundDone(c, b, m)
		return
	}
	t := a.turn
	if t == nil || t.id != m.turn {
		return // a cancelled turn finishing late: it is already quiet
	}
	a.turn = nil
	t.cancel()
	if t.typing != nil {
		t.typing.Stop()
	}
	c.Stop(t.pid)
	outcome := "ok"
	if m.failed {
		outcome = "error"
	}
	a.rt.obs.TurnFinished(a.s, outcome, time.Since(t.started))
	// The inputs are in the store already (persisted at the edge); keep the
	// in-memory history in the same shape as a reload would give.
	for _, in := range t.inputs {
		if in.GetText() != "" {
			a.history = append(a.history, model.Message{Role: "user", Content: in.GetText()})
		}
	}
	a.history = append(a.history, m.produced...)
	if n := a.rt.cfg.HistoryLimit; n > 0 && len(a.history) > 2*n {
		a.history = slices.Clip(slices.Clone(a.history[len(a.history)-n:]))
	}
	a.history = slices.Clip(a.history)

	ids := answers(t.inputs)
	wantVoice := !m.failed && !t.spoke && a.speaks(t.voiceIn) && strings.TrimSpace(m.reply) != ""
	a.deliver(c, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: m.reply, Answers: ids, Last: !wantVoice, Origin: "turn", ReplyToId: lastID(t.inputs)})
	if wantVoice {
		a.speak(c, m.reply, ids, lastID(t.inputs))
	}
	a.queued = append(a.queued, m.unsteered...)
	if !m.failed {
		a.afterTurn(c)
	}
	a.next(c)
}

// next starts the first queued message, if any.
func (a *session) next(c actor.Context) {
	if a.turn != nil || len(a.queued) == 0 {
		return
	}
	m := a.queued[0]
	a.queued = a.queued[1:]
	a.startTurn(c, []*messages.UserMessage{m})
}

// speak asks the TTS actor for the reply and delivers it as voice. The
// request carries this session's identity in its envelope; the format is
// the TTS actor's decision, from this platform's capabilities.
func (a *session) speak(c actor.Context, text string, ids []string, replyTo string) {
	tts := a.rt.tts
	if tts == nil {
		a.deliver(c, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "🔇 Voice replies are not available: no speech engine is configured.", Answers: ids, Last: true, Origin: "turn"})
		return
	}
	// Until the speech is back, later replies wait (hold): the voice of this
	// answer must not arrive after the answer to the next message.
	a.speakGen++
	gen := a.speakGen
	a.speaking = true
	f := c.RequestFuture(tts, &messages.SynthesizeSpeech{Text: text}, a.rt.cfg.TTSTimeout)
	c.ReenterAfter(f, func(res any, err error) {
		if gen != a.speakGen {
			return // /stop or /new cancelled it; what was held is out already
		}
		sp, ok := res.(*messages.Speech)
		if err == nil && !ok {
			err = speechError(res)
		}
		a.speaking = false
		if err != nil {
			a.logger().Warn("auto voice reply failed", "err", err)
			a.deliver(c, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "🔇 I could not speak this reply: " + err.Error(), Answers: ids, Last: true, Origin: "turn"})
		} else {
			a.deliver(c, voiceDelivery(sp, ids, replyTo, true))
		}
		a.releaseHeld(c)
	})
}

// cancelSpeech drops an auto-voice reply still being synthesized and lets
// the replies it held go; it reports whether there was one.
func (a *session) cancelSpeech(c actor.Context) bool {
	if !a.speaking {
		return false
	}
	a.speakGen++
	a.speaking = false
	a.releaseHeld(c)
	return true
}

// releaseHeld sends the replies that waited for a voice reply, in order.
func (a *session) releaseHeld(c actor.Context) {
	held := a.held
	a.held = nil
	for _, d := range held {
		a.deliver(c, d)
	}
}

// handleTerminated notices a turn that died without reporting (a panic in
// the turn itself): the user gets an error instead of silence.
func (a *session) handleTerminated(c actor.Context, m *actor.Terminated) {
	t := a.turn
	if t == nil || !t.pid.Equal(m.Who) {
		return
	}
	// Its turnDone, if sent, is already queued behind this system message.
	c.Send(c.Self(), &turnGone{turn: t.id})
}

func (a *session) handleTurnGone(c actor.Context, m *turnGone) {
	t := a.turn
	if t == nil || t.id != m.turn {
		return
	}
	a.logger().Error("turn stopped without answering", "turn", t.id)
	c.Send(c.Self(), &turnDone{turn: t.id, reply: "⚠️ Internal error: this reply failed. Please try again.", failed: true})
}

func (a *session) handleVoiceReply(c actor.Context, m *voiceReply) {
	var ids []string
	replyTo, origin := "", "turn"
	switch b := a.bg[m.turn]; {
	case a.turn != nil && a.turn.id == m.turn:
		a.turn.spoke = true
		ids = answers(a.turn.inputs)
		replyTo = lastID(a.turn.inputs)
	case b != nil:
		b.spoke = true
		origin = b.kind
	default:
		return // from a turn that was cancelled: stay quiet
	}
	d := voiceDelivery(m.speech, ids, replyTo, false)
	d.Origin = origin
	a.deliver(c, d)
}

// deliver hands d to the platform outbox in this session's order. The
// outbox learns the destination from the envelope, stamped from this
// actor's binding.
func (a *session) deliver(c actor.Context, d *messages.Delivery) {
	if a.speaking {
		a.held = append(a.held, d)
		return
	}
	a.seq++
	d.Seq = a.seq
	c.Request(a.rt.outbox(a.s.Platform()), d)
}

// reply answers one message outside any turn (commands, refusals).
func (a *session) reply(c actor.Context, m *messages.UserMessage, text string) {
	a.deliver(c, &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, Answers: []string{m.GetMessageId()}, Last: true, Origin: "command", ReplyToId: m.GetMessageId()})
}

func (a *session) handleReceipt(r *messages.DeliveryReceipt) {
	if r.GetError() != "" {
		a.logger().Warn("delivery failed", "seq", r.GetSeq(), "err", r.GetError())
	}
}

func voiceDelivery(sp *messages.Speech, ids []string, replyTo string, last bool) *messages.Delivery {
	return &messages.Delivery{
		Kind:         messages.DeliveryKind_DELIVERY_KIND_VOICE,
		Audio:        sp.Data,
		Format:       sp.Format.String(),
		DurationSecs: sp.Duration.Seconds(),
		Waveform:     sp.Waveform,
		Answers:      ids,
		Last:         last,
		ReplyToId:    replyTo,
		Origin:       "turn",
	}
}

func speechError(res any) error {
	switch r := res.(type) {
	case *messages.SpeechFailed:
		return r.Err
	case *identity.Refused:
		return r.Err
	}
	return fmt.Errorf("unexpected TTS reply %T", res)
}

func answers(in []*messages.UserMessage) []string {
	ids := make([]string, 0, len(in))
	for _, m := range in {
		if id := m.GetMessageId(); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

func lastID(in []*messages.UserMessage) string {
	if len(in) == 0 {
		return ""
	}
	return in[len(in)-1].GetMessageId()
}

func hasVoice(m *messages.UserMessage) bool {
	for _, a := range m.GetAttachments() {
		if a.GetKind() == "voice" {
			return true
		}
	}
	return false
}
