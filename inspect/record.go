package inspect

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/ctxext"
)

// States an actor is shown in.
const (
	StateRunning    = "running"
	StateStopping   = "stopping"
	StateRestarting = "restarting"
)

const (
	stateRunning int32 = iota
	stateStopping
	stateRestarting
)

func stateName(s int32) string {
	switch s {
	case stateStopping:
		return StateStopping
	case stateRestarting:
		return StateRestarting
	}
	return StateRunning
}

// recordExtID is the context-extension slot that links an actor to its
// record. It is allocated once at package init and never changes: an index,
// not state (as identity's binding slot).
var recordExtID = ctxext.NextContextExtensionID()

// record is one actor in the tree. It is created with the actor's mailbox,
// whose own count of waiting user messages it reads; the actor's first
// Started fills it in and registers it, Stopped removes it.
type record struct {
	kind  *kindStats
	mb    actor.Mailbox
	state atomic.Int32

	// Written once, on the actor's goroutine, before the record is
	// published under its shard's lock; read-only afterwards.
	id, parent, session string
	started             int64 // unix nanoseconds

	// registered is touched only on the actor's own goroutine.
	registered bool

	// idx is the record's position in its group; guarded by the shard lock.
	idx int
}

// ExtensionID implements ctxext.ContextExtension: the record is stored in
// its actor's context so lifecycle messages can find it.
func (*record) ExtensionID() ctxext.ContextExtensionID { return recordExtID }

// depth returns the user messages waiting in the actor's mailbox (not the
// one being handled), from the mailbox's own atomic counter: exact, and
// free on the message path. A counter kept by a MailboxMiddleware would
// drift: MessageReceived is skipped for a message whose handler panics.
func (r *record) depth() int64 {
	if r.mb == nil {
		return 0
	}
	return int64(r.mb.UserMessageCount())
}

// mailbox is protoactor's unbounded mailbox, wrapped to link its actor's
// context to the actor's record. RegisterHandlers is called by the spawner
// with the actor's context after every OnInit ran and before the actor
// handles anything, so the link exists for its first Started.
type mailbox struct {
	actor.Mailbox
	rec *record
}

func newMailbox(k *kindStats) actor.Mailbox {
	inner := actor.Unbounded()()
	return &mailbox{Mailbox: inner, rec: &record{kind: k, mb: inner}}
}

// RegisterHandlers stores the record in the actor's context, then hands
// over to the real mailbox.
func (m *mailbox) RegisterHandlers(inv actor.MessageInvoker, d actor.Dispatcher) {
	if ec, ok := inv.(actor.ExtensionContext); ok {
		ec.Set(m.rec)
	}
	m.Mailbox.RegisterHandlers(inv, d)
}

// recordOf returns the record linked to an actor's context, or nil.
func recordOf(c actor.ExtensionContext) (r *record) {
	// ctxext.ContextExtensions.Get indexes a slice without a bounds check
	// when nothing was ever set: treat that as "no record".
	defer func() {
		if recover() != nil {
			r = nil
		}
	}()
	r, _ = c.Get(recordExtID).(*record)
	return r
}

// kindStats is the tree's view of one actor kind.
type kindStats struct {
	name string
	live atomic.Int64
	// opts are the props options that instrument this kind, built once.
	opts []actor.PropsOption
}
