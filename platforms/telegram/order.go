package telegram

import (
	"context"
	"sync"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/messages"
)

// update is one inbound update on its way to Inbound.
type update struct {
	id   int64
	recv time.Time
	sess messages.Session
	msg  *models.Message // nil when the update could not be decoded
	bad  error           // why it could not be decoded
	from int64           // sender, also known for undecodable updates
	// settle is called exactly once: done=true when the update needs no
	// more work (accepted, refused, skipped), false when it was abandoned at
	// shutdown and must come again.
	settle func(done bool)
}

// sequencer restores each conversation's order. Updates are queued by
// session key in update id order, and one worker per non-empty queue hands
// them on one at a time; different sessions run side by side, so a slow chat
// (a long transcription, a busy Inbound) delays only itself. A worker exits
// when its queue empties: an idle chat costs nothing.
type sequencer struct {
	ctx    context.Context
	handle func(ctx context.Context, q *queue, u *update)

	mu     sync.Mutex
	queues map[string]*queue
	wg     sync.WaitGroup
}

// queue is one session's pending updates.
type queue struct {
	key   string
	s     *sequencer
	items []*update     // ascending update id; guarded by s.mu
	wake  chan struct{} // a push happened
}

func newSequencer(ctx context.Context, handle func(context.Context, *queue, *update)) *sequencer {
	return &sequencer{ctx: ctx, handle: handle, queues: map[string]*queue{}}
}

// push queues u behind the earlier updates of its session. After shutdown
// began it is abandoned at once.
func (s *sequencer) push(u *update) {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		u.settle(false)
		return
	}
	key := u.sess.Key()
	q := s.queues[key]
	if q == nil {
		q = &queue{key: key, s: s, wake: make(chan struct{}, 1)}
		s.queues[key] = q
		s.wg.Add(1)
		go s.run(q)
	}
	i := len(q.items)
	for i > 0 && q.items[i-1].id > u.id { // polling pushes in order; a webhook may not
		i--
	}
	q.items = append(q.items, nil)
	copy(q.items[i+1:], q.items[i:])
	q.items[i] = u
	s.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run is the worker of q.
func (s *sequencer) run(q *queue) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(q.items) == 0 {
			delete(s.queues, q.key)
			s.mu.Unlock()
			return
		}
		u := q.items[0]
		q.items = q.items[1:]
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			u.settle(false)
			continue
		}
		s.handle(s.ctx, q, u)
	}
}

// peek waits up to d for the next update of q and returns it without taking
// it, or nil.
func (q *queue) peek(ctx context.Context, d time.Duration) *update {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		q.s.mu.Lock()
		if len(q.items) > 0 {
			u := q.items[0]
			q.s.mu.Unlock()
			return u
		}
		q.s.mu.Unlock()
		select {
		case <-q.wake:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// take removes u, which peek returned, from the head of q.
func (q *queue) take(u *update) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	if len(q.items) > 0 && q.items[0] == u {
		q.items = q.items[1:]
	}
}

// wait blocks until every worker has finished, or grace passed; it reports
// whether they all finished.
func (s *sequencer) wait(grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
