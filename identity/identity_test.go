package identity_test

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/ctxext"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
)

func quietSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// seen is what a probe observed: the binding of the actor (Of) and the
// identity on the envelope of a message it received (FromEnvelope).
type seen struct {
	who   string
	bound messages.Session
	env   messages.Session
	ok    bool
}

type report struct{ who string }

// probe is a shared actor: it records the envelope identity of each report.
func probe(out chan<- seen) *actor.Props {
	return actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(*report); ok {
			s, ok := identity.FromEnvelope(c)
			out <- seen{who: r.who, env: s, ok: ok}
		}
	})
}

// chain spawns a child (depth-1 more levels) from Started, each a plain
// Props, reporting its binding and sending a report to the probe from
// Started.
func chain(depth int, name string, p *actor.PID, out chan<- seen) *actor.Props {
	return actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*actor.Started); ok {
			s, ok := identity.Of(c)
			out <- seen{who: name + "/bound", bound: s, ok: ok}
			c.Send(p, &report{who: name})
			if depth > 1 {
				c.Spawn(chain(depth-1, name+"+", p, out))
			}
		}
	})
}

func collect(t *testing.T, ch <-chan seen, n int) []seen {
	t.Helper()
	var out []seen
	deadline := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case s := <-ch:
			out = append(out, s)
		case <-deadline:
			t.Fatalf("got %d of %d observations: %+v", len(out), n, out)
		}
	}
	return out
}

func TestIdentity_InheritedThreeLevelsDeepAndFromStarted(t *testing.T) {
	sys := quietSystem(t)
	out := make(chan seen, 64)
	p := sys.Root.Spawn(probe(out))
	s := messages.MustSession(messages.Telegram, messages.DM, "42", "", "")
	// The root of the subtree is bound; its child, grandchild and
	// great-grandchild are spawned with plain Props.
	if _, err := sys.Root.SpawnNamed(identity.Bind(s, chain(4, "L0", p, out)), "root"); err != nil {
		t.Fatal(err)
	}
	for _, o := range collect(t, out, 8) {
		if !o.ok {
			t.Fatalf("%s: no identity", o.who)
		}
		got := o.bound
		if got == (messages.Session{}) {
			got = o.env
		}
		if got != s {
			t.Fatalf("%s: identity %v, want %v", o.who, got, s)
		}
	}
}

func TestIdentity_ByNameBindsSessionActorFromItsKey(t *testing.T) {
	sys := quietSystem(t)
	out := make(chan seen, 8)
	p := sys.Root.Spawn(probe(out))
	s := messages.MustSession(messages.Discord, messages.Thread, "555", "777", "")
	if _, err := sys.Root.SpawnNamed(identity.ByName(chain(2, "S", p, out)), s.Key()); err != nil {
		t.Fatal(err)
	}
	for _, o := range collect(t, out, 4) {
		if !o.ok || (o.bound != s && o.env != s) {
			t.Fatalf("%s: identity %+v, want %v", o.who, o, s)
		}
	}
	// A name that is not a key binds nothing.
	if _, err := sys.Root.SpawnNamed(identity.ByName(chain(1, "X", p, out)), "not-a-key"); err != nil {
		t.Fatal(err)
	}
	for _, o := range collect(t, out, 2) {
		if o.ok {
			t.Fatalf("%s: bound to %v from an invalid name", o.who, o.bound)
		}
	}
}

type boom struct{}

