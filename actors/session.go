package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
)

// session is the actor for one conversation. It is named by its session key
// and bound to that Session at spawn (identity.ByName); everything it spawns
// inherits the binding. It never blocks: loading, turns, writes and
// deliveries all run elsewhere and report back as messages.
//
// It owns the conversation's promise: every accepted message (stored as
// pending work before the platform was acknowledged) gets exactly one
// outcome, recorded in one write with the replies it produced; replies leave
// through the platform outbox in the order they were recorded. On
// activation it first resends what the platform never confirmed, then
// answers what is still pending, so a crash, a restart of this actor or a
// passivation loses nothing.
type session struct {
	rt *Runtime
	s  messages.Session
	// behavior is loading until the state is in, then loaded.
	behavior actor.Behavior
	// stash holds what arrived while loading, replayed in order once loaded.
	stash []any
	// loadID tells this instance's load from one an earlier incarnation
	// started before it panicked (its result still arrives here).
	loadID uint64

	// saving is set while settings are written; saveAgain when they changed
	// meanwhile.
	saving, saveAgain bool

	voice   messages.VoiceMode
	busy    messages.BusyPolicy
	conv    int64 // current conversation (see SessionState.Conversation)
	history []model.Message
	// seen is the highest inbox seq the session's load knew of: a message
	// with a seq up to it was taken in at load (pending) or settled before,
	// by this instance or an earlier one; its copy still on the way through
	// the mailbox starts nothing.
	seen   uint64
	queued []*messages.UserMessage

	// turnSeq is the id of the last child turn started, from a counter of
	// the runtime's: ids stay unique across restarts of this actor, so a
	// late report of a turn from before a restart matches nothing.
	turnSeq uint64
	turn    *runningTurn
	// bg are the session's background children (reviews, sweeps, cron
	// runs, /background); bgWaiting the ones waiting for a free slot.
	bg          map[uint64]*bgTurn
	bgWaiting   []*startBackground
	sinceReview int
	sinceSweep  int

	// sendQ are recorded replies waiting to leave, in order. A voice reply
	// is recorded before it is synthesized (a placeholder with its text, see
	// needsSpeech) and holds back what follows until its audio is in, so the
	// voice of an answer never arrives after the answer to the next message.
	sendQ []*messages.Delivery
	// settling counts settlements not yet committed.
	settling int
	// lastSeq is the outbox seq of the last reply queued for sending: a
	// reply both loaded as unsent and reported by a settlement from before
	// a restart of this actor is sent once. Replies up to resendUpTo were
	// loaded as unconfirmed: the outbox checks them before it sends.
	lastSeq, resendUpTo uint64
	// recovered, if set, is called once the work owed at activation is done.
	recovered func()
	// approvals are tool calls waiting for the chat (approval.go).
	approvals approvals

	// Cluster mode (placement.go): acks are the requesters of routed
	// messages that arrived while loading, answered once loaded;
	// lastActive and idleTimer drive the session's own passivation.
	acks       []*actor.PID
	lastActive time.Time
	idleTimer  *time.Timer
	// fence is the lease this activation holds (lease.go), valid until
	// leaseUntil unless renewed; fenced once it lost it.
	fence      Fence
	leaseUntil time.Time
	// leaseClock is leaseUntil for the outbox (unix nanoseconds).
	leaseClock *atomic.Int64
	stopRenew  func()
	fenced     bool
	// misplaced counts renewals in a row that found this member not the
	// key's place.
	misplaced int
	// live are the stored messages handled since the last load or rescan;
	// rescanning is set while one runs (cluster mode, placement.go).
	live       map[uint64]bool
	rescanning bool
	// activatedAt is when this activation started, and claimedAt when its
	// lease was claimed (cluster mode): what a move costs, by step.
	activatedAt, claimedAt time.Time
	// model is the catalog model the chat chose with /model, "" for the
	// default (actors/models.go).
	model string

	// summary stands for the conversation's compressed beginning
	// (compress.go). appended counts the messages ever appended to history:
	// a store call that returns a fresh history is answered with it plus
	// what was appended since the call. compressAsker is the /compress the
	// running compressor answers.
	summary       string
	appended      int
	compressAsker *messages.UserMessage
	// compressAfter holds automatic compression back until appended
	// reaches it (after a failed one).
	compressAfter int
	// visionNoticed: the user was told this session's model cannot see
	// images (attachments.go), so later photos are not told again.
	visionNoticed bool
}

