// Package cluster runs hermesd's sessions as protoactor cluster grains:
// every member runs the same daemon, a session is a grain of kind "session"
// addressed by its session key, and disthash (rendezvous hashing over the
// members) decides which member activates it. Turns, tools and background
// work stay the session's local children on that member.
//
// The pinned protoactor cluster has bugs that shape this package (see
// docs/architecture.md, "Cluster mode"): requests always carry WithTimeout
// and WithContext and are retried here with hermesd's own backoff (the
// library's backoff is in nanoseconds); a grain binds its identity from its
// cluster identity in Started (its PID name is not its key); only
// messages/hermes.proto types cross members.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/retry"
)

// Kind is the cluster kind of a session grain.
const Kind = "session"

// Config is one member's cluster settings.
type Config struct {
	// Name is the cluster's name; members with another name do not join.
	Name string
	// Bind is the host:port of this member's remote (gRPC) endpoint; port 0
	// picks a free one. Advertise, if set, is the host other members dial.
	Bind, Advertise string
	// HealthPort is this member's automanaged health port (GET /_health);
	// Members are every member's host:healthport, this one included.
	HealthPort int
	Members    []string
	// RequestTimeout bounds one attempt to reach a session; Deliver retries
	// until its context ends.
	RequestTimeout time.Duration
	// Etcd, when its Endpoints are set, makes the members find each
	// other through etcd (protoactor's etcd provider, etcd.go) instead of
	// the automanaged provider's HealthPort and Members.
	Etcd Etcd
	// Provider replaces the automanaged provider (tests: the in-memory
	// provider of one process).
	Provider protocluster.ClusterProvider
}

// Placement is a member of the cluster; it implements actors.Placement.
type Placement struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex
	c  *protocluster.Cluster
	// rdv is disthash's placement over the members this member sees, kept
	// here (the library's own is not safe to read from outside); nil until
	// the first topology.
	rdv *protocluster.Rendezvous
	// provider names the membership provider for logs and status.
	provider string
	// lost receives why this member cannot stay in the cluster (Lost).
	lost chan error
	// joined is set once a topology included this member.
	joined bool
	// stopReconcile ends the etcd provider's etcdReconciler and waits for
	// it; nil with other providers.
	stopReconcile func()
}

// New returns a member that joins when the runtime starts it.
func New(cfg Config, log *slog.Logger) (*Placement, error) {
	if cfg.Name == "" {
		cfg.Name = "hermesd"
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := "custom"
	switch {
	case cfg.Provider != nil:
	case len(cfg.Etcd.Endpoints) > 0:
		ep, err := newEtcdProvider(cfg.Etcd, cfg.Name, log)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		cfg.Provider, name = ep, "etcd"
	default:
		if cfg.HealthPort <= 0 || len(cfg.Members) == 0 {
			return nil, errors.New("cluster: the automanaged provider needs a health port and the member list")
		}
		cfg.Provider, name = automanaged.NewWithConfig(2*time.Second, cfg.HealthPort, cfg.Members...), "automanaged"
	}
	return &Placement{cfg: cfg, log: log, provider: name, lost: make(chan error, 1)}, nil
}

// Provider names how the members find each other: "automanaged", "etcd",
// or "custom" (Config.Provider).
func (p *Placement) Provider() string { return p.provider }

// Lost is sent why this member cannot stay in the cluster: the others
// dropped it and the pinned library will not take it back (its etcd lease
// lapsed; etcd.go). The member should leave and start afresh.
func (p *Placement) Lost() <-chan error { return p.lost }

// Bind returns session's Props bound, on Started, to the key its cluster
// identity spells (identity.ByKey).
func (p *Placement) Bind(session *actor.Props) *actor.Props {
	return identity.ByKey(session, grainKey)
}

// Start joins the cluster as a member that hosts sessions, with session
// (from Bind) as the Props of its grains.
func (p *Placement) Start(sys *actor.ActorSystem, session *actor.Props) error {
	host, portS, err := net.SplitHostPort(p.cfg.Bind)
	if err != nil {
		return fmt.Errorf("cluster bind address %q: %w", p.cfg.Bind, err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return fmt.Errorf("cluster bind port %q: %w", portS, err)
	}
	var ropts []remote.ConfigOption
	if p.cfg.Advertise != "" {
		ropts = append(ropts, remote.WithAdvertisedHost(p.cfg.Advertise))
	}
	cfg := protocluster.Configure(p.cfg.Name, p.cfg.Provider, disthash.New(), remote.Configure(host, port, ropts...),
		protocluster.WithKinds(protocluster.NewKind(Kind, session)),
		protocluster.WithRequestTimeout(p.cfg.RequestTimeout))
	c := protocluster.New(sys, cfg)
	sys.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*protocluster.ClusterTopology); ok {
			rdv := protocluster.NewRendezvous()
			rdv.UpdateMembers(t.Members)
			p.mu.Lock()
			p.rdv = rdv
			p.mu.Unlock()
			p.checkSelf(t, sys.Address())
		}
	})
	if err := startMember(c); err != nil {
		return err
	}
	p.mu.Lock()
	p.c = c
	p.mu.Unlock()
	if ep, ok := p.cfg.Provider.(*etcdProvider); ok {
		sees := func(addr string) bool { return slices.Contains(p.Members(), addr) }
		r, err := newEtcdReconciler(ep, sys.Address(), sees, c.Remote.BlockList().IsBlocked, p.log)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.run(ctx, time.Second)
		}()
		p.mu.Lock()
		p.stopReconcile = func() { cancel(); <-done }
		p.mu.Unlock()
	}
	if p.provider == "etcd" {
		p.log.Info("joined the cluster", "cluster", p.cfg.Name, "address", sys.Address(), "provider", p.provider,
			"etcd", p.cfg.Etcd.Endpoints, "member_ttl", etcdMemberTTL)
	} else {
		p.log.Info("joined the cluster", "cluster", p.cfg.Name, "address", sys.Address(), "provider", p.provider, "members", p.cfg.Members)
	}
	return nil
}

