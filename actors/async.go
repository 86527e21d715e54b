package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// goSend runs work on its own goroutine and sends what it returns to the
// actor as a message. It is how actors that must never block (session,
// turn, tool, scheduler) wait on I/O: they keep handling other messages
// meanwhile, and the result arrives in their mailbox like any other. The
// goroutine's lifetime is bounded by work, which must honour its own
// context.
func goSend(c actor.Context, work func() any) {
	self, root := c.Self(), c.ActorSystem().Root
	go func() { root.Send(self, work()) }()
}

// every sends msg to pid after first and then every interval, until stop is
// called. It replaces protoactor's scheduler.SendRepeatedly, whose timer
// reads its cancel flag without synchronisation: stopping a ticker as it
// fires is a data race inside the pinned library.
func every(root *actor.RootContext, pid *actor.PID, first, interval time.Duration, msg any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTimer(first)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				root.Send(pid, msg)
				t.Reset(interval)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}