// runningTurn is the session's handle on its turn: it owns the context that
// cancels the turn's whole subtree (model streams, tools, subprocesses).
type runningTurn struct {
	id      uint64
	pid     *actor.PID
	cancel  context.CancelFunc
	inputs  []*messages.UserMessage
	conv    int64
	spoke   bool
	voiceIn bool
	started time.Time
	typing  *time.Timer
	// expiry fires if the turn has not reported by its deadline plus a grace
	// period: the session answers for it whatever the turn is doing.
	expiry *time.Timer
	// draftID names the turn's streamed draft ("" when it does not stream);
	// draftVersion counts the drafts forwarded; held is the latest draft,
	// waiting for replies recorded before it to leave (stream.go). Here
	// rather than on the session, so that an idle session pays nothing.
	draftID      string
	draftVersion uint64
	held         *messages.Draft
}

// turnGrace is how long past its deadline a turn may take to report before
// the session gives up on it.
const turnGrace = 2 * time.Second

func newSession(rt *Runtime) actor.Actor {
	a := &session{rt: rt, behavior: actor.NewBehavior()}
	a.behavior.Become(a.loading)
	return a
}

// Receive dispatches to the current behavior.
func (a *session) Receive(c actor.Context) {
	rethrowWork(c.Message())
	if a.rt.placement != nil && a.rt.placement.Internal(c.Message()) {
		return
	}
	a.rt.fault(KindSession, c)
	switch c.Message().(type) {
	case *actor.Stopping, *actor.Restarting:
		a.grainStopped(c)
		a.releaseLease()
	case *renewLease:
		a.handleRenew(c)
		return
	case *leaseRenewed:
		a.handleRenewed(c, c.Message().(*leaseRenewed))
		return
	}
	a.behavior.Receive(c)
}

// loading is the behavior until the state is loaded: lifecycle is handled,
// everything else waits in the stash, in order.
func (a *session) loading(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.started(c)
	case *stateLoaded:
		if m.id == a.loadID {
			a.handleLoaded(c, m)
		}
	case *leaseClaimed:
		a.handleClaimed(c, m)
	case *actor.Stopping, *actor.Restarting:
		a.stopping()
	case *passivate:
		c.Respond(&passivateReply{key: a.s.Key(), ask: m.ask})
	case *actor.Stopped, *actor.ReceiveTimeout, *actor.Terminated:
	default:
		a.holdAck(c, m)
		a.stash = append(a.stash, m)
	}
}

// loaded is the behavior of a session with its state.
func (a *session) loaded(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Restarting:
		a.logger().Debug("session restarting")
		a.stopping()
	case *actor.Stopping:
		a.stopping()
	case *passivate:
		// Everything the router sent before asking is handled already (one
		// sender, FIFO); anything it sent since voids the question.
		ok := a.idle(c)
		if ok && a.sweepBeforeIdle(c) {
			ok = false // save what is worth keeping first; asked again later
		}
		c.Respond(&passivateReply{key: a.s.Key(), ask: m.ask, ok: ok})
	case *actor.Terminated:
		a.handleTerminated(c, m)
	case *actor.Started, *actor.Stopped, *actor.ReceiveTimeout, *stateLoaded, *leaseClaimed:
	default:
		if a.ack(c, m) {
			a.handle(c, m)
		}
	}
}

