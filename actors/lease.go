package actors

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
)

// Fencing (cluster mode). The pinned protoactor cluster can activate one
// session on two members at once after a member joins, so a session makes
// itself exclusive through the shared store: before it loads anything it
// claims the session's lease (owner, epoch, expiry), renews it on a ticker,
// and carries its Fence on its durable writes. A write under a stale fence
// fails with ErrFenced; a session that sees that, or whose renewal fails,
// stops at once and sends nothing more. A session that cannot claim stops
// without loading, unacknowledged: the caller retries, and reaches the
// owner (or this key again, once the lease is free).

// Fence is the lease holder a write is made for: the owner and the epoch
// its claim returned. The zero Fence is unfenced (single-node).
type Fence struct {
	Owner string
	Epoch uint64
}

// IsZero reports whether f is the zero (unfenced) Fence.
func (f Fence) IsZero() bool { return f == Fence{} }

// Errors of Leases and of fenced writes. Implementations wrap their own
// errors so that errors.Is finds these.
var (
	// ErrFenced: the write's fence no longer holds the session's lease.
	ErrFenced = errors.New("fenced: the session's lease is held by a newer owner")
	// ErrLeaseHeld: another owner holds the lease and it has not expired.
	ErrLeaseHeld = errors.New("lease held by another owner")
)

// Leases are the sessions' leases in the store the members share.
type Leases interface {
	// Claim claims key's lease for owner until ttl from now and returns its
	// epoch (raised on every change of owner); ErrLeaseHeld if another
	// owner holds it.
	Claim(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error)
	// Renew extends the lease f holds until ttl from now; ErrFenced if f no
	// longer holds it.
	Renew(ctx context.Context, key string, f Fence, ttl time.Duration) error
	// Release gives the lease up so that the next claim need not wait for
	// it to expire.
	Release(ctx context.Context, key string, f Fence) error
}

type fenceKey struct{}

// WithFence returns a context whose session writes are fenced by f (the
// persistence reads it with FenceOf).
func WithFence(ctx context.Context, f Fence) context.Context {
	if f.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence ctx carries, the zero Fence if none.
func FenceOf(ctx context.Context) Fence {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	return f
}

// leaseClaimed reports a claim, made off the session's goroutine.
type leaseClaimed struct {
	id    uint64
	fence Fence
	at    time.Time
	err   error
}

// renewLease is the session's renewal tick; leaseRenewed its result.
type renewLease struct{}

type leaseRenewed struct {
	fence Fence
	at    time.Time
	err   error
}

// leasedDelivery is a reply handed to the outbox by a fenced session: the
// outbox sends it only while until (the activation's lease deadline) has
// not passed.
type leasedDelivery struct {
	d      *messages.Delivery
	resend bool
	until  *atomic.Int64
}

// SessionScoped marks leasedDelivery as needing an identity.
func (*leasedDelivery) SessionScoped() {}

// leased reports whether this runtime fences its sessions.
func (rt *Runtime) leased() bool { return rt.leases != nil && rt.placement != nil }

// claim claims the session's lease before anything is loaded; the result
// arrives as leaseClaimed.
func (a *session) claim(c actor.Context) {
	leases, key, ttl, timeout := a.rt.leases, a.s.Key(), a.rt.cfg.LeaseTTL, a.rt.cfg.StoreTimeout
	a.loadID = a.rt.turnIDs.Add(1)
	id := a.loadID
	owner := fmt.Sprintf("%s/%d", a.rt.cfg.MemberID, id)
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(context.Background(), min(timeout, ttl))
		defer cancel()
		at := time.Now()
		epoch, err := leases.Claim(ctx, key, owner, ttl)
		return &leaseClaimed{id: id, fence: Fence{Owner: owner, Epoch: epoch}, at: at, err: err}
	})
}

// handleClaimed loads the state once the lease is ours, or stops.
func (a *session) handleClaimed(c actor.Context, m *leaseClaimed) {
	if m.id != a.loadID {
		return
	}
	if m.err != nil {
		a.logger().Info("session lease not claimed; stopping this activation", "err", m.err)
		a.rt.leaseLost(a.s, "claim")
		a.stopFenced(c)
		return
	}
	a.fence = m.fence
	a.claimedAt = time.Now()
	// Counted from before the claim was sent: the store's expiry is at
	// least that late.
	a.leaseUntil = m.at.Add(a.rt.cfg.LeaseTTL)
	a.leaseClock = new(atomic.Int64)
	a.leaseClock.Store(a.leaseUntil.UnixNano())
	iv := a.rt.cfg.LeaseTTL / 3
	a.stopRenew = every(c.ActorSystem().Root, c.Self(), iv, iv, &renewLease{})
	a.logger().Debug("session lease claimed", "epoch", m.fence.Epoch)
	a.rt.leaseClaimed(a.s, m.fence.Epoch)
	a.rt.grains.setEpoch(a.s.Key(), c.Self(), m.fence.Epoch)
	a.load(c)
}

