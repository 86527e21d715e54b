package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/tools"
)

// toolActor runs one tool call. It is a child of its turn, bound to the
// turn's session, and lives exactly as long as the call. A tool that wants
// approval (tools.Tool.Approve) is first put to the chat through the
// session, and the actor waits for the answer as a message. It never blocks:
// the tool runs on its own goroutine and its result comes back as a
// message; a sub-agent (delegate_task) is a child of this actor whose answer
// comes back as a message too. It reports exactly one result to its turn —
// the tool's, a recovered panic's, or a timeout's if the tool ignores its
// context — and stops itself.
type toolActor struct {
	rt      *Runtime
	ctx     context.Context
	cancel  context.CancelFunc
	call    model.ToolCall
	turn    uint64
	session *actor.PID
	sender  string
	depth   int // delegation depth of the calling turn
	// delegates bounds the sub-agents of the calling turn.
	delegates chan struct{}

	start    time.Time
	reported bool
	expiry   *time.Timer
	// asked is set while the call waits for its chat's approval.
	asked bool
	// sub is the running sub-agent and its caller's answer channel.
	sub *subAgent
}

// subAgent is a delegation in flight: the tool goroutine waits on answer.
type subAgent struct {
	pid    *actor.PID
	answer chan<- delegateAnswer
}

// toolRan is the tool goroutine's result, sent to its actor.
type toolRan struct {
	content string
	err     error
}

// delegateRequest asks the tool actor, from its tool's goroutine, to run a
// sub-agent as its child; the answer comes back on answer (buffered).
type delegateRequest struct {
	task   string
	answer chan<- delegateAnswer
}

type delegateAnswer struct {
	text string
	err  error
}

// toolGrace is how long past its timeout a tool may take before the actor
// answers for it.
const toolGrace = time.Second

// Receive handles lifecycle first, then one handler per message.
func (a *toolActor) Receive(c actor.Context) {
	rethrowWork(c.Message())
	a.rt.fault(KindTool, c)
	switch m := c.Message().(type) {
	case *actor.Started:
		a.start = time.Now()
		if !a.askApproval(c) {
			a.begin(c)
		}
	case *approvalAnswer:
		a.handleApproval(c, m)
	case *toolRan:
		a.report(c, m.content, m.err)
	case *delegateRequest:
		a.handleDelegate(c, m)
	case *turnDone:
		a.handleSubAgentDone(c, m)
	case *actor.Terminated:
		if a.sub != nil && a.sub.pid.Equal(m.Who) {
			c.Send(c.Self(), &turnDone{failed: true, reply: "the sub-agent stopped without answering"})
		}
	case *actor.Stopping:
		a.release()
	case *actor.Stopped, *actor.Restarting:
	default:
		a.rt.log.Warn("tool: unhandled message", "tool", a.call.Name, "type", typeName(m))
	}
}

func (a *toolActor) begin(c actor.Context) {
	t, ok := a.rt.tools.Get(a.call.Name)
	if !ok {
		a.report(c, "", fmt.Errorf("unknown tool %q", a.call.Name))
		return
	}
	a.ctx, a.cancel = context.WithTimeout(a.ctx, a.rt.cfg.ToolTimeout)
	self, root := c.Self(), c.ActorSystem().Root
	a.expiry = time.AfterFunc(a.rt.cfg.ToolTimeout+toolGrace, func() {
		root.Send(self, &toolRan{err: fmt.Errorf("tool %s did not finish within %s", a.call.Name, a.rt.cfg.ToolTimeout)})
	})
	s, _ := identity.Of(c)
	env := &toolEnv{a: a, s: s, self: self, root: root, ctx: c}
	ctx, log := a.ctx, a.rt.log
	goSend(c, func() any {
		content, err := runTool(ctx, t, env, json.RawMessage(a.call.Arguments), func(r any) {
			log.Error("tool panicked", "session", s.Key(), "tool", t.Name, "panic", r, "stack", string(debug.Stack()))
		})
		return &toolRan{content: content, err: err}
	})
}