// handle is one handler per message, for live and stashed messages alike.
func (a *session) handle(c actor.Context, msg any) {
	switch m := msg.(type) {
	case *messages.UserMessage:
		a.handleUser(c, m)
	case *conversationReset:
		a.handleReset(c, m)
	case *messages.ScheduledFire:
		// A cron run is a child of this session like any follow-up: it does
		// not interrupt the user's turn, and its answer is delivered here.
		a.handleStartBackground(c, &startBackground{kind: kindCron, prompt: m.GetPrompt()})
	case *startBackground:
		a.handleStartBackground(c, m)
	case *resumeSession:
		if m.recovered != nil {
			a.recovered = m.recovered
			a.checkRecovered()
		}
	case *turnDone:
		a.handleTurnDone(c, m)
	case *turnExpired:
		a.handleTurnExpired(c, m)
	case *voiceReply:
		a.handleVoiceReply(c, m)
	case *turnGone:
		a.handleTurnGone(c, m)
	case *bgGone:
		a.handleBackgroundGone(c, m)
	case *typingTick:
		a.handleTyping(c, m)
	case *draftUpdate:
		a.handleDraft(c, m)
	case *settled:
		a.handleSettled(c, m)
	case *settingsSaved:
		a.handleSettingsSaved(c, m)
	case *approvalRequest:
		a.handleApprovalRequest(c, m)
	case *approvalExpired:
		a.handleApprovalExpired(c, m)
	case *messages.DeliveryReceipt:
		a.handleReceipt(m)
	case *messages.SessionResume, *messages.SessionReset, *idleCheck, *rescanned:
		a.handleGrain(c, m)
	case *commandReply:
		if a.fencedOff(c, m.err) {
			return
		}
		a.reply(c, m.m, m.text)
	case *compressResult:
		a.handleCompressResult(c, m)
	case *compacted:
		a.handleCompacted(c, m)
	case *resumed:
		a.handleResumed(c, m)
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
	a.voice, a.busy, a.conv = messages.VoiceOn, a.rt.cfg.DefaultBusy, 1
	a.rt.obs.SessionStarted(s)
	if !a.grainStarted(c) {
		return
	}
	if a.rt.leased() {
		a.claim(c) // loads once the lease is ours
		return
	}
	a.load(c)
}

func (a *session) stopping() {
	a.cancelBackground(nil) // children are stopped with the session
	if t := a.turn; t != nil {
		t.cancel()
		t.stopTimers()
		a.turn = nil
		a.rt.obs.TurnFinished(a.s, "stopped", time.Since(t.started))
	}
	if a.s.Valid() {
		a.rt.obs.SessionStopped(a.s)
	}
}

// logger returns the runtime's logger with this session's key; built per
// call because a logger held by each of a million idle sessions would cost
// more than the session itself.
func (a *session) logger() *slog.Logger { return a.rt.log.With("session", a.s.Key()) }

// load reads settings, history and what the session owes from the store on
// its own goroutine, which reports back with stateLoaded.
func (a *session) load(c actor.Context) {
	s, limit, p, timeout := a.s, a.rt.cfg.HistoryLimit, a.rt.persist, a.rt.cfg.StoreTimeout
	a.loadID = a.rt.turnIDs.Add(1)
	id := a.loadID
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		st, err := p.LoadSession(ctx, s, limit)
		return &stateLoaded{id: id, state: st, err: err}
	})
}

func (a *session) handleLoaded(c actor.Context, m *stateLoaded) {
	a.behavior.Become(a.loaded)
	var pending []*messages.UserMessage
	if m.err != nil {
		// The conversation still works, with no memory of the past; say so
		// in the log rather than dropping the user's message.
		a.logger().Error("load session state", "err", m.err)
	} else {
		st := m.state
		a.history = slices.Clip(st.History)
		a.summary = st.Summary
		if st.Voice != "" {
			a.voice = st.Voice
		}
		if st.Busy != "" {
			a.busy = st.Busy
		}
		if st.Conversation > 0 {
			a.conv = st.Conversation
		}
		a.model = st.Model
		// What the platform never confirmed leaves first, in order.
		if n := len(st.Unsent); n > 0 {
			a.resendUpTo = st.Unsent[n-1].GetSeq()
		}
		a.enqueue(c, st.Unsent)
		pending = st.Pending
	}
	a.logger().Debug("session loaded", "pending", len(pending), "unsent", len(m.state.Unsent), "stashed", len(a.stash))
	if m.err == nil {
		a.seen = m.state.LastAccepted
	}
	if len(pending) > 0 {
		// Pending is what the store holds unanswered: usually just the
		// message that activated the session (accepted before it is routed),
		// more after a crash or a move.
		a.logger().Info("answering the session's stored unanswered messages", "pending", len(pending))
		a.answerPending(c, pending)
	}
	stash := a.stash
	a.stash = nil
	a.grainLoaded(c, m)
	for _, msg := range stash {
		a.handle(c, msg)
	}
	a.checkRecovered()
}

