package actors

import "github.com/asynkron/protoactor-go/actor"

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
