package model

import (
	"testing"
	"time"
)

// Half-open lets one probe through at a time: a call that began while the
// breaker was closed and ends during the probe (cancelled, or a request
// error) does not free the probe's slot for a second probe; the probe
// giving its slot up does.
func TestBreaker_OneProbeAtATime(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBreaker(1, time.Second, func() time.Time { return now })
	if ok, probe := b.allow(); !ok || probe {
		t.Fatalf("closed: allow = %v, %v; want a plain call", ok, probe)
	}
	// An older call is still running when another fails and opens it.
	b.failure(0, false)
	now = now.Add(2 * time.Second)
	if ok, probe := b.allow(); !ok || !probe {
		t.Fatalf("after the cooldown: allow = %v, %v; want the probe", ok, probe)
	}
	b.release(false) // the older call ends without a verdict
	if ok, _ := b.allow(); ok {
		t.Fatal("a second probe went through while the first was in flight")
	}
	b.release(true) // the probe gives its slot up
	if ok, probe := b.allow(); !ok || !probe {
		t.Fatalf("after the probe's release: allow = %v, %v; want a new probe", ok, probe)
	}
	b.success()
	if got := b.snapshot(); got != BreakerClosed {
		t.Fatalf("state after the probe's success = %s, want closed", got)
	}
}
