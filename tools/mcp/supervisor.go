package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermesd/hermesd/tools"
)

// Backoff is the restart schedule of a server that failed or died: First,
// doubling up to Max. A server that stayed up for Stable starts again from
// First.
type Backoff struct {
	First, Max, Stable time.Duration
}

// DefaultBackoff is the production schedule.
var DefaultBackoff = Backoff{First: time.Second, Max: time.Minute, Stable: time.Minute}

// next returns the delay after a failure, given the previous one.
func (b Backoff) next(prev time.Duration, upFor time.Duration) time.Duration {
	if prev == 0 || upFor >= b.Stable {
		return b.First
	}
	return min(2*prev, b.Max)
}

// Registry is what the supervisor needs of the tool registry.
type Registry interface {
	SetGroup(group string, ts []tools.Tool) error
	// SetNote publishes the server's health for /mcp.
	SetNote(group, note string)
}

// SupervisorProps returns the props of the actor that keeps srv connected
// and its tools registered in reg under the group "mcp:<name>".
func SupervisorProps(srv *Server, reg Registry, log *slog.Logger, b Backoff) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{srv: srv, reg: reg, log: log.With("mcp_server", srv.Name()), backoff: b}
	})
}

// supervisor connects its server off the actor goroutine, learns of the
// session's end from a watcher that only waits on it, and schedules each
// restart with a timer: no goroutine of it blocks in Receive, and each
// message carries the generation it belongs to, so late news of an old
// connection is dropped.
type supervisor struct {
	srv     *Server
	reg     Registry
	log     *slog.Logger
	backoff Backoff

	ctx    context.Context
	cancel context.CancelFunc
	gen    int
	delay  time.Duration
	upAt   time.Time
	timer  *time.Timer
}

// connected reports a connection attempt.
type connected struct {
	gen   int
	cs    *sdk.ClientSession
	tools []*sdk.Tool
	err   error
}

// disconnected reports that a live session ended (the process exited, the
// HTTP session failed).
type disconnected struct {
	gen int
	err error
}

// reconnect is the backoff timer firing.
type reconnect struct{ gen int }

// Receive handles lifecycle first, then one handler per message.
func (a *supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.start(c)
	case *actor.Stopping:
		a.stop()
	case *actor.Restarting:
		a.abandon() // a fresh instance starts over; news of this one must not reach it
	case *actor.Stopped:
	case *connected:
		a.handleConnected(c, m)
	case *disconnected:
		a.handleDisconnected(c, m)
	case *reconnect:
		if m.gen == a.gen && a.ctx.Err() == nil && !a.srv.closed.Load() {
			a.start(c)
		}
	default:
		a.log.Warn("mcp supervisor: unhandled message", "type", fmt.Sprintf("%T", m))
	}
}

func (a *supervisor) start(c actor.Context) {
	a.gen++
	gen, ctx, srv := a.gen, a.ctx, a.srv
	self, root := c.Self(), c.ActorSystem().Root
	go func() {
		cs, ts, err := srv.connect(ctx)
		root.Send(self, &connected{gen: gen, cs: cs, tools: ts, err: err})
	}()
}

func (a *supervisor) handleConnected(c actor.Context, m *connected) {
	if m.gen != a.gen || a.ctx.Err() != nil {
		if m.cs != nil {
			go m.cs.Close()
		}
		return
	}
	if m.err != nil {
		a.failed(c, m.err, 0)
		return
	}
	ts := a.srv.toolsOf(m.tools)
	if err := a.reg.SetGroup(a.group(), ts); err != nil {
		go m.cs.Close()
		a.failed(c, err, 0)
		return
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	if a.srv.closed.Load() {
		go m.cs.Close()
		return
	}
	a.srv.session.Store(m.cs)
	if a.srv.closed.Load() { // Close ran between the check and the Store
		_ = a.srv.Close()
		return
	}
	a.upAt = time.Now()
	a.srv.setStatus(func(s *Status) {
		s.Connected, s.Tools, s.LastError, s.Since = true, names, "", a.upAt
	})
	a.reg.SetNote(a.group(), fmt.Sprintf("connected (%s)", a.srv.Status().Transport))
	a.log.Info("mcp server connected", "tools", len(ts))
	gen, cs := a.gen, m.cs
	self, root := c.Self(), c.ActorSystem().Root
	go func() {
		err := cs.Wait()
		root.Send(self, &disconnected{gen: gen, err: err})
	}()
}

func (a *supervisor) handleDisconnected(c actor.Context, m *disconnected) {
	if m.gen != a.gen || a.ctx.Err() != nil {
		return
	}
	err := m.err
	if err == nil {
		err = fmt.Errorf("the server closed the connection")
	}
	a.srv.session.Store(nil)
	a.failed(c, err, time.Since(a.upAt))
}

// failed records err and schedules the next attempt. The server's tools
// stay offered meanwhile, so a call gets "restarting" instead of the model
// forgetting the tool exists.
func (a *supervisor) failed(c actor.Context, err error, upFor time.Duration) {
	a.delay = a.backoff.next(a.delay, upFor)
	a.srv.setStatus(func(s *Status) {
		s.Connected, s.LastError, s.Since = false, clip(err.Error(), 300), time.Now()
		s.Restarts++
	})
	a.reg.SetNote(a.group(), fmt.Sprintf("down, restarting in %s: %s", a.delay, clip(err.Error(), 200)))
	a.log.Warn("mcp server down; restarting", "err", err, "in", a.delay)
	gen := a.gen
	self, root := c.Self(), c.ActorSystem().Root
	a.timer = time.AfterFunc(a.delay, func() { root.Send(self, &reconnect{gen: gen}) })
}

// abandon ends this instance's connection attempts and session without
// closing the server for good (a restarted supervisor connects again).
func (a *supervisor) abandon() {
	a.cancel()
	if a.timer != nil {
		a.timer.Stop()
	}
	if cs := a.srv.session.Swap(nil); cs != nil {
		go cs.Close()
	}
}

func (a *supervisor) stop() {
	a.cancel()
	if a.timer != nil {
		a.timer.Stop()
	}
	_ = a.srv.Close()
	_ = a.reg.SetGroup(a.group(), nil)
	a.reg.SetNote(a.group(), "")
	a.srv.setStatus(func(s *Status) { s.Connected, s.Since = false, time.Now() })
}

// group is the server's group in the registry.
func (a *supervisor) group() string { return "mcp:" + a.srv.Name() }

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
