package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

// outbox delivers replies for one platform. It is shared by every session of
// that platform and learns each delivery's destination from the envelope
// (stamped from the sending session's binding). Deliveries of one session
// leave in the order they arrived, one at a time; sessions never wait for
// each other, so a slow or rate-limited chat only delays itself.
type outbox struct {
	rt       *Runtime
	platform messages.Platform
	adapter  platforms.Adapter // nil: the platform is not running

	mu     sync.Mutex
	queues map[messages.Session][]outItem
}

type outItem struct {
	d       *messages.Delivery
	replyTo *actor.PID
	// resend marks a reply a session loaded as unconfirmed: it is sent only
	// if the store still says so when its turn comes (the first send may be
	// the one just ahead of it in this queue, from before a restart).
	resend bool
	// until, in cluster mode, is the sending activation's lease deadline
	// (unix nanoseconds, moved on by each renewal): past it, the reply is
	// not sent from here (lease.go).
	until *atomic.Int64
	// draft, if set, is a streamed draft to show instead of a delivery (d
	// is nil); a newer draft of the same reply replaces it while it waits.
	draft *messages.Draft
}

// resend is a Delivery a session loaded as unconfirmed at activation.
type resend struct{ d *messages.Delivery }

// SessionScoped marks resend as needing an identity.
func (*resend) SessionScoped() {}

func newOutbox(rt *Runtime, p messages.Platform, a platforms.Adapter) *outbox {
	return &outbox{rt: rt, platform: p, adapter: a, queues: make(map[messages.Session][]outItem)}
}

// Receive handles deliveries and chat actions.
func (o *outbox) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *messages.Delivery:
		s, err := o.rt.guard.Require(c)
		if err != nil {
			c.Respond(&messages.DeliveryReceipt{Seq: m.GetSeq(), Error: err.Error()})
			return
		}
		o.enqueue(s, outItem{d: m, replyTo: c.Sender()})
	case *resend:
		s, err := o.rt.guard.Require(c)
		if err != nil {
			c.Respond(&messages.DeliveryReceipt{Seq: m.d.GetSeq(), Error: err.Error()})
			return
		}
		o.enqueue(s, outItem{d: m.d, replyTo: c.Sender(), resend: true})
	case *leasedDelivery:
		s, err := o.rt.guard.Require(c)
		if err != nil {
			c.Respond(&messages.DeliveryReceipt{Seq: m.d.GetSeq(), Error: err.Error()})
			return
		}
		o.enqueue(s, outItem{d: m.d, replyTo: c.Sender(), resend: m.resend, until: m.until})
	case *messages.Draft:
		s, err := o.rt.guard.Require(c)
		if err != nil {
			return
		}
		o.enqueue(s, outItem{draft: m})
	case *indicate:
		s, err := o.rt.guard.Require(c)
		if err != nil {
			return
		}
		o.indicate(s, m.action)
	case *actor.Started, *actor.Stopping, *actor.Stopped:
	default:
		o.rt.log.Warn("outbox: unhandled message", "platform", o.platform, "type", typeName(m))
	}
}

func (o *outbox) enqueue(s messages.Session, it outItem) {
	o.mu.Lock()
	q, running := o.queues[s]
	if n := len(q); n > 0 && it.draft != nil && q[n-1].draft.GetId() == it.draft.GetId() && !q[n-1].draft.GetCancelled() {
		// Only the latest text of a reply is worth showing: a draft still
		// waiting behind a slow platform is replaced, not queued behind.
		q[n-1].draft = it.draft
	} else {
		o.queues[s] = append(q, it)
	}
	o.mu.Unlock()
	if !running {
		o.rt.sending.Add(1)
		go o.drain(s)
	}
}

// drain sends one session's deliveries in order until its queue is empty.
func (o *outbox) drain(s messages.Session) {
	defer o.rt.sending.Add(-1)
	for {
		o.mu.Lock()
		q := o.queues[s]
		if len(q) == 0 {
			delete(o.queues, s)
			o.mu.Unlock()
			return
		}
		it := q[0]
		o.queues[s] = q[1:]
		o.mu.Unlock()
		o.send(s, it)
	}
}

