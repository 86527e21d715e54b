package inspect_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/inspect"
)

func quietSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// family is a session actor that spawns a turn on "turn", whose Started
// spawns a tool; the turn blocks in Stopping until release is closed.
type family struct {
	tree    *inspect.Tree
	release chan struct{}
}

func (f family) session() *actor.Props {
	tool := f.tree.Props("tool", actor.PropsFromFunc(func(actor.Context) {}))
	turn := f.tree.Props("turn", actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case *actor.Started:
			c.Spawn(tool)
		case *actor.Stopping:
			<-f.release
		}
	}))
	return f.tree.Props("session", identity.ByName(actor.PropsFromFunc(func(c actor.Context) {
		if c.Message() == "turn" {
			c.Spawn(turn)
		}
	})))
}

func TestTree_ShowsASessionsTurnAndToolAndForgetsThemWhenTheyStop(t *testing.T) {
	tree := inspect.NewTree()
	sys := quietSystem(t)
	f := family{tree: tree, release: make(chan struct{})}
	const key = "web:dm:alice"
	sess, err := sys.Root.SpawnNamed(f.session(), key)
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(sess, "turn")
	eventually(t, "session, turn and tool registered", func() bool { return tree.Actors(inspect.Query{Session: key}).Total == 3 })

	page := tree.Actors(inspect.Query{Kind: "session", Subtree: true})
	if page.Total != 1 || len(page.Actors) != 1 {
		t.Fatalf("sessions: %+v", page)
	}
	s := page.Actors[0]
	if s.Session != key || s.ID != key || !s.Busy || s.Descendants != 2 || s.State != inspect.StateRunning {
		t.Fatalf("session entry %+v: want %s, busy, 2 descendants, running", s, key)
	}
	if len(s.Children) != 1 || s.Children[0].Kind != "turn" || s.Children[0].Parent != key {
		t.Fatalf("session children %+v: want one turn", s.Children)
	}
	turn := s.Children[0]
	if len(turn.Children) != 1 || turn.Children[0].Kind != "tool" || turn.Children[0].Parent != turn.ID {
		t.Fatalf("turn children %+v: want one tool under the turn", turn.Children)
	}
	// Every descendant is shown under the session it is bound to.
	for _, a := range tree.Actors(inspect.Query{Session: key}).Actors {
		if a.Session != key {
			t.Errorf("%s (%s) bound to %q, want %q", a.ID, a.Kind, a.Session, key)
		}
	}

	// A stopping turn is shown as such, then forgotten with its tool.
	turnPID := actor.NewPID(sys.Address(), turn.ID)
	stopped := sys.Root.StopFuture(turnPID)
	eventually(t, "turn shown stopping", func() bool {
		for _, a := range tree.Actors(inspect.Query{Session: key, Kind: "turn"}).Actors {
			if a.State == inspect.StateStopping {
				return true
			}
		}
		return false
	})
	close(f.release)
	if err := stopped.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := tree.Actors(inspect.Query{Session: key}).Total; n != 1 {
		t.Fatalf("%d actors left in the session after its turn stopped, want 1", n)
	}
	if s := tree.Actors(inspect.Query{Kind: "session"}).Actors[0]; s.Busy || s.Descendants != 0 {
		t.Fatalf("session after the turn: %+v, want idle", s)
	}
	if err := sys.Root.StopFuture(sess).Wait(); err != nil {
		t.Fatal(err)
	}
	if n := tree.Len(); n != 0 {
		t.Fatalf("%d actors registered after everything stopped", n)
	}
}

func TestTree_ShowsMailboxDepthAndSurvivesRestarts(t *testing.T) {
	tree := inspect.NewTree()
	sys := quietSystem(t)
	pid := sys.Root.Spawn(tree.Props("outbox", actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case chan struct{}:
			<-m
		case string:
			if m == "panic" {
				panic("outbox told to panic")
			}
		}
	})))
	eventually(t, "outbox registered", func() bool { return tree.Live("outbox") == 1 })

	block := make(chan struct{})
	sys.Root.Send(pid, block)
	for range 3 {
		sys.Root.Send(pid, "waiting")
	}
	depth := func() int64 {
		page := tree.Actors(inspect.Query{Shared: true, Kind: "outbox"})
		if len(page.Actors) != 1 {
			return -1
		}
		return page.Actors[0].Mailbox
	}
	eventually(t, "3 waiting messages shown", func() bool { return depth() == 3 })
	close(block)
	eventually(t, "mailbox drained", func() bool { return depth() == 0 })

	// A restart is the same actor: still registered once, running again.
	sys.Root.Send(pid, "panic")
	sys.Root.Send(pid, "after")
	eventually(t, "restarted outbox drained", func() bool { return depth() == 0 })
	page := tree.Actors(inspect.Query{Shared: true})
	if page.Total != 1 || page.Actors[0].State != inspect.StateRunning {
		t.Fatalf("after a restart: %+v", page)
	}
	if c := tree.Counts(); len(c) != 1 || c[0] != (inspect.KindCount{Kind: "outbox", Live: 1}) {
		t.Fatalf("counts %+v", c)
	}
}
