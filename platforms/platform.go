// Package platforms holds the contract between hermesd's actor tree and the
// messaging platforms: what an adapter must do, what it declares about itself,
// and how it hands inbound messages over. One package per platform implements
// it (telegram/, discord/, web/).
package platforms

import (
	"context"
	"errors"

	"github.com/hermesd/hermesd/messages"
)

// Capabilities is the vocabulary type messages.Capabilities.
//
// Deprecated: use messages.Capabilities; this alias only keeps code written
// before the move compiling.
type Capabilities = messages.Capabilities

// Inbound is how an adapter hands a message to hermesd. It persists the
// message and routes it to its session; when it returns nil the message is
// safe and the adapter may acknowledge it to the platform. Adapters call it in
// the order the platform sent the messages of each chat (the client libraries
// call handlers on goroutines: restore the order first). An error means the
// message was not accepted; its text is fit to show the user.
type Inbound func(ctx context.Context, m *messages.UserMessage) error

// Adapter connects one platform. Every method is safe for concurrent use, and
// a slow or failing chat never blocks another: Send may be called for many
// sessions at once.
type Adapter interface {
	// Capabilities returns the platform's declared capabilities.
	Capabilities() Capabilities
	// Run connects to the platform and feeds inbound messages to in until ctx
	// ends. It returns nil on a clean shutdown.
	Run(ctx context.Context, in Inbound) error
	// Send delivers one reply into the conversation s. It chunks text at the
	// platform's limits, honours rate limits and retry hints with bounded
	// retries, and falls back from voice to an audio file to text when a chat
	// refuses voice. It returns once the platform acknowledged every part.
	Send(ctx context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error)
}

// ChatAction is a transient indicator shown while a turn runs.
type ChatAction string

// Chat actions.
const (
	Typing      ChatAction = "typing"
	RecordVoice ChatAction = "record_voice"
)

// Indicator is implemented by adapters that can show a chat action. The
// session refreshes it while a turn runs; it expires on its own.
type Indicator interface {
	Indicate(ctx context.Context, s messages.Session, a ChatAction) error
}

// Health is an adapter's view of its connection.
type Health struct {
	Connected bool
	// LastError is the most recent failure talking to the platform, if any.
	LastError string
	// Standby is set on a cluster member that leaves taking updates in to
	// another member (one Telegram poller per cluster): not connected, yet
	// nothing is wrong; it still sends its sessions' replies.
	Standby bool
}

// HealthReporter is implemented by adapters that track their connection.
type HealthReporter interface {
	Health() Health
}

// Gate decides who may reach the model. Adapters ask it for every inbound
// message before calling Inbound; a refused user never reaches a session.
type Gate interface {
	// Admit reports whether userID on platform may talk to the bot. When it
	// may not, reply is what to tell the user (a pairing code, a refusal), or
	// "" to stay silent (e.g. in groups).
	Admit(ctx context.Context, platform messages.Platform, userID, userName string, direct bool) (ok bool, reply string)
}

// ErrTooLarge is returned by Inbound for a message over the size limit.
var ErrTooLarge = errors.New("message too large")