// answerPending answers loaded, unanswered messages in arrival order: one
// turn for all of them, or one each under the queue policy.
func (a *session) answerPending(c actor.Context, pending []*messages.UserMessage) {
	var text []*messages.UserMessage
	for _, p := range pending {
		if a.answerable(c, p) {
			text = append(text, p)
		}
	}
	if len(text) == 0 {
		return
	}
	if a.busy == messages.Queue {
		a.startTurn(c, text[:1])
		a.queued = append(a.queued, text[1:]...)
		return
	}
	a.startTurn(c, text)
}

// checkRecovered calls the recovery callback once nothing owed is left.
func (a *session) checkRecovered() {
	if a.recovered != nil && a.turn == nil && len(a.queued) == 0 {
		f := a.recovered
		a.recovered = nil
		f()
	}
}

func (a *session) idle(c actor.Context) bool {
	return a.turn == nil && len(a.sendQ) == 0 && a.settling == 0 && len(a.bg) == 0 && len(a.bgWaiting) == 0 &&
		len(a.queued) == 0 && len(c.Children()) == 0
}

func (a *session) handleUser(c actor.Context, m *messages.UserMessage) {
	if seq := m.GetInboxSeq(); seq != 0 && seq <= a.seen {
		a.logger().Debug("message taken in at load already", "message", m.GetMessageId())
		return
	} else if a.live[seq] {
		// Routed twice (cluster mode): a delivery given up as late whose
		// request still landed, then the next attempt.
		a.logger().Debug("message taken in already", "message", m.GetMessageId())
		return
	}
	a.noteLive(m)
	if cmd, arg, ok := parseCommand(m.GetText()); ok {
		a.handleCommand(c, m, cmd, arg)
		return
	}
	if !a.answerable(c, m) {
		return
	}
	if a.turn == nil {
		a.startTurn(c, []*messages.UserMessage{m})
		return
	}
	switch a.busy {
	case messages.Queue:
		if len(a.queued) >= a.rt.cfg.QueueLimit {
			a.answer(c, m, Cancelled, fmt.Sprintf("⏳ I'm still working and %d messages are already waiting; this one was not queued. Send /stop to cancel.", len(a.queued)))
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

// answerable answers at once (and reports false for) a message a turn
// cannot use.
func (a *session) answerable(c actor.Context, m *messages.UserMessage) bool {
	switch {
	case strings.TrimSpace(m.GetText()) == "" && !m.GetFromVoice() && hasVoice(m):
		a.answer(c, m, Answered, "🎤 I received your voice message but can't listen to it: no speech-to-text provider is configured (the owner can set HERMES_STT_PROVIDER=openai). Please send text.")
		return false
	case strings.TrimSpace(m.GetText()) == "" && len(m.GetAttachments()) == 0:
		a.answer(c, m, Answered, "I received an empty message.")
		return false
	}
	return true
}

// startTurn spawns a turn for inputs with a context the session owns.
func (a *session) startTurn(c actor.Context, inputs []*messages.UserMessage) {
	// Arrival order, whatever path each input took here (loaded as pending,
	// merged by an interrupt, queued).
	inputs = slices.Clone(inputs)
	slices.SortStableFunc(inputs, func(x, y *messages.UserMessage) int {
		return cmp.Compare(arrival(x), arrival(y))
	})
	a.turnSeq = a.rt.turnIDs.Add(1)
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
		kind:     kindTurn,
		model:    a.model,
		summary:  a.summary,
	}
	t.vision, t.noticeVision = a.rt.visionFor(a.model), !a.visionNoticed
	draftID := a.streamTurn(c, t, voiceIn)
	// Counted before it is spawned: the turn runs at once on its own
	// goroutine, and a metric or /status read while its tools run must
	// already include it.
	started := time.Now()
	a.rt.obs.TurnStarted(a.s)
	// The turn is a plain child: identity.inherit binds it to this session.
	pid, err := c.SpawnNamed(a.rt.turnProps(t), fmt.Sprintf("turn-%d", a.turnSeq))
	if err != nil {
		cancel()
		a.rt.obs.TurnFinished(a.s, "error", time.Since(started))
		a.logger().Error("spawn turn", "err", err)
		a.settle(c, Settlement{Inputs: seqs(inputs), Outcome: Failed, Replies: []*messages.Delivery{
			textReply("⚠️ Internal error: could not start a turn.", inputs, originTurn)}})
		return
	}
	a.logger().Debug("turn started", "turn", a.turnSeq, "inputs", answers(inputs))
	rt := &runningTurn{id: a.turnSeq, pid: pid, cancel: cancel, inputs: inputs, conv: a.conv, voiceIn: voiceIn, started: started}
	rt.draftID = draftID
	a.turn = rt
	id, self, sys := a.turnSeq, c.Self(), c.ActorSystem()
	rt.expiry = time.AfterFunc(a.rt.cfg.TurnTimeout+turnGrace, func() { sys.Root.Send(self, &turnExpired{turn: id}) })
	if a.rt.indicates(a.s.Platform()) {
		// Most turns of a fast model finish before a typing indicator would
		// be seen; show it only once the turn has taken TypingDelay.
		rt.typing = time.AfterFunc(a.rt.cfg.TypingDelay, func() { sys.Root.Send(self, &typingTick{turn: id}) })
	}
}

// arrival orders inputs: by inbox seq, and inputs never stored last.
func arrival(m *messages.UserMessage) uint64 {
	if s := m.GetInboxSeq(); s != 0 {
		return s
	}
	return ^uint64(0)
}

func (t *runningTurn) stopTimers() {
	if t.typing != nil {
		t.typing.Stop()
	}
	if t.expiry != nil {
		t.expiry.Stop()
	}
}

// endTurn releases the running turn: its context, timers and actor.
func (a *session) endTurn(c actor.Context, outcome string) *runningTurn {
	t := a.turn
	a.turn = nil
	t.cancel()
	t.stopTimers()
	c.Stop(t.pid)
	a.rt.obs.TurnFinished(a.s, outcome, time.Since(t.started))
	return t
}

// cancelTurn stops the running turn's whole subtree: the context reaches
// model calls and tool subprocesses, and Stop ends the actors. Its inputs
// stay with the caller, who settles or re-runs them.
func (a *session) cancelTurn(c actor.Context, why string) {
	if a.turn == nil {
		return
	}
	t := a.endTurn(c, why)
	a.closeDraft(c, t, false)
	a.logger().Info("turn", "turn", t.id, "outcome", why, "duration", time.Since(t.started).Round(time.Millisecond),
		"inputs", len(t.inputs), "model", a.currentModel())
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
		a.handleBackgroundDone(c, m.turn, b, m)
		return
	}
	if a.turn == nil || a.turn.id != m.turn {
		return // a cancelled turn finishing late: it is already quiet
	}
	outcome := "ok"
	if m.failed {
		outcome = "error"
	}
	t := a.endTurn(c, outcome)
	a.visionNoticed = a.visionNoticed || m.visionNoticed
	a.logger().Info("turn", "turn", t.id, "outcome", outcome, "duration", time.Since(t.started).Round(time.Millisecond),
		"inputs", len(t.inputs), "model", a.currentModel(), "tokens_in", m.tokensIn, "tokens_out", m.tokensOut)
	// Steer messages the turn could not use are answered by a turn of their
	// own, not settled with this one.
	inputs := slices.DeleteFunc(slices.Clone(t.inputs), func(in *messages.UserMessage) bool {
		return slices.Contains(m.unsteered, in)
	})
	if t.conv == a.conv { // else /resume went to another conversation meanwhile
		for _, in := range inputs {
			// As the store keeps it (Accept): with its documents' text.
			if text := messages.HistoryText(in); text != "" {
				a.history = append(a.history, model.Message{Role: "user", Content: text})
				a.appended++
			}
		}
		a.history = append(a.history, m.produced...)
		a.appended += len(m.produced)
	}
	if n := a.rt.cfg.HistoryLimit; n > 0 && len(a.history) > 2*n {
		a.history = slices.Clip(slices.Clone(a.history[len(a.history)-n:]))
	}
	a.history = slices.Clip(a.history)

	st := Settlement{Conversation: t.conv, Inputs: seqs(inputs), Outcome: Answered, History: m.produced,
		Replies: []*messages.Delivery{textReply(m.reply, inputs, originTurn)}}
	st.Replies[0].PromptTokens, st.Replies[0].CompletionTokens = int64(m.tokensIn), int64(m.tokensOut)
	if m.failed {
		st.Outcome = Failed
	}
	a.closeDraft(c, t, true)
	finalFor(t, st.Replies[0])
	if !m.failed && !t.spoke && a.speaks(t.voiceIn) && strings.TrimSpace(m.reply) != "" {
		st.Replies[0].Last = false
		st.Replies = append(st.Replies, a.voicePlaceholder(m.reply, inputs, originTurn))
	}
	a.settle(c, st)
	a.queued = append(a.queued, m.unsteered...)
	if !m.failed {
		a.afterTurn(c)
		a.maybeCompress(c, nil)
	}
	a.next(c)
}

// handleTurnExpired answers for a turn that did not report by its deadline
// (a model or tool that ignores cancellation): the user is told, the turn is
// stopped, and the session moves on.
func (a *session) handleTurnExpired(c actor.Context, m *turnExpired) {
	if a.turn == nil || a.turn.id != m.turn {
		return
	}
	t := a.endTurn(c, "timeout")
	a.logger().Warn("turn", "turn", t.id, "outcome", "timeout", "duration", time.Since(t.started).Round(time.Millisecond),
		"inputs", len(t.inputs), "model", a.currentModel(), "limit", a.rt.cfg.TurnTimeout)
	expired := textReply(timeoutText(a.rt.cfg.TurnTimeout), t.inputs, originTurn)
	a.closeDraft(c, t, true)
	finalFor(t, expired)
	a.settle(c, Settlement{Inputs: seqs(t.inputs), Outcome: Failed, Replies: []*messages.Delivery{expired}})
	a.next(c)
}

func timeoutText(d time.Duration) string {
	return fmt.Sprintf("⏱ This reply took longer than %s and was stopped. Please try again.", d.Round(time.Second))
}

// next starts the first queued message, if any.
func (a *session) next(c actor.Context) {
	if a.turn == nil && len(a.queued) > 0 {
		m := a.queued[0]
		a.queued = a.queued[1:]
		a.startTurn(c, []*messages.UserMessage{m})
	}
	a.checkRecovered()
}

// voicePlaceholder is the recorded form of a voice reply not synthesized
// yet: a voice delivery with the text to speak and no audio.
func (a *session) voicePlaceholder(text string, inputs []*messages.UserMessage, origin string) *messages.Delivery {
	if a.rt.tts == nil {
		return &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "🔇 Voice replies are not available: no speech engine is configured.",
			Answers: answers(inputs), Last: true, Origin: origin}
	}
	return &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_VOICE, Text: text, Answers: answers(inputs), Last: true, ReplyToId: lastID(inputs), Origin: origin}
}

