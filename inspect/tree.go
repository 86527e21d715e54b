package inspect

import (
	"hash/maphash"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
)

// shardCount spreads the registry over this many locks, so actors starting
// and stopping on different goroutines rarely wait for each other.
const shardCount = 64

// shrinkFloor is the size below which a shard's map is never rebuilt: Go
// maps do not give memory back when entries are deleted, so a shard that
// once held many sessions is rebuilt when it falls to a quarter of its peak.
const shrinkFloor = 256

// Tree is the live registry of instrumented actors. It is safe for
// concurrent use; registering and removing an actor costs one map operation
// under one of 64 locks, and a message nothing but a type switch.
type Tree struct {
	seed   maphash.Seed
	shards [shardCount]shard
	now    func() time.Time

	kindsMu sync.RWMutex
	kinds   map[string]*kindStats
}

// shard holds the actors of the sessions whose key hashes to it, grouped by
// session key ("" groups the actors bound to no session).
type shard struct {
	mu     sync.RWMutex
	groups map[string]*group
	peak   int
	_      [40]byte // keep neighbouring locks off one cache line
}

// group is the live actors bound to one session (or to none).
type group struct {
	recs []*record
}

// NewTree returns an empty registry.
func NewTree() *Tree {
	t := &Tree{seed: maphash.MakeSeed(), now: time.Now, kinds: make(map[string]*kindStats)}
	for i := range t.shards {
		t.shards[i].groups = make(map[string]*group)
	}
	return t
}

// Props returns a copy of p whose actors are registered in the tree as kind
// (p is shared and is not changed: Clone, never Configure). Use PropsOptions to
// combine this with other instrumentation in one Clone.
func (t *Tree) Props(kind string, p *actor.Props) *actor.Props {
	return p.Clone(t.PropsOptions(kind)...)
}

// PropsOptions returns the props options that register an actor as kind:
// protoactor's unbounded mailbox, wrapped to link the actor to its record
// (whose depth it reads), and a receiver middleware that follows the
// actor's lifecycle. The mailbox replaces any mailbox set on the
// props (hermesd's actors all use the default unbounded one). The slice is
// built once per kind and shared: do not modify it.
func (t *Tree) PropsOptions(kind string) []actor.PropsOption {
	return t.kind(kind).opts
}

func (t *Tree) kind(name string) *kindStats {
	t.kindsMu.RLock()
	k := t.kinds[name]
	t.kindsMu.RUnlock()
	if k != nil {
		return k
	}
	t.kindsMu.Lock()
	defer t.kindsMu.Unlock()
	if k = t.kinds[name]; k != nil {
		return k
	}
	k = &kindStats{name: name}
	k.opts = []actor.PropsOption{
		actor.WithMailbox(func() actor.Mailbox { return newMailbox(k) }),
		actor.WithReceiverMiddleware(t.follow(k)),
	}
	t.kinds[name] = k
	return k
}

// follow is the receiver middleware of kind k: it registers the actor on
// Started, marks it on Stopping and Restarting, and removes it on Stopped.
// Every other message passes with one type switch.
func (t *Tree) follow(k *kindStats) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			switch env.Message.(type) {
			case *actor.Started:
				t.started(c, k)
			case *actor.Stopping:
				if r := recordOf(c); r != nil {
					r.state.Store(stateStopping)
				}
			case *actor.Restarting:
				if r := recordOf(c); r != nil {
					r.state.Store(stateRestarting)
				}
			case *actor.Stopped:
				if r := recordOf(c); r != nil && r.registered {
					r.registered = false
					t.remove(r)
				}
			}
			next(c, env)
		}
	}
}

// started registers the actor on its first Started; a Started after a
// restart only marks it running again.
func (t *Tree) started(c actor.ReceiverContext, k *kindStats) {
	r := recordOf(c)
	if r == nil {
		// The props' mailbox was replaced after ours: show the actor all
		// the same, without a depth.
		r = &record{kind: k}
		c.Set(r)
	}
	r.state.Store(stateRunning)
	if r.registered {
		return
	}
	r.id = c.Self().GetId()
	r.parent = c.Parent().GetId()
	if s, ok := identity.Of(c); ok {
		r.session = s.Key()
	}
	r.started = t.now().UnixNano()
	r.registered = true
	t.add(r)
}

func (t *Tree) shardOf(session string) *shard {
	return &t.shards[maphash.String(t.seed, session)%shardCount]
}

func (t *Tree) add(r *record) {
	s := t.shardOf(r.session)
	s.mu.Lock()
	g := s.groups[r.session]
	if g == nil {
		g = &group{}
		s.groups[r.session] = g
		if n := len(s.groups); n > s.peak {
			s.peak = n
		}
	}
	r.idx = len(g.recs)
	g.recs = append(g.recs, r)
	s.mu.Unlock()
	r.kind.live.Add(1)
}

func (t *Tree) remove(r *record) {
	s := t.shardOf(r.session)
	s.mu.Lock()
	if g := s.groups[r.session]; g != nil && r.idx < len(g.recs) && g.recs[r.idx] == r {
		last := len(g.recs) - 1
		g.recs[r.idx] = g.recs[last]
		g.recs[r.idx].idx = r.idx
		g.recs[last] = nil
		g.recs = g.recs[:last]
		if len(g.recs) == 0 {
			delete(s.groups, r.session)
			s.maybeShrink()
		}
	}
	s.mu.Unlock()
	r.kind.live.Add(-1)
}

// maybeShrink rebuilds the shard's map once it holds a quarter of its peak,
// so memory follows the live sessions down. The caller holds s.mu.
func (s *shard) maybeShrink() {
	if s.peak < shrinkFloor || len(s.groups) > s.peak/4 {
		return
	}
	m := make(map[string]*group, len(s.groups))
	for k, g := range s.groups {
		m[k] = g
	}
	s.groups = m
	s.peak = len(m)
}

// KindCount is the number of live actors of one kind and the user messages
// waiting in their mailboxes.
type KindCount struct {
	Kind    string `json:"kind"`
	Live    int64  `json:"live"`
	Mailbox int64  `json:"mailbox"`
}

// Counts returns live actors and queued messages per kind, sorted by kind,
// including kinds with none live. It visits every actor once (about a
// millisecond for 100,000); Live alone is kept as a counter (see Live).
func (t *Tree) Counts() []KindCount {
	depth := make(map[*kindStats]int64)
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		for _, g := range s.groups {
			for _, r := range g.recs {
				depth[r.kind] += r.depth()
			}
		}
		s.mu.RUnlock()
	}
	t.kindsMu.RLock()
	out := make([]KindCount, 0, len(t.kinds))
	for _, k := range t.kinds {
		out = append(out, KindCount{Kind: k.name, Live: k.live.Load(), Mailbox: depth[k]})
	}
	t.kindsMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Live returns how many actors of kind are registered now, without visiting
// them.
func (t *Tree) Live(kind string) int64 {
	t.kindsMu.RLock()
	k := t.kinds[kind]
	t.kindsMu.RUnlock()
	if k == nil {
		return 0
	}
	return k.live.Load()
}

// Len returns how many actors are registered.
func (t *Tree) Len() int64 {
	var n int64
	t.kindsMu.RLock()
	for _, k := range t.kinds {
		n += k.live.Load()
	}
	t.kindsMu.RUnlock()
	return n
}

// EachKind calls yield with every kind's live actors and queued messages:
// the shape the metrics' gauges read once per scrape.
func (t *Tree) EachKind(yield func(kind string, live, mailbox int64)) {
	for _, c := range t.Counts() {
		yield(c.Kind, c.Live, c.Mailbox)
	}
}