func (o *outbox) send(s messages.Session, it outItem) {
	if it.draft != nil {
		o.sendDraft(s, it.draft)
		return
	}
	if it.until != nil && time.Now().UnixNano() > it.until.Load() {
		// The activation that recorded this reply no longer holds the
		// session (this member was frozen, or cut off from the store): the
		// owner now sends what has no receipt; sending it here too would
		// be a stale duplicate.
		o.rt.log.Warn("reply not sent: its session's lease lapsed on this member", "session", s.Key(), "seq", it.d.GetSeq())
		if it.replyTo != nil {
			o.rt.sys.Root.Send(it.replyTo, &messages.DeliveryReceipt{Seq: it.d.GetSeq(), Error: "lease lapsed"})
		}
		return
	}
	if it.resend && o.confirmed(s, it.d.GetSeq()) {
		if it.replyTo != nil {
			o.rt.sys.Root.Send(it.replyTo, &messages.DeliveryReceipt{Seq: it.d.GetSeq()})
		}
		return
	}
	start := time.Now()
	var (
		r   *messages.DeliveryReceipt
		err error
	)
	if o.adapter == nil {
		err = fmt.Errorf("platform %s is not running", o.platform)
	} else {
		ctx, cancel := context.WithTimeout(o.rt.deliverCtx, o.rt.cfg.SendTimeout)
		r, err = o.adapter.Send(ctx, s, it.d)
		cancel()
	}
	kind := "text"
	if it.d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE {
		kind = "voice"
	}
	if err != nil {
		o.rt.log.Warn("delivery failed", "session", s.Key(), "seq", it.d.GetSeq(), "kind", kind, "err", err)
		o.rt.obs.Delivery(o.platform, kind, "error", time.Since(start))
		r = &messages.DeliveryReceipt{Seq: it.d.GetSeq(), Error: err.Error()}
	} else {
		if r == nil {
			r = &messages.DeliveryReceipt{}
		}
		r.Seq = it.d.GetSeq()
		shown := r.GetShownAs()
		if shown == "" {
			shown = kind
		}
		o.rt.obs.Delivery(o.platform, shown, "ok", time.Since(start))
	}
	// A reply interrupted by shutdown stays queued and is sent after the
	// restart; one the platform confirmed, or refused after the adapter's
	// retries, is done (resending a refused reply at every activation would
	// never end).
	if it.d.GetSeq() != 0 && o.rt.deliverCtx.Err() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), o.rt.cfg.StoreTimeout)
		if perr := o.rt.persist.MarkDelivered(ctx, s, r); perr != nil {
			o.rt.log.Error("record delivery", "session", s.Key(), "seq", it.d.GetSeq(), "err", perr)
		}
		cancel()
	}
	if it.replyTo != nil {
		o.rt.sys.Root.Send(it.replyTo, r)
	}
}

// confirmed reports whether reply seq of s is recorded as delivered; when
// the store cannot say, the reply is sent (a duplicate beats a loss).
func (o *outbox) confirmed(s messages.Session, seq uint64) bool {
	ctx, cancel := context.WithTimeout(o.rt.deliverCtx, o.rt.cfg.StoreTimeout)
	defer cancel()
	ok, err := o.rt.persist.Delivered(ctx, s, seq)
	if err != nil {
		o.rt.log.Warn("check a resent reply", "session", s.Key(), "seq", seq, "err", err)
	}
	return ok
}

// indicate shows a chat action without waiting for it; a platform that is
// slow to answer costs at most one goroutine per request, each bounded by
// a short timeout.
func (o *outbox) indicate(s messages.Session, action string) {
	ind, ok := o.adapter.(platforms.Indicator)
	if !ok {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(o.rt.deliverCtx, 5*time.Second)
		defer cancel()
		if err := ind.Indicate(ctx, s, platforms.ChatAction(action)); err != nil {
			o.rt.log.Debug("chat action failed", "session", s.Key(), "err", err)
		}
	}()
}

var _ identity.SessionScoped = (*indicate)(nil)

// sendDraft shows a streamed draft. A failure is logged and forgotten: the
// final reply that follows is what must arrive.
func (o *outbox) sendDraft(s messages.Session, d *messages.Draft) {
	dr, ok := o.adapter.(platforms.Drafter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(o.rt.deliverCtx, o.rt.cfg.SendTimeout)
	defer cancel()
	if err := dr.Draft(ctx, s, d); err != nil {
		o.rt.log.Debug("draft failed", "session", s.Key(), "draft", d.GetId(), "err", err)
	}
}