// needsSpeech reports whether d is a voice reply still to be synthesized.
func needsSpeech(d *messages.Delivery) bool {
	return d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE && len(d.GetAudio()) == 0
}

// enqueue adds recorded replies to the send queue, starts the synthesis of
// voice placeholders, and sends what can leave.
func (a *session) enqueue(c actor.Context, ds []*messages.Delivery) {
	for _, d := range ds {
		if seq := d.GetSeq(); seq != 0 {
			if seq <= a.lastSeq {
				continue
			}
			a.lastSeq = seq
		}
		a.sendQ = append(a.sendQ, d)
		if needsSpeech(d) {
			a.synthesize(c, d)
		}
	}
	a.flush(c)
}

// flush sends queued replies in order, up to the first voice reply whose
// audio is not in yet.
func (a *session) flush(c actor.Context) {
	for len(a.sendQ) > 0 && !needsSpeech(a.sendQ[0]) {
		a.send(c, a.sendQ[0])
		a.sendQ[0] = nil
		a.sendQ = a.sendQ[1:]
	}
	if len(a.sendQ) == 0 {
		a.sendQ = nil // an idle session keeps no array
	}
	a.flushDrafts(c)
}

// synthesize asks the TTS actor for placeholder d's speech and fills d in.
// The request carries this session's identity in its envelope; the format
// is the TTS actor's decision, from this platform's capabilities.
func (a *session) synthesize(c actor.Context, d *messages.Delivery) {
	if a.rt.tts == nil {
		fillFailed(d, errors.New("no speech engine is configured"))
		return
	}
	f := c.RequestFuture(a.rt.tts, &messages.SynthesizeSpeech{Text: d.GetText()}, a.rt.cfg.TTSTimeout)
	c.ReenterAfter(f, func(res any, err error) {
		if !slices.Contains(a.sendQ, d) {
			return // /stop or /new cancelled it
		}
		sp, ok := res.(*messages.Speech)
		if err == nil && !ok {
			err = speechError(res)
		}
		if err != nil {
			a.logger().Warn("voice reply failed", "err", err)
			fillFailed(d, err)
		} else {
			d.Text, d.Audio, d.Format, d.DurationSecs, d.Waveform = "", sp.Data, sp.Format.String(), sp.Duration.Seconds(), sp.Waveform
		}
		a.flush(c)
	})
}

