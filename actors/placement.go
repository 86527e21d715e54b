package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/hermesd/hermesd/messages"
)

// Placement puts sessions somewhere other than this runtime's own routers:
// in cluster mode (package cluster) every session is a cluster grain,
// addressed by its key and activated on whichever member owns the key. Nil
// in Deps means single-node: sessions are children of the local routers.
//
// Only messages/hermes.proto types cross a Placement: what reaches a
// session from another member is a proto, and what a session needs that is
// not (a turn, a tool, the TTS actor, the outbox) stays local to the member
// that holds it.
type Placement interface {
	// Bind returns a copy of the session actor's Props that binds each
	// activation to its key (a grain's name is not its key); the runtime
	// instruments what it returns, so inspection sees the binding.
	Bind(session *actor.Props) *actor.Props
	// Start starts placement on sys, with session as the Props of a
	// session actor (from Bind). It is called once, before any message is
	// routed.
	Start(sys *actor.ActorSystem, session *actor.Props) error
	// Deliver routes msg to the session of key and returns once the
	// session holds it (it answered with *messages.Routed), or with an
	// error once ctx ends. It retries with its own backoff meanwhile.
	Deliver(ctx context.Context, key string, msg proto.Message) error
	// Stop leaves the cluster. Sessions held here are passivated first by
	// the runtime.
	Stop()
	// Owns reports whether this member is where key belongs now. A session
	// that finds itself elsewhere twice in a row passivates (lease.go).
	Owns(key string) bool
	// Internal reports whether msg is the placement's own message to an
	// activation (protoactor's cluster sends each grain one after
	// Started), which a session ignores.
	Internal(msg any) bool
}

// route hands msg to the session of key: to its router shard on one node,
// or through the placement, as a proto, in cluster mode.
func (rt *Runtime) route(ctx context.Context, key string, msg any) error {
	if rt.placement == nil {
		rt.sys.Root.Send(rt.routerOf(key), msg)
		return nil
	}
	var wire proto.Message
	switch m := msg.(type) {
	case *resumeSession:
		wire = &messages.SessionResume{SessionKey: key}
	case *conversationReset:
		wire = &messages.SessionReset{Message: m.m, Conversation: m.conv}
	case proto.Message:
		wire = m
	default:
		return fmt.Errorf("route %T to %s: not a message that crosses members", msg, key)
	}
	// Shutdown stops every wait at once (routeStored says why that is
	// safe for stored messages).
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(rt.draining, cancel)()
	defer cancel()
	if err := rt.placement.Deliver(ctx, key, wire); err != nil {
		if rt.draining.Err() != nil {
			if _, ok := msg.(*resumeSession); ok {
				return nil // a nudge: the owner's sweep does the same
			}
			return fmt.Errorf("route to session %s: %w", key, ErrShuttingDown)
		}
		return fmt.Errorf("route to session %s: %w", key, err)
	}
	return nil
}

// routeStored routes, in cluster mode, msg whose effect is stored already
// (an accepted message, a new conversation), so a failure to reach its
// session within ctx is not the platform's problem: routing goes on in the
// background until the session holds it (or shutdown; the next start's
// recovery resumes the session), and the platform is acknowledged. id names
// the platform's message in logs.
func (rt *Runtime) routeStored(ctx context.Context, key string, msg any, id string) error {
	err := rt.route(ctx, key, msg)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrShuttingDown):
		// route stops its wait at shutdown: the message is stored, and its
		// session's owner answers it (recovery, or the owed-work sweep).
		rt.log.Info("shutting down: a stored message is left to its session's owner", "session", key, "message", id)
		return nil
	}
	rt.log.Warn("session not reached yet; routing on in the background", "session", key, "message", id, "err", err)
	go func() {
		if err := rt.route(rt.ctx, key, msg); err != nil && rt.ctx.Err() == nil {
			rt.log.Error("route a stored message", "session", key, "message", id, "err", err)
		}
	}()
	return nil
}

// routeTimeout bounds routing one message when the caller gives no
// deadline (recovery).
const routeTimeout = 30 * time.Second

// recoverOwedPlaced is recoverOwed in cluster mode: each owed session is
// asked to resume wherever it lives, at most RecoveryConcurrency at a time
// (a session answers once it is loaded and owns its key). Every member does
// this at start; a session resumed twice has nothing to do the second time.
func (rt *Runtime) recoverOwedPlaced(keys []string) {
	rt.resumeOwed(keys, routeTimeout, slog.LevelError)
}

// resumeOwed asks each session of keys to resume, at most
// RecoveryConcurrency at a time, each route bounded by timeout; a failure
// is logged at level. It returns when every route ended or the runtime
// stops.
func (rt *Runtime) resumeOwed(keys []string, timeout time.Duration, level slog.Level) {
	n := rt.cfg.RecoveryConcurrency
	if n <= 0 {
		n = 32
	}
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, key := range keys {
		select {
		case slots <- struct{}{}:
		case <-rt.ctx.Done():
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(rt.ctx, timeout)
			defer cancel()
			if err := rt.route(ctx, key, &resumeSession{key: key}); err != nil && rt.ctx.Err() == nil {
				rt.log.Log(rt.ctx, level, "resume a session that owes work", "session", key, "err", err)
			}
		})
	}
}