// startMember starts c as a member, turning the library's panic on a
// provider error (etcd unreachable, say) into an error.
func startMember(c *protocluster.Cluster) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: join: %v", r)
		}
	}()
	c.StartMember()
	return nil
}

// checkSelf reports through Lost when a topology from the etcd provider no
// longer holds this member at self after one did: its etcd lease lapsed,
// the others dropped it, and neither the provider nor the library will
// take it back (etcd.go).
func (p *Placement) checkSelf(t *protocluster.ClusterTopology, self string) {
	if p.provider != "etcd" {
		return
	}
	in := false
	for _, m := range t.Members {
		if m.Address() == self {
			in = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if in {
		p.joined = true
		return
	}
	if !p.joined {
		return
	}
	p.joined = false // reported once
	select {
	case p.lost <- fmt.Errorf("this member's etcd lease (%s) lapsed and the cluster dropped it: a pause, or etcd unreachable for longer; restart it as a fresh member", etcdMemberTTL):
	default:
	}
}

// Internal reports whether msg is the cluster's ClusterInit, which the
// library hands every grain right after Started, beneath every receiver
// middleware of ours (its own is added last, innermost), so only the actor
// can drop it.
func (p *Placement) Internal(msg any) bool {
	_, ok := msg.(*protocluster.ClusterInit)
	return ok
}

// grainKey reads a grain's session key from its cluster identity; "" when it
// has none (the actor then stays unbound and refuses to start).
func grainKey(c actor.ReceiverContext) (key string) {
	defer func() {
		if recover() != nil { // GetClusterIdentity panics on an actor that has none
			key = ""
		}
	}()
	if ci := protocluster.GetClusterIdentity(c); ci != nil && ci.Kind == Kind {
		return ci.Identity
	}
	return ""
}

// ErrNotStarted is returned by Deliver before Start.
var ErrNotStarted = errors.New("cluster: not started")

// Deliver sends msg to the session of key and waits for it to answer that
// it holds it. One attempt is one cluster request bounded by the request
// timeout (the library's retries are off: its backoff sleeps nanoseconds);
// a dead letter or a timeout drops the cached PID, so the next attempt
// looks the owner up again and may activate a fresh grain. An activation
// that cannot take the message (its lease is still held by a member that
// died) refuses it at once, and the next attempt follows the backoff.
func (p *Placement) Deliver(ctx context.Context, key string, msg proto.Message) error {
	p.mu.Lock()
	c := p.c
	p.mu.Unlock()
	if c == nil {
		return ErrNotStarted
	}
	// Capped low: while a dead member's leases run out, each attempt is
	// refused within a round trip, and the cap is how late after the
	// expiry its sessions answer again.
	b := retry.NewBackoff(20*time.Millisecond, 250*time.Millisecond)
	for attempt := 1; ; attempt++ {
		timeout := p.cfg.RequestTimeout
		if d, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(d))
		}
		if timeout <= 0 {
			return fmt.Errorf("deliver to %s: %w", key, ctx.Err())
		}
		err := p.attempt(ctx, c, key, msg, timeout)
		if err == nil {
			return nil
		}
		p.log.Debug("deliver to session: retrying", "session", key, "attempt", attempt, "err", err)
		if werr := b.Wait(ctx); werr != nil {
			return fmt.Errorf("deliver to %s after %d attempts: %w (last: %v)", key, attempt, werr, err)
		}
	}
}