// fillFailed turns a voice placeholder into a text saying why there is no
// voice; it keeps its seq, so it replaces the voice reply once.
func fillFailed(d *messages.Delivery, err error) {
	d.Kind, d.Text = messages.DeliveryKind_DELIVERY_KIND_TEXT, "🔇 I could not speak this reply: "+err.Error()
}

// cancelSpeech drops voice replies still being synthesized (/stop, /new):
// each is replaced by a short note in its place. It reports whether there
// was one.
func (a *session) cancelSpeech(c actor.Context) bool {
	found := false
	for _, d := range a.sendQ {
		if needsSpeech(d) {
			found = true
			d.Kind, d.Text = messages.DeliveryKind_DELIVERY_KIND_TEXT, "🔇 Voice reply cancelled."
		}
	}
	a.flush(c)
	return found
}

// settle records st (outcomes, history, replies) in one write; the replies
// join the send queue once it committed, in the order settle was called.
func (a *session) settle(c actor.Context, st Settlement) {
	if st.Conversation == 0 {
		st.Conversation = a.conv
	}
	st.Fence = a.fence
	a.settling++
	self, root := c.Self(), c.ActorSystem().Root
	a.rt.persist.Settle(a.s, st, func(err error) {
		root.Send(self, &settled{replies: st.Replies, err: err})
	})
}

