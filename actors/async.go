package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// outcome carries the result of blocking work back to the actor that asked.
type outcome struct {
	val any
	err error
}

// await runs work on its own goroutine and continues with then on the actor's
// goroutine, with the actor's current message restored (ReenterAfter). The
// actor keeps handling other messages meanwhile: this is how actors that must
// never block (session, turn) wait on I/O. The goroutine's lifetime is bounded
// by work, which must honour its own context with a deadline of at most
// timeout; the future waits a little longer, because a future that times out
// just as its answer arrives is a data race inside the pinned protoactor (its
// futureProcess writes the result without the lock).
func await(c actor.Context, timeout time.Duration, work func() (any, error), then func(val any, err error)) {
	f := actor.NewFuture(c.ActorSystem(), timeout+5*time.Second)
	root := c.ActorSystem().Root
	go func() {
		v, err := work()
		root.Send(f.PID(), outcome{v, err})
	}()
	c.ReenterAfter(f, func(res any, err error) {
		if err != nil {
			then(nil, err)
			return
		}
		o := res.(outcome)
		then(o.val, o.err)
	})
}