// grains are the sessions this member holds in cluster mode, by key: the
// inspection API lists them and shutdown passivates them.
type grains struct {
	mu   sync.Mutex
	live map[string]*grainInfo
}

type grainInfo struct {
	pid   *actor.PID
	last  time.Time
	epoch uint64
}

func (g *grains) add(key string, pid *actor.PID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		g.live = make(map[string]*grainInfo)
	}
	g.live[key] = &grainInfo{pid: pid, last: time.Now()}
	return len(g.live)
}

// remove forgets key if pid still holds it (a newer activation of the same
// key on this member keeps its entry).
func (g *grains) remove(key string, pid *actor.PID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.live[key]; e != nil && e.pid.Equal(pid) {
		delete(g.live, key)
	}
	return len(g.live)
}

func (g *grains) touch(key string, pid *actor.PID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.live[key]; e != nil && e.pid.Equal(pid) {
		e.last = time.Now()
	}
}

func (g *grains) setEpoch(key string, pid *actor.PID, epoch uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.live[key]; e != nil && e.pid.Equal(pid) {
		e.epoch = epoch
	}
}

func (g *grains) list(search string) []SessionInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]SessionInfo, 0, len(g.live))
	for k, e := range g.live {
		if search != "" && !strings.Contains(k, search) {
			continue
		}
		platform, _, _ := strings.Cut(k, ":")
		out = append(out, SessionInfo{Key: k, Platform: platform, LastActive: e.last, LeaseEpoch: e.epoch})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (g *grains) pids() []*actor.PID {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*actor.PID, 0, len(g.live))
	for _, e := range g.live {
		out = append(out, e.pid)
	}
	return out
}

// passivateGrains stops every session this member holds, waiting for each;
// their state is in the store, and the next message activates them on a
// member that is still in the cluster.
func (rt *Runtime) passivateGrains() {
	futures := make([]*actor.Future, 0)
	for _, pid := range rt.grains.pids() {
		futures = append(futures, rt.sys.Root.PoisonFuture(pid))
	}
	for _, f := range futures {
		if err := f.Wait(); err != nil {
			rt.log.Warn("passivate session", "err", err)
		}
	}
}

// idleCheck is a grain's own passivation timer: in cluster mode no router
// sweeps, so each session passivates itself after IdleTimeout with nothing
// to do.
type idleCheck struct{}

// rescanned is a live session's second look at what it owes.
type rescanned struct {
	state SessionState
	err   error
}

// rescan rereads what the session owes, when it has nothing running (a
// busy session is asked again by the next sweep).
func (a *session) rescan(c actor.Context) {
	if a.rescanning || a.turn != nil || a.settling > 0 || len(a.queued) > 0 {
		return
	}
	a.rescanning = true
	s, limit, p, timeout, f := a.s, a.rt.cfg.HistoryLimit, a.rt.persist, a.rt.cfg.StoreTimeout, a.fence
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(WithFence(context.Background(), f), timeout)
		defer cancel()
		st, err := p.LoadSession(ctx, s, limit)
		return &rescanned{state: st, err: err}
	})
}

// handleRescanned answers stored messages the session was never routed:
// pending, above what its load saw, and not handled live since (a message
// still on its way through the mailbox is then skipped as seen).
func (a *session) handleRescanned(c actor.Context, m *rescanned) {
	a.rescanning = false
	if m.err != nil {
		a.logger().Warn("reread what the session owes", "err", m.err)
		return
	}
	var missed []*messages.UserMessage
	for _, p := range m.state.Pending {
		if seq := p.GetInboxSeq(); seq > a.seen && !a.live[seq] {
			missed = append(missed, p)
		}
	}
	a.live = nil
	if len(missed) > 0 {
		a.logger().Warn("answering stored messages this session was never routed", "messages", len(missed))
		for _, p := range missed {
			a.handleUser(c, p)
		}
	}
	a.seen = max(a.seen, m.state.LastAccepted)
}

// noteLive records, in cluster mode, a stored message handled live, so that
// a rescan does not answer it again.
func (a *session) noteLive(m *messages.UserMessage) {
	if a.rt.placement == nil || m.GetInboxSeq() == 0 {
		return
	}
	if a.live == nil {
		a.live = make(map[uint64]bool)
	}
	a.live[m.GetInboxSeq()] = true
}

// sweepOwed, in cluster mode, asks every session that owes work to look
// again, every interval: a message stored by a member that could not reach
// its session (cut off, frozen) is answered by the session's owner.
func (rt *Runtime) sweepOwed(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-rt.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(rt.ctx, rt.cfg.StoreTimeout)
		keys, err := rt.persist.Owed(ctx)
		cancel()
		if err != nil {
			rt.log.Warn("find sessions that owe work", "err", err)
			continue
		}
		// Quietly: a session that cannot be reached now is tried again
		// at the next sweep.
		rt.resumeOwed(keys, interval, slog.LevelDebug)
	}
}