func (a *session) handleSettled(c actor.Context, m *settled) {
	a.settling = max(0, a.settling-1) // a report from before a restart counts nothing
	if a.fencedOff(c, m.err) {
		return
	}
	if m.err != nil {
		// The replies still go: losing the user's answer because the disk
		// is full would be worse; the inputs stay pending in the store.
		a.logger().Error("record outcome and replies", "err", m.err)
	}
	a.enqueue(c, m.replies)
}

// send hands d to the platform outbox. The outbox learns the destination
// from the envelope, stamped from this actor's binding.
func (a *session) send(c actor.Context, d *messages.Delivery) {
	if a.leaseClock != nil {
		c.Request(a.rt.outbox(a.s.Platform()), &leasedDelivery{d: d, resend: d.GetSeq() != 0 && d.GetSeq() <= a.resendUpTo, until: a.leaseClock})
		return
	}
	if seq := d.GetSeq(); seq != 0 && seq <= a.resendUpTo {
		c.Request(a.rt.outbox(a.s.Platform()), &resend{d})
		return
	}
	c.Request(a.rt.outbox(a.s.Platform()), d)
}

// handleTerminated notices a child that died without reporting (a panic):
// the user gets an error instead of silence, and its slot is freed.
func (a *session) handleTerminated(c actor.Context, m *actor.Terminated) {
	if t := a.turn; t != nil && t.pid.Equal(m.Who) {
		// Its turnDone, if sent, is already queued behind this system message.
		c.Send(c.Self(), &turnGone{turn: t.id})
		return
	}
	for id, b := range a.bg {
		if b.pid.Equal(m.Who) {
			c.Send(c.Self(), &bgGone{turn: id, why: "stopped without answering"})
			return
		}
	}
}

