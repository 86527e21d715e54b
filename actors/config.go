package actors

import (
	"time"

	"github.com/hermesd/hermesd/messages"
)

// Config holds the runtime's tunables. DefaultConfig documents the defaults.
type Config struct {
	// IdleTimeout is how long a session may sit idle before it passivates
	// (its state is in the store; the next message brings it back).
	IdleTimeout time.Duration
	// SweepInterval is how often the router looks for idle sessions; 0
	// disables passivation (tests, benchmarks).
	SweepInterval time.Duration
	// HistoryLimit bounds the messages after the conversation's summary a
	// session loads and keeps in memory: a safety net, since compression
	// keeps a conversation near its token budget and each request sends
	// only what fits the budget.
	HistoryLimit int
	// MaxToolRounds bounds model↔tool iterations in one turn; the last call
	// is made without tools so the model must answer.
	MaxToolRounds int
	// TurnTimeout bounds a whole turn; ToolTimeout one tool call; TTSTimeout
	// one synthesis; SendTimeout one delivery; StoreTimeout one store call.
	TurnTimeout, ToolTimeout, TTSTimeout, SendTimeout, StoreTimeout time.Duration
	// TypingDelay is how long a turn runs before its chat shows "typing"
	// (or "recording"); TypingRefresh is how often that is renewed
	// (Telegram's expire after about 5 s).
	TypingDelay, TypingRefresh time.Duration
	// MaxInboundBytes is the largest message text accepted.
	MaxInboundBytes int
	// QueueLimit bounds messages waiting under the "queue" busy policy.
	QueueLimit int
	// DefaultBusy is the busy policy of a new session.
	DefaultBusy messages.BusyPolicy
	// SystemPrompt starts every model conversation.
	SystemPrompt string
	// RecoveryConcurrency bounds how many sessions answer what they owed at
	// start at the same time (0 means 32), so a restart with a long backlog
	// does not stampede the model.
	RecoveryConcurrency int
	// ModelName is shown by /status.
	ModelName string
	// ReviewEvery and SweepEvery start a skill review / memory sweep after
	// that many turns (0 = never); SweepOnIdle also sweeps before a session
	// passivates. MaxBackground bounds a session's background children.
	ReviewEvery, SweepEvery int
	SweepOnIdle             bool
	MaxBackground           int
	// MaxDelegateDepth bounds sub-agent nesting; MaxDelegates bounds the
	// sub-agents one turn runs at once, MaxDelegatesTotal those of the
	// whole daemon.
	MaxDelegateDepth, MaxDelegates, MaxDelegatesTotal int
	// SchedulerInterval is how often the scheduler looks for due jobs (it
	// also wakes when a job is created).
	SchedulerInterval time.Duration
	// RouterShards is how many router actors share the session keys; 0
	// means one per CPU.
	RouterShards int
	// LeaseTTL is how long a session's lease lasts unrenewed (cluster mode
	// with leases); it is renewed every third of it. MemberID names this
	// member in lease owners.
	LeaseTTL time.Duration
	MemberID string
	// OwedSweep, in cluster mode, is how often every session that owes work
	// is asked to look again (0: never): messages stored by a member that
	// could not reach their session are answered by its owner.
	OwedSweep time.Duration
	// ContextTokens is a model's context window when Deps.ContextTokens
	// does not know it; AnswerReserve is kept free of it for the answer.
	// A conversation whose history no longer fits the rest is compressed
	// (compress.go), and each request sends the newest history that fits.
	ContextTokens, AnswerReserve int
	// ToolResultLimit caps, in bytes, a tool result as the model sees it
	// (the history keeps it whole); 0 means no cap.
	ToolResultLimit int
	// CompressKeep is the share of the budget (0–1) kept as the newest
	// messages, verbatim, when a conversation is compressed.
	CompressKeep float64
	// Vision says the model is given photos as image content parts; off,
	// it gets a description and the user is told once per session.
	Vision bool
	// DraftInterval is the least time between two drafts of a streamed
	// reply sent by a turn to its session (the first goes at once); 0 means
	// 50 ms. Platforms pace drafts further to their own limits.
	DraftInterval time.Duration
}

// DefaultConfig returns the defaults used by the daemon.
func DefaultConfig() Config {
	return Config{
		IdleTimeout:       30 * time.Minute,
		SweepInterval:     time.Minute,
		HistoryLimit:      1000,
		MaxToolRounds:     8,
		TurnTimeout:       10 * time.Minute,
		ToolTimeout:       2 * time.Minute,
		TTSTimeout:        time.Minute,
		SendTimeout:       2 * time.Minute,
		StoreTimeout:      30 * time.Second,
		TypingRefresh:     4 * time.Second,
		MaxInboundBytes:   32 << 10,
		QueueLimit:        20,
		DefaultBusy:       messages.Interrupt,
		SystemPrompt:      "You are Hermes, a helpful assistant chatting with people through a messaging app. Be concise. You can call tools; use text_to_speech when the user wants to hear something.",
		ModelName:         "offline assistant",
		ReviewEvery:       10,
		SweepEvery:        5,
		SweepOnIdle:       true,
		MaxBackground:     4,
		MaxDelegateDepth:  1,
		MaxDelegates:      3,
		MaxDelegatesTotal: 64,
		SchedulerInterval: time.Second,
		ContextTokens:     32768,
		AnswerReserve:     4096,
		ToolResultLimit:   16 << 10,
		CompressKeep:      0.5,
	}
}
