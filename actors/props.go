package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// turnProps are the Props of turn t; the producer makes a fresh copy of t,
// so no instance is ever reused (a restart would otherwise run on the state
// the failed instance left).
func (rt *Runtime) turnProps(t *turn) *actor.Props {
	tmpl := *t
	return rt.instrument(t.actorKind(), actor.PropsFromProducer(func() actor.Actor { t := tmpl; return &t },
		actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, rt.stopChild))))
}

func (rt *Runtime) toolProps(ctx context.Context, call model.ToolCall, t *turn, sender string) *actor.Props {
	turnID, session, depth := t.id, t.session, t.depth
	if call.Name == "delegate_task" && t.delegates == nil {
		t.delegates = make(chan struct{}, max(rt.cfg.MaxDelegates, 1))
	}
	sem := t.delegates
	// A sub-agent is the tool's child: it is stopped, never restarted.
	return rt.instrument(KindTool, actor.PropsFromProducer(func() actor.Actor {
		return &toolActor{rt: rt, ctx: ctx, call: call, turn: turnID, session: session, sender: sender, depth: depth, delegates: sem}
	}, actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, rt.stopChild))))
}

// systemPrompt is the configured prompt plus what the model should know
// about where it is talking — from the turn's own binding, never from a
// field of a message.
func (rt *Runtime) systemPrompt(s messages.Session, instructions string) string {
	p := rt.cfg.SystemPrompt
	if instructions != "" {
		p += "\n\n" + instructions
	}
	return p + fmt.Sprintf("\nYou are talking on %s (%s chat).", s.Platform(), s.Kind())
}
