package actors

import (
	"sync/atomic"
	"time"

	"github.com/hermesd/hermesd/messages"
)

// Observer receives the runtime's events for metrics. Every method must be
// cheap and safe for concurrent use; labels it derives must stay bounded
// (platform, outcome, tool name — never a chat id).
type Observer interface {
	SessionStarted(s messages.Session)
	SessionStopped(s messages.Session)
	SessionsActive(n int)
	SessionPassivated()
	TurnStarted(s messages.Session)
	TurnFinished(s messages.Session, outcome string, d time.Duration)
	// ModelCall is one answered completion of the catalog model named model.
	ModelCall(model string, promptTokens, completionTokens int)
	ToolCall(tool, outcome string, d time.Duration)
	Delivery(p messages.Platform, kind, outcome string, d time.Duration)
}

// LeaseObserver is what an Observer may also implement to see sessions'
// leases in cluster mode (lease.go): a claim with its epoch, and a lease
// lost (why: "claim", "renew", "expired", "fenced").
type LeaseObserver interface {
	LeaseClaimed(s messages.Session, epoch uint64)
	LeaseLost(s messages.Session, why string)
}

// nopObserver ignores everything; the runtime uses it when no metrics are
// wired.
type nopObserver struct{}

func (nopObserver) SessionStarted(messages.Session)                           {}
func (nopObserver) SessionStopped(messages.Session)                           {}
func (nopObserver) SessionsActive(int)                                        {}
func (nopObserver) SessionPassivated()                                        {}
func (nopObserver) TurnStarted(messages.Session)                              {}
func (nopObserver) TurnFinished(messages.Session, string, time.Duration)      {}
func (nopObserver) ModelCall(string, int, int)                                {}
func (nopObserver) ToolCall(string, string, time.Duration)                    {}
func (nopObserver) Delivery(messages.Platform, string, string, time.Duration) {}

// counting wraps an Observer and keeps the running-turn count shutdown needs.
type counting struct {
	Observer
	running *atomic.Int64
}

func (c counting) LeaseClaimed(s messages.Session, epoch uint64) {
	if lo, ok := c.Observer.(LeaseObserver); ok {
		lo.LeaseClaimed(s, epoch)
	}
}

func (c counting) LeaseLost(s messages.Session, why string) {
	if lo, ok := c.Observer.(LeaseObserver); ok {
		lo.LeaseLost(s, why)
	}
}

func (c counting) TurnStarted(s messages.Session) {
	c.running.Add(1)
	c.Observer.TurnStarted(s)
}

func (c counting) TurnFinished(s messages.Session, outcome string, d time.Duration) {
	c.running.Add(-1)
	c.Observer.TurnFinished(s, outcome, d)
}