func (a *session) handleTurnGone(c actor.Context, m *turnGone) {
	t := a.turn
	if t == nil || t.id != m.turn {
		return
	}
	a.logger().Error("turn stopped without answering", "turn", t.id)
	a.handleTurnDone(c, &turnDone{turn: t.id, reply: "⚠️ Internal error: this reply failed. Please try again.", failed: true})
}

func (a *session) handleVoiceReply(c actor.Context, m *voiceReply) {
	var ids []string
	replyTo, origin := "", originTurn
	switch b := a.bg[m.turn]; {
	case a.turn != nil && a.turn.id == m.turn:
		a.turn.spoke = true
		ids = answers(a.turn.inputs)
		replyTo = lastID(a.turn.inputs)
	case b != nil:
		b.spoke = true
		origin = string(b.kind)
	default:
		return // from a turn that was cancelled: stay quiet
	}
	d := voiceDelivery(m.speech, ids, replyTo, false)
	d.Origin = origin
	a.settle(c, Settlement{Replies: []*messages.Delivery{d}})
}

// answer settles one message with a reply outside any turn (refusals).
func (a *session) answer(c actor.Context, m *messages.UserMessage, o Outcome, text string) {
	in := []*messages.UserMessage{m}
	a.settle(c, Settlement{Inputs: seqs(in), Outcome: o, Replies: []*messages.Delivery{textReply(text, in, originCommand)}})
}

// reply answers a command; commands are not stored, so nothing is settled.
func (a *session) reply(c actor.Context, m *messages.UserMessage, text string) {
	a.settle(c, Settlement{Replies: []*messages.Delivery{textReply(text, []*messages.UserMessage{m}, originCommand)}})
}

func (a *session) handleReceipt(r *messages.DeliveryReceipt) {
	if r.GetError() != "" {
		a.logger().Warn("delivery failed", "seq", r.GetSeq(), "err", r.GetError())
	}
}

// Origins of a delivery, as in messages.Delivery.Origin.
const (
	originTurn    = "turn"
	originCommand = "command"
)

// textReply is the last text delivery answering inputs.
func textReply(text string, inputs []*messages.UserMessage, origin string) *messages.Delivery {
	return &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, Answers: answers(inputs), Last: true, Origin: origin, ReplyToId: lastID(inputs)}
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
		Origin:       originTurn,
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

// seqs are the inbox seqs of the stored inputs among in.
func seqs(in []*messages.UserMessage) []uint64 {
	out := make([]uint64, 0, len(in))
	for _, m := range in {
		if s := m.GetInboxSeq(); s != 0 {
			out = append(out, s)
		}
	}
	return out
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
