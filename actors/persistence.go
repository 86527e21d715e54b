package actors

import (
	"context"
	"errors"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// ParseBusyPolicy validates a policy name as typed after /busy.
func ParseBusyPolicy(s string) (messages.BusyPolicy, bool) {
	p := messages.BusyPolicy(s)
	return p, p.Valid()
}

// SessionState is what a session loads in its Started: settings, the current
// conversation and what the session still owes.
type SessionState struct {
	Voice messages.VoiceMode
	Busy  messages.BusyPolicy
	// Conversation is the current conversation's number (/new starts the
	// next); what a turn adds is written to the conversation it started in.
	Conversation int64
	// History is the conversation's recent messages, without Pending.
	History []model.Message
	// Pending are the accepted messages with no outcome yet, in arrival
	// order, each with its whole envelope and InboxSeq: messages that may
	// still be on their way to the session, or that a crash, a timeout or a
	// passivation left unanswered. The session answers each exactly once.
	Pending []*messages.UserMessage
	// LastAccepted is the highest inbox seq of the session when it was read,
	// before Pending: a message routed to the session with a seq up to it
	// is among Pending or was settled already, and starts nothing.
	LastAccepted uint64
	// Unsent are replies queued in the outbox that the platform has not
	// confirmed, in order; the session sends them before anything else.
	Unsent []*messages.Delivery
	// Model is the catalog model the chat chose with /model ("" for the
	// default); a Persistence that keeps it implements ModelSaver.
	Model string
	// Summary stands for the conversation's messages before History, once
	// it was compressed (compress.go); "" when it was not.
	Summary string
}

// Outcome is how a session settled accepted messages.
type Outcome string

// Outcomes; every accepted message gets exactly one.
const (
	Answered  Outcome = "answered"
	Failed    Outcome = "error"
	Cancelled Outcome = "cancelled"
)

// Settlement is what a session records when work ends, in one write: the
// outcome of the inputs (by InboxSeq), what the conversation gained, and the
// replies to send. Persistence numbers the replies (Seq, IdempotencyKey).
type Settlement struct {
	Conversation int64
	Inputs       []uint64
	Outcome      Outcome
	History      []model.Message
	Replies      []*messages.Delivery
	// Fence, when not zero, makes the write conditional on the session's
	// lease (cluster mode): a stale fence fails it with ErrFenced and
	// nothing of it is written.
	Fence Fence
}

// ErrDuplicate is returned by Persistence.Accept for a message the session
// already stored (same platform message id): the platform sent it again,
// typically after a crash between accepting and acknowledging it.
var ErrDuplicate = errors.New("message already stored")

// Persistence is what the actor tree needs from storage. The SQLite store
// implements it (see daemon/persist.go); benchmarks and tests that measure
// the runtime alone use Memory.
type Persistence interface {
	// LoadSession returns the session's settings, up to limit recent
	// messages of its current conversation and what it owes.
	LoadSession(ctx context.Context, s messages.Session, limit int) (SessionState, error)
	// Accept persists an inbound message with its whole envelope as pending
	// work, before it is acknowledged, and returns its inbox seq. A message
	// whose id the session already has returns ErrDuplicate.
	Accept(ctx context.Context, s messages.Session, m *messages.UserMessage) (uint64, error)
	// Settle writes st and calls done once it committed (or failed), in
	// call order; it does not block, and done must not block either.
	Settle(s messages.Session, st Settlement, done func(error))
	// NewConversation starts a fresh conversation (/new) and returns its
	// number. Pending inputs stay pending: the session settles them.
	NewConversation(ctx context.Context, s messages.Session) (int64, error)
	// SaveSettings persists voice mode and busy policy.
	SaveSettings(ctx context.Context, s messages.Session, voice messages.VoiceMode, busy messages.BusyPolicy) error
	// MarkDelivered records that the platform confirmed reply r.Seq.
	MarkDelivered(ctx context.Context, s messages.Session, r *messages.DeliveryReceipt) error
	// Delivered reports whether reply seq of s is recorded as confirmed.
	Delivered(ctx context.Context, s messages.Session, seq uint64) (bool, error)
	// Owed returns the keys of sessions with pending inputs or unconfirmed
	// replies, oldest first: the runtime activates them at start.
	Owed(ctx context.Context) ([]string, error)
}
