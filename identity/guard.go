package identity

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
)

// ErrNoIdentity is the error a shared actor answers to a session-scoped
// request whose envelope carries no session. It never falls back to a default.
var ErrNoIdentity = errors.New("request has no session identity")

// SessionScoped marks a request that only makes sense for one conversation
// (synthesize speech for it, deliver into it). Guard refuses such a request
// when its envelope carries no identity.
type SessionScoped interface {
	SessionScoped()
}

// Refused is the reply to a refused request; its Err wraps ErrNoIdentity.
type Refused struct{ Err error }

// Guard counts and refuses session-scoped requests without identity. One
// Guard is owned by the runtime and shared by its shared actors.
type Guard struct {
	refused atomic.Uint64
	// Log, if set, receives one line per refusal.
	Log *slog.Logger
	// OnRefuse, if set, is called with the request type on every refusal
	// (the metrics hook).
	OnRefuse func(requestType string)
}

// Refusals returns how many requests were refused so far.
func (g *Guard) Refusals() uint64 { return g.refused.Load() }

// Middleware returns a receiver middleware for shared actors: a SessionScoped
// message without identity is answered with Refused (when it has a sender) and
// never reaches the actor.
func (g *Guard) Middleware() actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			if _, scoped := env.Message.(SessionScoped); scoped {
				if _, ok := FromHeader(env.Header); !ok {
					g.refuse(c, env)
					return
				}
			}
			next(c, env)
		}
	}
}

func (g *Guard) refuse(c actor.ReceiverContext, env *actor.MessageEnvelope) {
	g.refused.Add(1)
	typ := reflect.TypeOf(env.Message).String()
	if g.Log != nil {
		g.Log.Warn("refused request without session identity", "type", typ, "target", c.Self().String())
	}
	if g.OnRefuse != nil {
		g.OnRefuse(typ)
	}
	if env.Sender != nil {
		// ReceiverContext cannot send; the root context can, and a refusal
		// needs no identity of its own.
		c.ActorSystem().Root.Send(env.Sender, &Refused{Err: fmt.Errorf("%s: %w", typ, ErrNoIdentity)})
	}
}

// Require returns the identity of the message a shared actor is handling, or
// ErrNoIdentity (counted as a refusal) when there is none.
func (g *Guard) Require(c actor.Context) (messages.Session, error) {
	if s, ok := FromEnvelope(c); ok {
		return s, nil
	}
	g.refused.Add(1)
	typ := reflect.TypeOf(c.Message()).String()
	if g.Log != nil {
		g.Log.Warn("refused request without session identity", "type", typ)
	}
	if g.OnRefuse != nil {
		g.OnRefuse(typ)
	}
	return messages.Session{}, fmt.Errorf("%s: %w", typ, ErrNoIdentity)
}