func TestIdentity_SurvivesChildRestart(t *testing.T) {
	sys := quietSystem(t)
	out := make(chan seen, 16)
	p := sys.Root.Spawn(probe(out))
	s := messages.MustSession(messages.Web, messages.DM, "alice", "", "")
	var mu sync.Mutex
	starts := 0
	child := actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case *actor.Started:
			mu.Lock()
			starts++
			mu.Unlock()
			got, ok := identity.Of(c)
			out <- seen{who: "child/bound", bound: got, ok: ok}
			c.Send(p, &report{who: "child"})
		case *boom:
			panic("boom")
		}
	})
	var childPID *actor.PID
	ready := make(chan struct{})
	parent := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*actor.Started); ok {
			childPID = c.Spawn(child)
			close(ready)
		}
	})
	sys.Root.Spawn(identity.Bind(s, parent))
	<-ready
	collect(t, out, 2)
	sys.Root.Send(childPID, &boom{})
	for _, o := range collect(t, out, 2) {
		if !o.ok || (o.bound != s && o.env != s) {
			t.Fatalf("after restart %s: %+v, want %v", o.who, o, s)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if starts != 2 {
		t.Fatalf("child started %d times, want 2 (a restart)", starts)
	}
}

type scoped struct{}

func (*scoped) SessionScoped() {}

func TestGuard_RefusesScopedRequestWithoutIdentity(t *testing.T) {
	sys := quietSystem(t)
	g := &identity.Guard{}
	var refusedTypes []string
	var mu sync.Mutex
	g.OnRefuse = func(typ string) { mu.Lock(); refusedTypes = append(refusedTypes, typ); mu.Unlock() }
	served := make(chan messages.Session, 4)
	shared := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*scoped); ok {
			s, _ := identity.FromEnvelope(c)
			served <- s
			c.Respond("ok")
		}
	}, actor.WithReceiverMiddleware(g.Middleware())))

	// From the root: no identity, refused with an error, never served.
	res, err := sys.Root.RequestFuture(shared, &scoped{}, 2*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, ok := res.(*identity.Refused)
	if !ok || !errors.Is(r.Err, identity.ErrNoIdentity) {
		t.Fatalf("reply %#v, want Refused(ErrNoIdentity)", res)
	}
	if g.Refusals() != 1 || len(refusedTypes) != 1 {
		t.Fatalf("refusals = %d (%v), want 1", g.Refusals(), refusedTypes)
	}
	select {
	case s := <-served:
		t.Fatalf("request without identity was served as %v", s)
	default:
	}

	// From a bound actor: served with its identity.
	s := messages.MustSession(messages.Telegram, messages.Group, "-1", "", "9")
	reply := make(chan any, 1)
	sys.Root.Spawn(identity.Bind(s, actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*actor.Started); ok {
			f := c.RequestFuture(shared, &scoped{}, 2*time.Second)
			c.ReenterAfter(f, func(res any, err error) { reply <- res })
		}
	})))
	if got := <-served; got != s {
		t.Fatalf("served as %v, want %v", got, s)
	}
	if got := <-reply; got != "ok" {
		t.Fatalf("reply %v", got)
	}
	if g.Refusals() != 1 {
		t.Fatalf("refusals = %d after a valid request", g.Refusals())
	}
}

// TestForward_KeepsTheSendersIdentity guards the rule for shared actors that
// pass work on: Forward keeps the original envelope (and so the identity of
// the session that asked), it never becomes the relay's own or a default.
func TestForward_KeepsTheSendersIdentity(t *testing.T) {
	sys := quietSystem(t)
	out := make(chan seen, 4)
	final := sys.Root.Spawn(probe(out))
	relay := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*report); ok {
			c.Forward(final)
		}
	}))
	a := messages.MustSession(messages.Telegram, messages.DM, "1", "", "")
	b := messages.MustSession(messages.Discord, messages.DM, "2", "", "")
	for _, s := range []messages.Session{a, b} {
		who := s.Key()
		sys.Root.Spawn(identity.Bind(s, actor.PropsFromFunc(func(c actor.Context) {
			if _, ok := c.Message().(*actor.Started); ok {
				c.Send(relay, &report{who: who})
			}
		})))
	}
	for _, o := range collect(t, out, 2) {
		if !o.ok || o.env.Key() != o.who {
			t.Fatalf("forwarded report from %s arrived as %v", o.who, o.env)
		}
	}
}

func TestFromHeader_NilSafe(t *testing.T) {
	if _, ok := identity.FromHeader(nil); ok {
		t.Fatal("nil header gave an identity")
	}
	if _, ok := identity.FromHeader(actor.EmptyMessageHeader); ok {
		t.Fatal("empty header gave an identity")
	}
}

// keyExt stands in for the cluster identity: a context extension set in
// OnInit, which ByKey's keyOf reads in Started (as cluster grains do).
type keyExt struct{ key string }

var keyExtID = ctxext.NextContextExtensionID()

func (keyExt) ExtensionID() ctxext.ContextExtensionID { return keyExtID }

func TestIdentity_ByKeyBindsAGrainFromItsKeyInStarted(t *testing.T) {
	sys := quietSystem(t)
	out := make(chan seen, 8)
	p := sys.Root.Spawn(probe(out))
	keyOf := func(c actor.ReceiverContext) string {
		k, _ := c.Get(keyExtID).(keyExt)
		return k.key
	}
	s := messages.MustSession(messages.Telegram, messages.DM, "42", "", "")
	grain := func(key string) *actor.Props {
		// The key is set after ByKey's own options, like the cluster's OnInit.
		return identity.ByKey(chain(2, "G", p, out), keyOf).Clone(actor.WithOnInit(func(c actor.Context) { c.Set(keyExt{key}) }))
	}
	// Named like a grain: the name does not parse as a key.
	if _, err := sys.Root.SpawnNamed(grain(s.Key()), "partition-activator/"+s.Key()+"$1"); err != nil {
		t.Fatal(err)
	}
	for _, o := range collect(t, out, 4) {
		if !o.ok || (o.bound != s && o.env != s) {
			t.Fatalf("%s: identity %+v, want %v", o.who, o, s)
		}
	}
	if _, err := sys.Root.SpawnNamed(grain("nonsense"), "partition-activator/nonsense$2"); err != nil {
		t.Fatal(err)
	}
	for _, o := range collect(t, out, 2) {
		if o.ok {
			t.Fatalf("%s: bound to %v from an invalid key", o.who, o.bound)
		}
	}
}
