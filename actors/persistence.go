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

// SessionState is what a session loads in its Started: settings and the
// current conversation's recent history.
type SessionState struct {
	Voice messages.VoiceMode
	Busy  messages.BusyPolicy
	// History is the conversation up to its last answered message.
	History []model.Message
	// Pending are the user messages after the last answer, with their ids:
	// messages that were persisted at the edge and may still be on their way
	// to the session, or that a crash left unanswered. The session answers
	// each exactly once.
	Pending []*messages.UserMessage
}

// ErrDuplicate is returned by Persistence.AppendUser for a message the
// session already stored (same platform message id): the platform sent it
// again, typically after a crash between accepting and acknowledging it.
var ErrDuplicate = errors.New("message already stored")

// Persistence is what the actor tree needs from storage. The SQLite store
// implements it (see store.Actors); benchmarks and tests that measure the
// runtime alone use Memory.
type Persistence interface {
	// LoadSession returns the session's settings and up to limit recent
	// messages of its current conversation.
	LoadSession(ctx context.Context, s messages.Session, limit int) (SessionState, error)
	// AppendUser persists an inbound message before it is acknowledged. A
	// message whose id the session already has returns ErrDuplicate.
	AppendUser(ctx context.Context, s messages.Session, m *messages.UserMessage) error
	// AppendTurn persists the messages a finished turn produced.
	AppendTurn(ctx context.Context, s messages.Session, msgs []model.Message) error
	// NewConversation starts a fresh conversation (/new).
	NewConversation(ctx context.Context, s messages.Session) error
	// SaveSettings persists voice mode and busy policy.
	SaveSettings(ctx context.Context, s messages.Session, voice messages.VoiceMode, busy messages.BusyPolicy) error
	// RecordDelivery notes that a reply left for the platform.
	RecordDelivery(ctx context.Context, s messages.Session, r *messages.DeliveryReceipt) error
}