func (a *session) handleRenew(c actor.Context) {
	if a.fence.IsZero() || a.fenced {
		return
	}
	if !a.holdsLease() {
		a.logger().Warn("session lease expired before it was renewed; stopping")
		a.rt.leaseLost(a.s, "expired")
		a.stopFenced(c)
		return
	}
	// protoactor can leave a session activated on a member that is no
	// longer its key's place (a requester with an old view activated it);
	// the owner's activations then cannot claim the lease, and the key's
	// messages go round. Seen twice in a row (a third of a TTL apart, so
	// not a view in mid-change), the session passivates and releases it.
	if a.rt.placement.Owns(a.s.Key()) {
		a.misplaced = 0
	} else if a.misplaced++; a.misplaced >= 2 {
		a.logger().Info("session held away from its key's member; passivating so the owner can take it")
		a.rt.leaseLost(a.s, "moved")
		a.leaseClock.Store(0) // what the outbox still holds is resent by the owner
		c.Stop(c.Self())
		return
	}
	leases, key, f, ttl, timeout := a.rt.leases, a.s.Key(), a.fence, a.rt.cfg.LeaseTTL, a.rt.cfg.StoreTimeout
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(context.Background(), min(timeout, ttl/3))
		defer cancel()
		at := time.Now()
		return &leaseRenewed{fence: f, at: at, err: leases.Renew(ctx, key, f, ttl)}
	})
}

func (a *session) handleRenewed(c actor.Context, m *leaseRenewed) {
	if m.fence != a.fence || a.fenced {
		return
	}
	if m.err != nil {
		// Fenced, or the store is unreachable: either way this member can
		// no longer show that it owns the session.
		a.logger().Warn("session lease not renewed; stopping", "err", m.err)
		a.rt.leaseLost(a.s, "renew")
		a.stopFenced(c)
		return
	}
	a.leaseUntil = m.at.Add(a.rt.cfg.LeaseTTL)
	a.leaseClock.Store(a.leaseUntil.UnixNano())
}

// holdsLease reports whether the lease is ours for a while yet: a session
// acknowledges a routed message only then, so a newer owner (which can only
// claim after the expiry) loads that message as pending.
func (a *session) holdsLease() bool {
	return !a.rt.leased() || !a.fenced && time.Until(a.leaseUntil) > a.rt.cfg.LeaseTTL/10
}

// stopFenced stops the session for good: nothing queued is sent, and the
// lease is not released (it is not ours, or may not be).
// fencedOff stops the session when err, the store's answer to one of its
// writes, says another member owns the session now (ErrFenced): that member
// sends what this one recorded before, and this one sends nothing more. It
// reports whether it stopped the session.
func (a *session) fencedOff(c actor.Context, err error) bool {
	if !errors.Is(err, ErrFenced) {
		return false
	}
	a.logger().Warn("session fenced off: another member owns it now; stopping", "err", err)
	a.rt.leaseLost(a.s, "fenced")
	a.stopFenced(c)
	return true
}

func (a *session) stopFenced(c actor.Context) {
	a.fenced = true
	if a.leaseClock != nil {
		a.leaseClock.Store(0) // the outbox drops what it still holds of ours
	}
	a.sendQ = nil
	// Whoever waits for this activation to take a message is told it did
	// not, and retries at once: the next activation (here once the lease
	// is free, or on the key's member) loads the message as pending.
	for _, pid := range a.acks {
		c.Send(pid, &messages.Routed{SessionKey: a.s.Key(), Refused: true})
	}
	a.acks = nil
	c.Stop(c.Self())
}

// releaseLease gives the lease up when the session stops normally, so the
// next activation (passivation, a member leaving) need not wait for expiry.
func (a *session) releaseLease() {
	if a.stopRenew != nil {
		a.stopRenew()
		a.stopRenew = nil
	}
	if a.fence.IsZero() || a.fenced {
		return
	}
	leases, key, f, timeout := a.rt.leases, a.s.Key(), a.fence, a.rt.cfg.StoreTimeout
	log := a.logger()
	a.fence = Fence{}
	a.rt.releasing.Add(1)
	go func() {
		defer a.rt.releasing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := leases.Release(ctx, key, f); err != nil {
			log.Debug("release session lease", "err", err)
		}
	}()
}

// leaseClaimed and leaseLost tell the observer, if it watches leases.
func (rt *Runtime) leaseClaimed(s messages.Session, epoch uint64) {
	if lo, ok := rt.obs.(LeaseObserver); ok {
		lo.LeaseClaimed(s, epoch)
	}
}

func (rt *Runtime) leaseLost(s messages.Session, why string) {
	if lo, ok := rt.obs.(LeaseObserver); ok {
		lo.LeaseLost(s, why)
	}
}
