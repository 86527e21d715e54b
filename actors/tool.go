package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/tools"
)

// toolActor runs one tool call. It is a child of its turn, bound to the
// turn's session, and lives exactly as long as the call. It runs the tool on
// its own goroutine (blocking here blocks nobody else), recovers a panic into
// an error result so the turn gets an answer at once, and stops itself.
type toolActor struct {
	rt      *Runtime
	ctx     context.Context
	call    model.ToolCall
	turn    uint64
	session *actor.PID
	sender  string
	depth   int // delegation depth of the calling turn
	// delegates bounds the sub-agents of the calling turn.
	delegates chan struct{}
}

// Receive runs the call on Started.
func (a *toolActor) Receive(c actor.Context) {
	if _, ok := c.Message().(*actor.Started); !ok {
		return
	}
	start := time.Now()
	content, err := a.run(c)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	a.rt.obs.ToolCall(a.call.Name, outcome, time.Since(start))
	c.Send(c.Parent(), &toolResult{callID: a.call.ID, content: content, err: err})
	c.Stop(c.Self())
}

func (a *toolActor) run(c actor.Context) (content string, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, _ := sessionOf(c)
			a.rt.log.Error("tool panicked", "session", s.Key(), "tool", a.call.Name, "panic", r, "stack", string(debug.Stack()))
			content, err = "", fmt.Errorf("tool %s crashed: %v", a.call.Name, r)
		}
	}()
	t, ok := a.rt.tools.Get(a.call.Name)
	if !ok {
		return "", fmt.Errorf("unknown tool %q", a.call.Name)
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.rt.cfg.ToolTimeout)
	defer cancel()
	env := &toolEnv{c: c, a: a}
	return t.Run(ctx, env, json.RawMessage(a.call.Arguments))
}

// toolEnv is the tools.Env of one call. Its Session comes from the tool
// actor's binding and its deliveries go to the session that spawned the
// turn: a tool has no way to address another conversation.
type toolEnv struct {
	c actor.Context
	a *toolActor
}

var _ tools.Env = (*toolEnv)(nil)

// Session implements tools.Env.
func (e *toolEnv) Session() messages.Session {
	s, _ := sessionOf(e.c)
	return s
}

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
	timeout := rt.cfg.TTSTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	res, err := e.c.RequestFuture(rt.tts, &messages.SynthesizeSpeech{Text: text, Voice: voice}, timeout).Result()
	if err != nil {
		return 0, fmt.Errorf("speech: %w", err)
	}
	sp, ok := res.(*messages.Speech)
	if !ok {
		return 0, speechError(res)
	}
	e.c.Send(e.a.session, &voiceReply{turn: e.a.turn, speech: sp})
	return sp.Duration, nil
}

// Delegate implements tools.Env.
func (e *toolEnv) Delegate(ctx context.Context, task string) (string, error) {
	return e.a.rt.delegate(ctx, e.c, e.a, task)
}

// Background implements tools.Env: the request goes to this tool's own
// session, which spawns the follow-up as its child.
func (e *toolEnv) Background(kind tools.Background, prompt string) error {
	return e.a.rt.background(e.c, e.a.session, kind, prompt)
}

// JobsChanged implements tools.Env.
func (e *toolEnv) JobsChanged() { e.a.rt.jobsChanged() }

// sessionOf is identity.Of for an actor context.
func sessionOf(c actor.Context) (messages.Session, bool) { return identity.Of(c) }
