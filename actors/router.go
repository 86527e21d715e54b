package actors

import (
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
)

// router maps session keys to session actors. It spawns a session on its
// first message, named by its key, and passivates sessions idle for longer
// than the idle timeout with one periodic sweep over last-activity times (no
// timer per session). It never loads anything: a session loads its own
// state in its Started.
type router struct {
	rt        *Runtime
	sessions  map[string]*route
	stopSweep func()
	asks      uint64 // passivation questions asked
}

// route is the router's record of one live session.
type route struct {
	pid *actor.PID
	// ask is the passivation question outstanding, 0 for none: routing a
	// message voids it, and an answer to any other question (an earlier
	// one, or one to a previous incarnation of the session under the same
	// name) is ignored.
	ask  uint64
	last int64 // unix nanoseconds of the last routed message
	// stopping is set once the session agreed to passivate; messages that
	// arrive until it is gone wait in held and go to its successor.
	stopping bool
	held     []any
}

func newRouter(rt *Runtime) actor.Actor {
	return &router{rt: rt, sessions: make(map[string]*route)}
}

// Receive handles lifecycle first, then one handler per message.
func (r *router) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		if iv := r.rt.cfg.SweepInterval; iv > 0 {
			// The root context sends the ticks: the scheduler's goroutine must
			// not touch this actor's context.
			r.stopSweep = every(c.ActorSystem().Root, c.Self(), iv, iv, &sweep{})
		}
	case *actor.Stopping, *actor.Restarting:
		if r.stopSweep != nil {
			r.stopSweep()
		}
	case *messages.UserMessage:
		r.route(c, m.GetSessionKey(), m)
	case *messages.ScheduledFire:
		r.route(c, m.GetSessionKey(), m)
	case *resumeSession:
		r.route(c, m.key, m)
	case *conversationReset:
		r.route(c, m.m.GetSessionKey(), m)
	case *sweep:
		r.sweep(c)
	case *passivateReply:
		r.passivated(c, m)
	case *actor.Terminated:
		r.terminated(c, m.Who)
	case *listSessions:
		c.Respond(r.list(m))
	case *actor.Stopped:
	default:
		r.rt.log.Warn("router: unhandled message", "type", typeName(m))
	}
}

func (r *router) route(c actor.Context, key string, m any) {
	e := r.sessions[key]
	if e != nil && e.stopping {
		e.held = append(e.held, m)
		return
	}
	if e == nil {
		pid, err := c.SpawnNamed(r.rt.sessionProps, key)
		if err != nil {
			// Only possible if a stopped session's name is still registered;
			// keep the message and retry when its Terminated arrives.
			r.rt.log.Error("spawn session", "session", key, "err", err)
			return
		}
		e = &route{pid: pid}
		r.sessions[key] = e
		r.rt.obs.SessionsActive(int(r.rt.sessionsLive.Add(1)))
	}
	e.ask = 0
	e.last = time.Now().UnixNano()
	c.Send(e.pid, m)
}

// maxAsksPerSweep bounds the passivation questions of one sweep, so a
// million idle sessions are retired over several sweeps instead of flooding
// the router's mailbox.
const maxAsksPerSweep = 10000

func (r *router) sweep(c actor.Context) {
	cutoff := time.Now().Add(-r.rt.cfg.IdleTimeout).UnixNano()
	asked := 0
	for _, e := range r.sessions {
		if e.stopping || e.last > cutoff {
			continue
		}
		r.asks++
		e.ask = r.asks
		c.Request(e.pid, &passivate{ask: e.ask})
		asked++
		if asked >= maxAsksPerSweep {
			break
		}
	}
}

func (r *router) passivated(c actor.Context, m *passivateReply) {
	// Respond carries no sender PID; the session names itself.
	e := r.sessions[m.key]
	if e == nil || e.stopping {
		return
	}
	if m.ask == 0 || m.ask != e.ask {
		return // stale: a newer message or a newer incarnation voided it
	}
	e.ask = 0
	if !m.ok {
		e.last = time.Now().UnixNano() // busy: ask again after another idle period
		return
	}
	e.stopping = true
	c.Stop(e.pid)
	r.rt.obs.SessionPassivated()
}

func (r *router) terminated(c actor.Context, who *actor.PID) {
	key := keyOf(who)
	e := r.sessions[key]
	if e == nil || !e.pid.Equal(who) {
		return
	}
	delete(r.sessions, key)
	r.rt.obs.SessionsActive(int(r.rt.sessionsLive.Add(-1)))
	for _, m := range e.held {
		r.route(c, key, m)
	}
}

// keyOf returns the session key a session actor is named by.
func keyOf(pid *actor.PID) string {
	if pid == nil {
		return ""
	}
	id := pid.GetId()
	return id[strings.LastIndexByte(id, '/')+1:]
}
