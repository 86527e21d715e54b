package inspect_test

import (
	"runtime"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/inspect"
)

// TestTree_MemoryDoesNotGrowWithActorsThatCameAndWent spawns and stops
// 100,000 instrumented actors, 1,000 at a time, as sessions and tool calls
// come and go in a long-running daemon: the registry ends empty and the
// heap ends where it started.
//
// protoactor's own process registry grows by about 12 MB over its first
// ~100,000 distinct actor ids and then stays flat (its maps keep their
// size), so it is warmed up first with as many uninstrumented actors: what
// is measured is hermesd's instrumentation alone.
func TestTree_MemoryDoesNotGrowWithActorsThatCameAndWent(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 100,000 actors")
	}
	const total, batch = 100_000, 1_000
	tree := inspect.NewTree()
	sys := quietSystem(t)
	bare := actor.PropsFromFunc(func(actor.Context) {})
	props := tree.Props("tool", bare)
	pids := make([]*actor.PID, batch)
	cycle := func(p *actor.Props) {
		for i := range pids {
			pids[i] = sys.Root.Spawn(p)
		}
		for _, pid := range pids {
			if err := sys.Root.StopFuture(pid).Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range total / batch {
		cycle(bare)
	}
	before := heap()

	for range total / batch {
		cycle(props)
	}
	if n := tree.Len(); n != 0 {
		t.Fatalf("%d actors still registered after all stopped", n)
	}
	if page := tree.Actors(inspect.Query{}); page.Total != 0 || page.Actors == nil || len(page.Actors) != 0 {
		t.Fatalf("registry not empty: %+v", page)
	}
	after := heap()
	// Leaking one record (about 150 bytes with its strings) per actor
	// would be 15 MB; allow well under a tenth of that for noise.
	if grew := int64(after) - int64(before); grew > 1<<20 {
		t.Fatalf("heap grew by %d bytes over %d spawned and stopped actors", grew, total)
	}
	t.Logf("heap before %d B, after %d B", before, after)
}

func heap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