// askApproval asks the session to put the call to its chat when the tool
// wants that, and reports whether the call now waits (or already failed
// deciding). Waiting is a state of this actor: the answer comes back as
// approvalAnswer.
func (a *toolActor) askApproval(c actor.Context) bool {
	t, ok := a.rt.tools.Get(a.call.Name)
	if !ok || t.Approve == nil {
		return false
	}
	ap, err := approvalOf(t, json.RawMessage(a.call.Arguments))
	if err != nil {
		a.report(c, "", err)
		return true
	}
	if ap == nil {
		return false
	}
	a.asked = true
	c.Request(a.session, &approvalRequest{turn: a.turn, tool: a.call.Name, prompt: ap.Prompt, timeout: ap.Timeout})
	return true
}

// handleApproval runs the call once approved, or reports the refusal.
func (a *toolActor) handleApproval(c actor.Context, m *approvalAnswer) {
	if !a.asked || a.reported {
		return
	}
	a.asked = false
	if !m.approved {
		a.report(c, "", fmt.Errorf("%w: %s", tools.ErrDenied, m.why))
		return
	}
	a.begin(c)
}

// approvalOf asks t whether a call needs approval, turning a panic into an
// error as for Run.
func approvalOf(t tools.Tool, args json.RawMessage) (ap *tools.Approval, err error) {
	defer func() {
		if r := recover(); r != nil {
			ap, err = nil, fmt.Errorf("tool %s crashed: %v", t.Name, r)
		}
	}()
	return t.Approve(args)
}

// runTool runs t, turning a panic into an error result.
func runTool(ctx context.Context, t tools.Tool, env tools.Env, args json.RawMessage, logPanic func(any)) (content string, err error) {
	defer func() {
		if r := recover(); r != nil {
			logPanic(r)
			content, err = "", fmt.Errorf("tool %s crashed: %v", t.Name, r)
		}
	}()
	return t.Run(ctx, env, args)
}

// report sends the call's one result to the turn and stops this actor.
func (a *toolActor) report(c actor.Context, content string, err error) {
	if a.reported {
		return
	}
	a.reported = true
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	a.rt.obs.ToolCall(a.call.Name, outcome, time.Since(a.start))
	c.Send(c.Parent(), &toolResult{callID: a.call.ID, content: capResult(content), err: err})
	c.Stop(c.Self())
}

// MaxToolResult bounds the bytes of one tool result given to the model: a
// tool that returns 50 MB must not fill the model's context or the history.
const MaxToolResult = 64 << 10

func capResult(s string) string { return truncateForModel(s, MaxToolResult) }

// release gives back what the call holds: its context, timer, and an
// answer to a tool goroutine still waiting for a sub-agent.
func (a *toolActor) release() {
	if a.cancel != nil {
		a.cancel()
	}
	if a.expiry != nil {
		a.expiry.Stop()
	}
	if a.sub != nil {
		a.sub.answer <- delegateAnswer{err: errors.New("the call was stopped")}
		a.sub = nil
	}
}

// handleDelegate starts a sub-agent turn as a child of this actor: it
// inherits the conversation's identity by construction, its voice replies
// go to the same session, and stopping this call stops it. The caller holds
// the delegation slots (see toolEnv.Delegate).
func (a *toolActor) handleDelegate(c actor.Context, m *delegateRequest) {
	fail := func(err error) { m.answer <- delegateAnswer{err: err} }
	if a.sub != nil {
		fail(errors.New("one sub-agent per call"))
		return
	}
	t := &turn{
		// The sub-agent's id is its caller's turn: whatever it says aloud is
		// part of that turn's answer in the session.
		rt: a.rt, ctx: a.ctx, id: a.turn, session: a.session, reportTo: c.Self(), kind: kindDelegate, depth: a.depth + 1,
		inputs: []*messages.UserMessage{{Text: m.task}},
		allow:  func(n string) bool { return n != "delegate_task" },
		instructions: "[sub-agent] You are a sub-agent working on one task for the main assistant. " +
			"Do the task and answer with the result only; the main assistant will relay it.",
	}
	pid, err := c.SpawnNamed(a.rt.turnProps(t), fmt.Sprintf("delegate-%d", a.rt.delegateSeq.Add(1)))
	if err != nil {
		fail(fmt.Errorf("start sub-agent: %w", err))
		return
	}
	a.sub = &subAgent{pid: pid, answer: m.answer}
}

