// Package identity binds a conversation's Session to the actors that work for
// it, by construction:
//
//   - a session actor is named by its session key, and its props bind that key
//     to the actor when it is created (ByName);
//   - every actor it spawns, and everything they spawn, inherits the binding
//     through a spawn middleware that travels with the binding (inherit);
//   - every message a bound actor sends carries its Session in the envelope
//     headers, stamped by a sender middleware from the sender's own binding
//     (stamp), never from a field the sender fills in.
//
// Shared actors (TTS, outboxes, scheduler) read the identity of each request
// from its envelope with FromEnvelope, and Guard refuses session-scoped
// requests that arrive without one.
package identity

import (
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/ctxext"

	"github.com/hermesd/hermesd/messages"
)

// HeaderKey is the envelope header that carries the sender's session key.
// Headers cross node boundaries, so the identity survives remote delivery.
const HeaderKey = "hermesd-session"

// extID is allocated once at package init and never changes afterwards; it is
// an index, not state.
var extID = ctxext.NextContextExtensionID()

// binding is the context extension holding an actor's Session.
type binding struct{ s messages.Session }

// ExtensionID implements ctxext.ContextExtension.
func (binding) ExtensionID() ctxext.ContextExtensionID { return extID }

// Of returns the Session an actor is bound to. ok is false for actors outside
// any session (shared actors, the router).
func Of(c actor.ExtensionContext) (s messages.Session, ok bool) {
	// ctxext.ContextExtensions.Get indexes a slice without a bounds check when
	// nothing was ever set; treat that as "unbound".
	defer func() {
		if recover() != nil {
			s, ok = messages.Session{}, false
		}
	}()
	b, _ := c.Get(extID).(binding)
	return b.s, b.s.Valid()
}

// Bind returns a copy of p whose actor is bound to s and passes the binding on
// to everything it spawns. p itself is not changed (Props are shared: never
// Configure them).
func Bind(s messages.Session, p *actor.Props) *actor.Props {
	return p.Clone(
		actor.WithOnInit(func(c actor.Context) { c.Set(binding{s}) }),
		actor.WithSpawnMiddleware(inherit),
		actor.WithSenderMiddleware(stamp),
	)
}

// ByName returns a copy of p for session actors: each actor spawned from it is
// bound to the Session its own name spells (its id is "<parent>/<session
// key>"). One Props serves every session. An actor whose name is not a valid
// key stays unbound; the session actor refuses to start without a binding.
func ByName(p *actor.Props) *actor.Props {
	return p.Clone(
		actor.WithOnInit(func(c actor.Context) {
			id := c.Self().GetId()
			if i := strings.LastIndexByte(id, '/'); i >= 0 {
				id = id[i+1:]
			}
			if s, err := messages.ParseKey(id); err == nil {
				c.Set(binding{s})
			}
		}),
		actor.WithSpawnMiddleware(inherit),
		actor.WithSenderMiddleware(stamp),
	)
}

// inherit binds every child of a bound actor to the parent's Session.
func inherit(next actor.SpawnFunc) actor.SpawnFunc {
	return func(sys *actor.ActorSystem, id string, p *actor.Props, parent actor.SpawnerContext) (*actor.PID, error) {
		if ec, ok := parent.(actor.ExtensionContext); ok {
			if s, ok := Of(ec); ok {
				p = Bind(s, p)
			}
		}
		return next(sys, id, p, parent)
	}
}

// stamp writes the sending actor's Session into the envelope headers. The
// envelope is copied: Forward re-sends a shared envelope, and header maps may
// be shared with the sender's caller.
func stamp(next actor.SenderFunc) actor.SenderFunc {
	return func(c actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
		if ec, ok := c.(actor.ExtensionContext); ok {
			if s, ok := Of(ec); ok {
				h := make(map[string]string, len(env.Header)+1)
				for k, v := range env.Header {
					h[k] = v
				}
				h[HeaderKey] = s.Key()
				env = &actor.MessageEnvelope{Header: h, Message: env.Message, Sender: env.Sender}
			}
		}
		next(c, target, env)
	}
}

// FromHeader reads the Session from envelope headers. It is nil-safe:
// protoactor gives a nil header for messages sent without an envelope.
func FromHeader(h actor.ReadonlyMessageHeader) (messages.Session, bool) {
	if h == nil {
		return messages.Session{}, false
	}
	key := h.Get(HeaderKey)
	if key == "" {
		return messages.Session{}, false
	}
	s, err := messages.ParseKey(key)
	return s, err == nil
}

// HeaderReader is the part of an actor context that holds the current
// message's envelope headers (actor.Context and actor.ReceiverContext).
type HeaderReader interface {
	MessageHeader() actor.ReadonlyMessageHeader
}

// FromEnvelope returns the identity of the message a shared actor is handling:
// the Session stamped into its envelope by the sender.
func FromEnvelope(c HeaderReader) (messages.Session, bool) {
	return FromHeader(c.MessageHeader())
}

// ByKey returns a copy of p for session actors whose name is not their key
// (cluster grains are named "partition-activator/<key>$N"): on Started, before
// the actor sees it, keyOf reads the actor's session key (from its cluster
// identity) and the actor is bound to it. Started is the first point where
// the cluster identity is readable: the cluster's own OnInit runs after the
// Props' OnInits. An actor whose key does not parse stays unbound, and the
// session actor refuses to start without a binding.
func ByKey(p *actor.Props, keyOf func(actor.ReceiverContext) string) *actor.Props {
	return p.Clone(
		actor.WithReceiverMiddleware(func(next actor.ReceiverFunc) actor.ReceiverFunc {
			return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
				if _, ok := env.Message.(*actor.Started); ok {
					if s, err := messages.ParseKey(keyOf(c)); err == nil {
						c.Set(binding{s})
					}
				}
				next(c, env)
			}
		}),
		actor.WithSpawnMiddleware(inherit),
		actor.WithSenderMiddleware(stamp),
	)
}
