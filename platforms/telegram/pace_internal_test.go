package telegram

import (
	"sort"
	"testing"
	"time"
)

// sendGreedily sends n messages, each as early as the buckets allow,
// starting at t0, and returns when each went.
func sendGreedily(buckets []gcra, n int, t0 time.Time) []time.Time {
	var out []time.Time
	now := t0
	for range n {
		at := now
		for i := range buckets {
			if e := buckets[i].earliest(now); e.After(at) {
				at = e
			}
		}
		for i := range buckets {
			buckets[i].commit(at)
		}
		out = append(out, at)
		now = at
	}
	return out
}

// maxInWindow is the most sends within any half-open window of length w.
func maxInWindow(ts []time.Time, w time.Duration) int {
	best := 0
	for i := range ts {
		n := 0
		for j := i; j < len(ts) && ts[j].Sub(ts[i]) < w; j++ {
			n++
		}
		best = max(best, n)
	}
	return best
}

func TestPacing_BucketsKeepTelegramsLimits(t *testing.T) {
	t0 := time.Unix(1000, 0)
	group := sendGreedily(append([]gcra(nil), groupLimits...), 100, t0)
	if n := maxInWindow(group, time.Minute); n > 20 {
		t.Errorf("group: %d messages in a minute, Telegram allows 20", n)
	}
	if n := maxInWindow(group, time.Second); n > 1 {
		t.Errorf("group: %d messages in a second", n)
	}
	if group[2].Sub(group[0]) > 3*time.Second {
		t.Errorf("group: a three-part answer takes %v; a small burst should be allowed", group[2].Sub(group[0]))
	}
	private := sendGreedily(append([]gcra(nil), privateLimits...), 20, t0)
	if n := maxInWindow(private, time.Second); n > 1 {
		t.Errorf("private chat: %d messages in a second", n)
	}
	global := sendGreedily([]gcra{globalLimit}, 200, t0)
	if n := maxInWindow(global, time.Second); n > 30 {
		t.Errorf("global: %d messages in a second, Telegram allows 30", n)
	}
	if d := global[199].Sub(global[0]); d > 7500*time.Millisecond {
		t.Errorf("global: 200 messages take %v; pacing should stay near 30/s (under 7.5 s)", d)
	}
	// What Telegram counts is arrival: with up to 50 ms of jitter between a
	// grant and its arrival, the limits must still hold.
	jitter := func(ts []time.Time) []time.Time {
		out := make([]time.Time, len(ts))
		for i, x := range ts {
			out[i] = x.Add(time.Duration((i*7919)%50) * time.Millisecond)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
		return out
	}
	if n := maxInWindow(jitter(global), time.Second); n > 30 {
		t.Errorf("global with jitter: %d arrivals in a second, Telegram allows 30", n)
	}
	if n := maxInWindow(jitter(private), time.Second); n > 1 {
		t.Errorf("private chat with jitter: %d arrivals in a second", n)
	}
	if n := maxInWindow(jitter(group), time.Minute); n > 20 {
		t.Errorf("group with jitter: %d arrivals in a minute", n)
	}
}