func (a *toolActor) handleSubAgentDone(c actor.Context, m *turnDone) {
	sub := a.sub
	if sub == nil {
		return
	}
	a.sub = nil
	c.Stop(sub.pid)
	if m.failed {
		sub.answer <- delegateAnswer{err: fmt.Errorf("the sub-agent failed: %s", m.reply)}
		return
	}
	sub.answer <- delegateAnswer{text: m.reply}
}

// toolEnv is the tools.Env of one call, used from the tool's goroutine. Its
// Session comes from the tool actor's binding and its deliveries go to the
// session that spawned the turn: a tool has no way to address another
// conversation. It touches the actor only through messages.
type toolEnv struct {
	a    *toolActor
	s    messages.Session
	self *actor.PID
	root *actor.RootContext
	// ctx is the actor's context, used only for RequestFuture and Send,
	// which protoactor allows from other goroutines (they go through the
	// sender middleware that stamps this actor's identity).
	ctx actor.Context
}

var _ tools.Env = (*toolEnv)(nil)

// Session implements tools.Env.
func (e *toolEnv) Session() messages.Session { return e.s }

// SenderID implements tools.Env.
func (e *toolEnv) SenderID() string { return e.a.sender }

// Speak implements tools.Env: the request to the TTS actor carries this
// actor's identity in its envelope, so the TTS actor picks this platform's
// format; the speech goes to this actor's session for delivery.
func (e *toolEnv) Speak(ctx context.Context, text, voice string) (time.Duration, error) {
	rt := e.a.rt
	if rt.tts == nil {
		return 0, fmt.Errorf("no speech engine is configured")
	}
	// The future gets the full TTSTimeout, which the TTS actor always
	// answers within (it refuses work it cannot start in time); this call
	// stops waiting when ctx ends. A future that times out just as its
	// answer arrives is a data race inside the pinned protoactor.
	f := e.ctx.RequestFuture(rt.tts, &messages.SynthesizeSpeech{Text: text, Voice: voice}, rt.cfg.TTSTimeout)
	var (
		res  any
		err  error
		done = make(chan struct{})
	)
	go func() { res, err = f.Result(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return 0, fmt.Errorf("speech: %w", ctx.Err())
	}
	if err != nil {
		return 0, fmt.Errorf("speech: %w", err)
	}
	sp, ok := res.(*messages.Speech)
	if !ok {
		return 0, speechError(res)
	}
	e.ctx.Send(e.a.session, &voiceReply{turn: e.a.turn, speech: sp})
	return sp.Duration, nil
}

// Delegate implements tools.Env: the tool actor runs the sub-agent as its
// child; this goroutine (the tool's, never the actor's) holds a delegation
// slot and waits for the answer or for the call's end, which /stop brings.
func (e *toolEnv) Delegate(ctx context.Context, task string) (string, error) {
	if strings.TrimSpace(task) == "" {
		return "", errors.New("delegate_task: the task is empty")
	}
	if e.a.depth >= e.a.rt.cfg.MaxDelegateDepth {
		return "", fmt.Errorf("delegate_task: sub-agents may not delegate further (depth %d)", e.a.depth)
	}
	// Two bounds: per calling turn (as Hermes: three children at a time)
	// and for the whole daemon (so many users delegating cannot swamp it).
	for _, sem := range []chan struct{}{e.a.delegates, e.a.rt.delegates} {
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
	answer := make(chan delegateAnswer, 1)
	e.root.Send(e.self, &delegateRequest{task: task, answer: answer})
	select {
	case r := <-answer:
		return r.text, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("delegate_task: %w", ctx.Err())
	}
}

// Background implements tools.Env: the request goes to this tool's own
// session, which spawns the follow-up as its child.
func (e *toolEnv) Background(kind tools.Background, prompt string) error {
	return e.a.rt.background(e.ctx, e.a.session, kind, prompt)
}

// JobsChanged implements tools.Env.
func (e *toolEnv) JobsChanged() { e.a.rt.jobsChanged() }
