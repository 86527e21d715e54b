package actors

import (
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// Messages that never leave the process: the protocol between the router,
// sessions, turns and tools. Cross-node messages live in messages/.

// turnDone is sent by a turn to its session when it has finished and
// persisted what it produced.
type turnDone struct {
	turn     uint64
	produced []model.Message
	reply    string
	// failed is set when the turn ended on an error; reply then explains it.
	failed bool
	// unsteered are steer messages the turn could not use (it had already
	// made its last model call); the session queues them.
	unsteered []*messages.UserMessage
	// tokensIn and tokensOut are the model's usage over the turn.
	tokensIn, tokensOut int
	// visionNoticed says the reply told the user the model cannot see
	// images (once per session).
	visionNoticed bool
}

// voiceReply is sent by a bound actor (a tool) to its session: deliver this
// speech into the conversation.
type voiceReply struct {
	turn   uint64
	speech *messages.Speech
}

// steerInput hands a message to the running turn (busy policy "steer").
type steerInput struct{ m *messages.UserMessage }

// toolResult is sent by a tool actor to its turn.
type toolResult struct {
	callID  string
	content string
	err     error
}

// passivate asks a session whether it may be stopped; ask identifies the
// question, and the router trusts only the answer to its latest question to
// the current incarnation of the session.
type passivate struct{ ask uint64 }

// passivateReply answers passivate: ok when nothing runs, waits or is unsent.
type passivateReply struct {
	key string
	ask uint64
	ok  bool
}

// sweep is the router's periodic idle scan.
type sweep struct{}

// typingTick refreshes a running turn's chat action.
type typingTick struct{ turn uint64 }

// indicate asks an outbox to show a chat action in the sender's chat.
type indicate struct{ action string }

// SessionScoped marks indicate as needing an identity.
func (*indicate) SessionScoped() {}

// turnGone is sent by a session to itself when its turn terminated, so the
// check runs after any turnDone already in the mailbox (Terminated is a
// system message and overtakes user messages).
type turnGone struct{ turn uint64 }

// toolGone is the same for a turn and its tools.
type toolGone struct{ callID string }

// stateLoaded reports a session's state, loaded off its goroutine.
type stateLoaded struct {
	id    uint64
	state SessionState
	err   error
}

// modelDone reports a model call made off the turn's goroutine.
type modelDone struct {
	resp  model.Response
	err   error
	extra string
}

// resumeSession activates a session (which answers what it owes on load).
// recovered, if set, is called once that work is done: the runtime's
// recovery at start bounds how many sessions recover at once with it.
type resumeSession struct {
	key       string
	recovered func()
}

// conversationReset is a /new or /reset applied at the edge: the store is
// at conversation conv now. Routed like the command message m.
type conversationReset struct {
	m    *messages.UserMessage
	conv int64
}

// turnExpired is the session's watchdog on its turn.
type turnExpired struct{ turn uint64 }

// bgGone is sent by a session to itself when a background child stopped or
// ran out of time without answering.
type bgGone struct {
	turn uint64
	why  string
}

// settingsSaved reports that the session's settings were written.
type settingsSaved struct{ err error }

// settled reports that a Settlement was written (or failed): its replies
// may leave now.
type settled struct {
	replies []*messages.Delivery
	err     error
}
