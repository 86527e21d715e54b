package metrics_test

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/inspect"
	"github.com/hermesd/hermesd/metrics"
)

func quietSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// instrumented wires metrics and the tree the way the daemon does: one
// Clone with both sets of options.
type instrumented struct {
	m    *metrics.Metrics
	tree *inspect.Tree
}

func newInstrumented(t testing.TB) instrumented {
	t.Helper()
	tree := inspect.NewTree()
	m, err := metrics.New(metrics.Options{Actors: tree.EachKind, Tools: []string{"current_time"},
		Store: func() metrics.StoreCounts { return metrics.StoreCounts{Transactions: 1, Writes: 1} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(t.Context()) })
	return instrumented{m, tree}
}

func (in instrumented) props(kind string, p *actor.Props) *actor.Props {
	return p.Clone(slices.Concat(in.tree.PropsOptions(kind), in.m.PropsOptions(kind))...)
}

// worker counts strings, panics on "panic", and blocks on a channel until
// it is closed.
func worker() *actor.Props {
	return actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case string:
			if m == "panic" {
				panic("worker told to panic")
			}
		case chan struct{}:
			<-m
		}
	})
}

func TestActorSeries_SpawnsReceivesFailuresStopsDeadLettersAndMailboxes(t *testing.T) {
	in := newInstrumented(t)
	sys := quietSystem(t)
	sub := in.m.WatchDeadLetters(sys)
	defer sub()
	props := in.props("worker", worker())
	w1, w2, w3 := sys.Root.Spawn(props), sys.Root.Spawn(props), sys.Root.Spawn(props)
	worker := map[string]string{"actortype": "worker", "address": "nonhost"}

	for range 10 {
		sys.Root.Send(w1, "hello")
	}
	eventually(t, "10 string receives", func() bool {
		n, _ := sum(scrape(t, in.m), "protoactor_actor_message_receive_duration_seconds_count",
			map[string]string{"actortype": "worker", "messagetype": "string"})
		return n == 10
	})

	// A panic is counted as a failure and a restart, not as a new spawn.
	sys.Root.Send(w2, "panic")
	eventually(t, "failure and restart counted", func() bool {
		ss := scrape(t, in.m)
		f, _ := sum(ss, "protoactor_actor_failure_count_total", worker)
		r, _ := sum(ss, "protoactor_actor_restarted_count_total", worker)
		return f == 1 && r == 1
	})
	if n, _ := sum(scrape(t, in.m), "protoactor_actor_spawn_count_total", worker); n != 3 {
		t.Fatalf("spawn count %v after a restart, want 3", n)
	}

	// Stopping counts under the stopped actor's own kind; a message to it
	// afterwards is a dead letter.
	if err := sys.Root.StopFuture(w3).Wait(); err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(w3, "anyone there?")
	eventually(t, "stop and dead letter counted", func() bool {
		ss := scrape(t, in.m)
		s, _ := sum(ss, "protoactor_actor_stopped_count_total", worker)
		d, _ := sum(ss, "protoactor_deadletter_count_total", map[string]string{"messagetype": "string"})
		return s == 1 && d >= 1
	})

	// The mailbox gauge sums the kind's waiting messages (not the one being
	// handled) and falls back to zero once they are handled.
	block := make(chan struct{})
	sys.Root.Send(w1, block)
	for range 4 {
		sys.Root.Send(w1, "queued")
	}
	eventually(t, "mailbox length 4", func() bool {
		n, _ := sum(scrape(t, in.m), "protoactor_actor_mailbox_length", worker)
		return n == 4
	})
	close(block)
	eventually(t, "mailbox drained", func() bool {
		n, _ := sum(scrape(t, in.m), "protoactor_actor_mailbox_length", worker)
		return n == 0
	})
	if n, _ := sum(scrape(t, in.m), "hermesd_actors_live", worker); n != 2 {
		t.Fatalf("live workers %v, want 2", n)
	}
}

func TestProps_ClonesAndLeavesSharedPropsAlone(t *testing.T) {
	in := newInstrumented(t)
	sys := quietSystem(t)
	base := worker()
	// Instrumenting the same shared Props many times must not stack
	// middleware on it (Configure would): each receive is timed once.
	for range 5 {
		_ = in.props("worker", base)
	}
	pid := sys.Root.Spawn(in.props("worker", base))
	sys.Root.Send(pid, "one")
	eventually(t, "one receive", func() bool {
		n, _ := sum(scrape(t, in.m), "protoactor_actor_message_receive_duration_seconds_count",
			map[string]string{"actortype": "worker", "messagetype": "string"})
		return n == 1
	})
	plain := sys.Root.Spawn(base)
	sys.Root.Send(plain, "two")
	_ = sys.Root.StopFuture(plain).Wait()
	if n, _ := sum(scrape(t, in.m), "protoactor_actor_spawn_count_total", nil); n != 1 {
		t.Fatalf("spawn count %v: the shared props were changed", n)
	}
}
