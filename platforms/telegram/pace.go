package telegram

import (
	"context"
	"sync"
	"time"

	"github.com/hermesd/hermesd/retry"
)

// Telegram's documented sending limits
// (core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this).
// Each is a GCRA token bucket: with interval I and burst B, any window of
// length T holds at most B + T/I messages.
//
// Grants are spaced with a margin over the documented limits: what Telegram
// counts is arrival, and two requests granted exactly 1 s apart can arrive
// 950 ms apart after scheduling and network jitter (the load driver saw 31
// messages land in one second at a 30/s pacing). jitterMargin absorbs that.
const jitterMargin = 60 * time.Millisecond

var (
	// privateLimits: about one message a second in a private chat.
	privateLimits = []gcra{{interval: time.Second + jitterMargin, burst: 1}}
	// groupLimits: one a second, and at most 20 in any minute (3 + 60/(60/17)).
	groupLimits = []gcra{{interval: time.Second + jitterMargin, burst: 1}, {interval: time.Minute/17 + jitterMargin, burst: 3}}
	// globalLimit: at most 30 messages in any second across all chats;
	// granted at 28 a second, so that arrivals bunched by jitter stay under 30.
	globalLimit = gcra{interval: time.Second / 28, burst: 1}
)

// gcra is one token bucket in its "theoretical arrival time" form.
type gcra struct {
	interval time.Duration
	burst    int
	tat      time.Time
}

// earliest is the first instant at or after now when one more message conforms.
func (g *gcra) earliest(now time.Time) time.Time {
	t := g.tat.Add(-time.Duration(g.burst-1) * g.interval)
	if t.Before(now) {
		return now
	}
	return t
}

// commit records a message sent at t (t must conform).
func (g *gcra) commit(t time.Time) {
	if g.tat.Before(t) {
		g.tat = t
	}
	g.tat = g.tat.Add(g.interval)
}

// outbox orders and paces outgoing messages. Every delivery holds its chat's
// slot for its whole length, so the chunks of two replies to one chat never
// interleave and a chat's limits are checked by one holder at a time. With
// pacing on, a message first waits for its chat's buckets — a wait that
// delays only that chat — and then takes the next global slot, so one chat
// never holds up another longer than the global limit itself requires.
type outbox struct {
	limit bool

	mu       sync.Mutex
	global   gcra
	chats    map[int64]*chatSlot
	acquired int
	noVoice  map[int64]time.Time // chats that refused voice notes, until when
}

// chatSlot is one chat's place in the outbox.
type chatSlot struct {
	chat int64
	lock chan struct{} // holds one token while a delivery owns the chat

	// Guarded by outbox.mu.
	refs    int
	buckets []gcra
}

func newOutbox(limit bool) *outbox {
	return &outbox{limit: limit, global: globalLimit, chats: map[int64]*chatSlot{}, noVoice: map[int64]time.Time{}}
}

// refuseVoice remembers that chat refused a voice note, so that the next
// voice replies go straight to an audio file for a while.
func (o *outbox) refuseVoice(chat int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.noVoice[chat] = time.Now().Add(voiceRefusalMemory)
}

// voiceRefused reports whether chat refused a voice note recently.
func (o *outbox) voiceRefused(chat int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	until, ok := o.noVoice[chat]
	if ok && time.Now().After(until) {
		delete(o.noVoice, chat)
		return false
	}
	return ok
}

// sweepEvery is how many acquisitions pass between sweeps of idle chats.
const sweepEvery = 256

// acquire waits until the caller owns chat's slot; release it when done.
func (o *outbox) acquire(ctx context.Context, chat int64) (*chatSlot, error) {
	o.mu.Lock()
	s := o.chats[chat]
	if s == nil {
		limits := privateLimits
		if chat < 0 { // groups, supergroups and channels have negative ids
			limits = groupLimits
		}
		s = &chatSlot{chat: chat, lock: make(chan struct{}, 1), buckets: append([]gcra(nil), limits...)}
		o.chats[chat] = s
	}
	s.refs++
	if o.acquired++; o.acquired%sweepEvery == 0 {
		o.sweepLocked(time.Now())
	}
	o.mu.Unlock()
	select {
	case s.lock <- struct{}{}:
		return s, nil
	case <-ctx.Done():
		o.mu.Lock()
		s.refs--
		o.mu.Unlock()
		return nil, ctx.Err()
	}
}

// release gives the slot back.
func (o *outbox) release(s *chatSlot) {
	<-s.lock
	o.mu.Lock()
	defer o.mu.Unlock()
	s.refs--
	if s.refs == 0 && s.idle(time.Now()) {
		delete(o.chats, s.chat)
	}
}

// idle reports whether forgetting s loses no pacing state; o.mu held.
func (s *chatSlot) idle(now time.Time) bool {
	for i := range s.buckets {
		if s.buckets[i].tat.After(now) {
			return false
		}
	}
	return true
}

// sweepLocked forgets chats nobody holds whose buckets have drained.
func (o *outbox) sweepLocked(now time.Time) {
	for id, s := range o.chats {
		if s.refs == 0 && s.idle(now) {
			delete(o.chats, id)
		}
	}
	for id, until := range o.noVoice {
		if now.After(until) {
			delete(o.noVoice, id)
		}
	}
}

// pace blocks until one more message may go to the chat of s, which the
// caller holds. Without pacing it returns at once.
func (o *outbox) pace(ctx context.Context, s *chatSlot) error {
	if !o.limit {
		return ctx.Err()
	}
	o.mu.Lock()
	at := time.Now()
	for i := range s.buckets {
		if t := s.buckets[i].earliest(at); t.After(at) {
			at = t
		}
	}
	o.mu.Unlock()
	if err := retry.Sleep(ctx, time.Until(at)); err != nil {
		return err
	}

	o.mu.Lock()
	grant := o.global.earliest(time.Now())
	o.global.commit(grant)
	o.mu.Unlock()
	if err := retry.Sleep(ctx, time.Until(grant)); err != nil {
		return err
	}

	o.mu.Lock()
	for i := range s.buckets {
		s.buckets[i].commit(grant)
	}
	o.mu.Unlock()
	return nil
}
