package actors

import (
	"fmt"
	"runtime/debug"
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
//
// A panic in work is not lost with its goroutine (which would end the
// process) nor swallowed (the actor would wait for a result forever): it
// reaches the actor as workPanicked, which the actor panics with in
// Receive, so its supervisor handles it as a failure of the actor itself.
func goSend(c actor.Context, work func() any) {
	self, root := c.Self(), c.ActorSystem().Root
	go func() {
		var msg any
		func() {
			defer func() {
				if r := recover(); r != nil {
					msg = &workPanicked{value: r, stack: debug.Stack()}
				}
			}()
			msg = work()
		}()
		root.Send(self, msg)
	}()
}

// workPanicked reports a panic in goSend's work to its actor.
type workPanicked struct {
	value any
	stack []byte
}

// rethrowWork panics in Receive when the message is a workPanicked, so
// that the actor's supervisor sees the failure of its own work: a session
// restarts and reloads what it owes; a turn, tool or compressor is stopped
// and its parent answers for it.
func rethrowWork(msg any) {
	if p, ok := msg.(*workPanicked); ok {
		panic(fmt.Sprintf("work it waited for panicked: %v\n%s", p.value, p.stack))
	}
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