// isRouted reports whether m is routed to sessions by key in cluster mode:
// the messages a session acknowledges with *messages.Routed.
func isRouted(m any) bool {
	switch m.(type) {
	case *messages.UserMessage, *messages.ScheduledFire, *messages.SessionResume, *messages.SessionReset:
		return true
	}
	return false
}

// holdAck remembers, while loading, who waits for a routed message to be
// taken: the session answers once it is loaded.
func (a *session) holdAck(c actor.Context, m any) {
	if a.rt.placement != nil && isRouted(m) && c.Sender() != nil {
		a.acks = append(a.acks, c.Sender())
	}
}

// grainLoaded acknowledges what arrived while loading and starts the idle
// timer (cluster mode).
func (a *session) grainLoaded(c actor.Context, m *stateLoaded) {
	if a.rt.placement == nil {
		return
	}
	// One line per activation in cluster mode: where sessions live, and
	// what a move costs, is worth a log line.
	a.logger().Info("session activated here", "epoch", a.fence.Epoch, "history", len(m.state.History),
		"pending", len(m.state.Pending), "took", time.Since(a.activatedAt).Round(10*time.Microsecond),
		"claim", a.claimedAt.Sub(a.activatedAt).Round(10*time.Microsecond), "load", time.Since(a.claimedAt).Round(10*time.Microsecond))
	for _, pid := range a.acks {
		c.Send(pid, &messages.Routed{SessionKey: a.s.Key()})
	}
	a.acks = nil
	a.lastActive = time.Now()
	a.armIdle(c, a.rt.cfg.IdleTimeout)
}

// ack answers a routed message of a loaded session (cluster mode). It
// reports false when the session must not handle m: it no longer holds its
// lease and is stopping.
func (a *session) ack(c actor.Context, m any) bool {
	if a.rt.placement == nil || !isRouted(m) {
		return !a.fenced
	}
	if !a.fenced && !a.holdsLease() {
		// The next owner loads the message as pending.
		a.logger().Warn("session lease about to lapse; stopping")
		a.rt.leaseLost(a.s, "expired")
		a.stopFenced(c)
	}
	if a.fenced {
		// Refused (a message still in the mailbox when the session
		// stopped, too), so that the sender retries now rather than at
		// its request timeout.
		if c.Sender() != nil {
			c.Respond(&messages.Routed{SessionKey: a.s.Key(), Refused: true})
		}
		return false
	}
	a.lastActive = time.Now()
	a.rt.grains.touch(a.s.Key(), c.Self())
	if c.Sender() != nil {
		c.Respond(&messages.Routed{SessionKey: a.s.Key()})
	}
	return true
}

// grainStarted keeps the member's list of held sessions. It reports false
// for an activation on a member that is shutting down: the session stops
// before loading anything (its turns could not run), and the caller,
// unanswered, retries until the cluster places the key elsewhere.
func (a *session) grainStarted(c actor.Context) bool {
	if a.rt.placement == nil {
		return true
	}
	if !a.rt.Accepting() {
		a.logger().Debug("member shutting down; not activating the session here")
		c.Stop(c.Self())
		return false
	}
	a.rt.obs.SessionsActive(a.rt.grains.add(a.s.Key(), c.Self()))
	a.activatedAt = time.Now()
	return true
}

func (a *session) grainStopped(c actor.Context) {
	if a.idleTimer != nil {
		a.idleTimer.Stop()
	}
	if a.rt.placement != nil && a.s.Valid() {
		a.rt.obs.SessionsActive(a.rt.grains.remove(a.s.Key(), c.Self()))
	}
}

func (a *session) armIdle(c actor.Context, d time.Duration) {
	if a.rt.cfg.SweepInterval <= 0 || a.rt.cfg.IdleTimeout <= 0 {
		return // passivation is off
	}
	self, root := c.Self(), c.ActorSystem().Root
	a.idleTimer = time.AfterFunc(d, func() { root.Send(self, &idleCheck{}) })
}

// handleGrain handles what only cluster mode routes to a session.
func (a *session) handleGrain(c actor.Context, msg any) {
	switch m := msg.(type) {
	case *messages.SessionResume:
		// A fresh activation answered what is owed already; a live one
		// looks again: a member that could not reach it may have stored
		// messages it was never told of.
		a.rescan(c)
	case *rescanned:
		a.handleRescanned(c, m)
	case *messages.SessionReset:
		a.handleReset(c, &conversationReset{m: m.GetMessage(), conv: m.GetConversation()})
	case *idleCheck:
		left := a.rt.cfg.IdleTimeout - time.Since(a.lastActive)
		if left > 0 || !a.idle(c) || a.sweepBeforeIdle(c) {
			a.armIdle(c, max(left, a.rt.cfg.SweepInterval))
			return
		}
		a.logger().Debug("session idle; passivating")
		a.rt.obs.SessionPassivated()
		c.Stop(c.Self())
	}
}
