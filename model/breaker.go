package model

import (
	"sync"
	"time"
)

// BreakerState is the state of one endpoint's circuit breaker.
type BreakerState string

// Breaker states.
const (
	// BreakerClosed lets every call through.
	BreakerClosed BreakerState = "closed"
	// BreakerOpen skips the endpoint until its cooldown ends.
	BreakerOpen BreakerState = "open"
	// BreakerHalfOpen lets one probe call through; its outcome closes or
	// reopens the breaker.
	BreakerHalfOpen BreakerState = "half-open"
)

// maxBreakerHold bounds how long a 429's Retry-After keeps an endpoint
// skipped: a provider that asks for hours is probed again sooner.
const maxBreakerHold = 15 * time.Minute

// breaker is a circuit breaker for one endpoint: it opens after threshold
// consecutive failures (or at once, for as long as the server asked, on a
// long Retry-After), lets one probe through after the cooldown, and closes
// on a success. A dead provider then costs one probe per cooldown instead
// of a timeout per user message.
type breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu       sync.Mutex
	state    BreakerState
	failures int
	until    time.Time // when an open breaker may probe
	probing  bool      // a half-open probe is in flight
}

func newBreaker(threshold int, cooldown time.Duration, now func() time.Time) *breaker {
	return &breaker{threshold: threshold, cooldown: cooldown, now: now, state: BreakerClosed}
}

// allow reports whether a call may go to the endpoint now, and whether it
// is the half-open state's one probe, which must then report success,
// failure or release with probe set. Only the probe frees the probe slot: a
// call that began while the breaker was closed and ends during the probe
// must not let a second probe through.
func (b *breaker) allow() (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case BreakerOpen:
		if b.now().Before(b.until) {
			return false, false
		}
		b.state, b.probing = BreakerHalfOpen, true
		return true, true
	case BreakerHalfOpen:
		if b.probing {
			return false, false
		}
		b.probing = true
		return true, true
	}
	return true, false
}

// success closes the breaker.
func (b *breaker) success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.failures, b.probing = BreakerClosed, 0, false
}

// failure counts a failed call; it opens the breaker at the threshold, and
// reopens a half-open one at once. hold, when positive (a 429's
// Retry-After), opens it at once for that long.
func (b *breaker) failure(hold time.Duration, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if probe {
		b.probing = false
	}
	switch {
	case hold > 0:
		// The server said when to come back; a day-long Retry-After is
		// not trusted for longer than maxBreakerHold.
		b.state, b.until = BreakerOpen, b.now().Add(min(hold, maxBreakerHold))
	case b.state == BreakerHalfOpen || b.failures >= b.threshold:
		b.state, b.until = BreakerOpen, b.now().Add(b.cooldown)
	}
}

// release ends a call without a verdict (the caller went away, or the
// request was at fault): a probe gives its slot up.
func (b *breaker) release(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}

// snapshot returns the state as a reader should see it: an open breaker
// whose cooldown is over reads as half-open.
func (b *breaker) snapshot() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && !b.now().Before(b.until) {
		return BreakerHalfOpen
	}
	return b.state
}
