package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

// ErrShuttingDown is returned by Receive once shutdown has begun.
var ErrShuttingDown = errors.New("hermesd is shutting down")

// Receive is the platforms.Inbound of every adapter: it validates the
// message, persists it (so it is safe before the platform is told), and
// routes it to its session. Callers keep each chat's order.
func (rt *Runtime) Receive(ctx context.Context, m *messages.UserMessage) error {
	if !rt.accepting.Load() {
		return ErrShuttingDown
	}
	s, err := messages.ParseKey(m.GetSessionKey())
	if err != nil {
		return fmt.Errorf("route message: %w", err)
	}
	if n := len(m.GetText()); n > rt.cfg.MaxInboundBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", platforms.ErrTooLarge, n, rt.cfg.MaxInboundBytes)
	}
	if m.ReceivedUnixMs == 0 {
		m.ReceivedUnixMs = time.Now().UnixMilli()
	}
	cmd, _, isCmd := parseCommand(m.GetText())
	switch {
	case isCmd && (cmd == "new" || cmd == "reset"):
		// Applied here, before routing, so later messages land in the new
		// conversation; the session learns the conversation's number.
		conv, err := rt.persist.NewConversation(ctx, s)
		if err != nil {
			rt.log.Error("start a new conversation", "session", s.Key(), "err", err)
			return fmt.Errorf("start a new conversation: %w", err)
		}
		reset := &conversationReset{m: m, conv: conv}
		if rt.placement != nil {
			// The new conversation is stored: the session must learn of it
			// even when it cannot be reached within the platform's request.
			return rt.routeStored(ctx, s.Key(), reset, m.GetMessageId())
		}
		return rt.route(ctx, s.Key(), reset)
	case isCmd:
		// Commands steer the session; they are not part of the conversation.
	default:
		seq, err := rt.persist.Accept(ctx, s, m)
		if errors.Is(err, ErrDuplicate) {
			// Accepted once already: its session answers it (activating
			// loads it as pending); routing it again could answer it twice.
			rt.log.Info("platform sent a message again; not starting a second turn", "session", s.Key(), "message", m.GetMessageId())
			return rt.route(ctx, s.Key(), &resumeSession{key: s.Key()})
		}
		if err != nil {
			rt.log.Error("persist inbound message", "session", s.Key(), "err", err)
			return fmt.Errorf("persist message: %w", err)
		}
		m.InboxSeq = seq
		if rt.placement != nil {
			return rt.routeStored(ctx, s.Key(), m, m.GetMessageId())
		}
	}
	return rt.route(ctx, m.GetSessionKey(), m)
}

// Fire routes a due scheduled job to its session, activating it from the
// key exactly as a live message would. It does not wait: the scheduler
// calls it from its Receive.
func (rt *Runtime) Fire(f *messages.ScheduledFire) error {
	if _, err := messages.ParseKey(f.GetSessionKey()); err != nil {
		return fmt.Errorf("fire job %s: %w", f.GetJobId(), err)
	}
	if rt.placement == nil {
		return rt.route(rt.ctx, f.GetSessionKey(), f) // a send to the router
	}
	// In cluster mode reaching the session can take until a dead member's
	// lease runs out. The run is claimed already (a one-shot job is gone
	// from the store), so routing goes on in the background until the
	// session holds it, not for a bounded time, and other due jobs do not
	// wait behind it.
	go func() {
		if err := rt.route(rt.ctx, f.GetSessionKey(), f); err != nil && rt.ctx.Err() == nil {
			rt.log.Error("fire job: route to its session", "session", f.GetSessionKey(), "job", f.GetJobId(), "err", err)
		}
	}()
	return nil
}