// errRefused is an attempt the session's activation refused.
var errRefused = errors.New("refused by the activation: its lease is held elsewhere or lost")

// attempt is one cluster request of Deliver. It returns by timeout even
// when the library does not: disthash waits a fixed 5 s for an activation
// on a member that is gone but not yet out of the topology (protoactor's
// disthash manager.go:86, ignoring WithTimeout). The abandoned request
// ends on its own; the message it carries is routed again by the next
// attempt, and a session takes a routed message once (its inbox seq).
func (p *Placement) attempt(ctx context.Context, c *protocluster.Cluster, key string, msg proto.Message, timeout time.Duration) error {
	type result struct {
		res any
		err error
	}
	done := make(chan result, 1) // never blocks the abandoned request
	go func() {
		res, err := c.Request(key, Kind, msg,
			protocluster.WithTimeout(timeout),
			protocluster.WithContext(c.ActorSystem.Root),
			protocluster.WithRetryCount(1))
		done <- result{res, err}
	}()
	t := time.NewTimer(timeout + timeout/4) // the library's own timeout first, when it keeps it
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return r.err
		}
		switch res := r.res.(type) {
		case *messages.Routed:
			if res.GetSessionKey() != key {
				return fmt.Errorf("answered for %q", res.GetSessionKey())
			}
			if res.GetRefused() {
				return errRefused
			}
			return nil
		default:
			return fmt.Errorf("unexpected answer %T", r.res)
		}
	case <-t.C:
		return fmt.Errorf("no answer within %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Owns reports whether this member is where disthash places key, as this
// member sees the cluster now (true before it has seen a topology). A
// session held elsewhere than its key's owner, left behind by a change of
// members, gives its lease up so the owner can take it.
func (p *Placement) Owns(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rdv == nil || p.c == nil {
		return true
	}
	owner := p.rdv.GetByClusterIdentity(&protocluster.ClusterIdentity{Identity: key, Kind: Kind})
	return owner == "" || owner == p.c.ActorSystem.Address()
}

// Members returns the addresses of the members this one sees, itself
// included.
func (p *Placement) Members() []string {
	p.mu.Lock()
	c := p.c
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	var out []string
	for _, m := range c.MemberList.Members().Members() {
		out = append(out, m.Address())
	}
	return out
}

// Address is this member's remote address ("" before Start).
func (p *Placement) Address() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return ""
	}
	return p.c.ActorSystem.Address()
}

// Stop leaves the cluster gracefully: the provider deregisters this member
// and the others drop it from their topology.
func (p *Placement) Stop() {
	p.mu.Lock()
	c := p.c
	p.c = nil
	stopReconcile := p.stopReconcile
	p.stopReconcile = nil
	p.mu.Unlock()
	if stopReconcile != nil {
		stopReconcile()
	}
	if c != nil {
		c.Shutdown(true)
		p.log.Info("left the cluster")
	}
}

// WatchMembers calls f with the number of members after every topology
// change this member sees (the metrics' members gauge), until stop.
func (p *Placement) WatchMembers(f func(n int)) (stop func()) {
	p.mu.Lock()
	c := p.c
	p.mu.Unlock()
	if c == nil {
		return func() {}
	}
	sub := c.ActorSystem.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*protocluster.ClusterTopology); ok {
			f(len(t.Members))
		}
	})
	return func() { c.ActorSystem.EventStream.Unsubscribe(sub) }
}
