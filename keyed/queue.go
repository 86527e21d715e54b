// Package keyed holds Queue, a keyed FIFO: values pushed under one key are
// handled one at a time in order, values of different keys concurrently.
// It is how hermesd restores per-chat order after a platform library hands
// events over on many goroutines, and how a slow chat delays only itself.
package keyed

import (
	"context"
	"sync"
	"time"
)

// Options tune a Queue. Limit is required; the rest may be left zero.
type Options[K comparable, T any] struct {
	// Limit bounds the values waiting under one key (not counting the one
	// being handled); Push refuses beyond it, so a flooded key cannot grow
	// memory without bound.
	Limit int
	// Before, when set, orders a key's waiting values: a pushed value goes
	// ahead of the waiting values it is Before (for sources that may push
	// out of order, such as webhook deliveries). Nil keeps push order.
	Before func(a, b T) bool
	// Drop receives each waiting value abandoned unhandled because the
	// queue's context ended. Nil drops them silently.
	Drop func(T)
	// Recover, when set, is called with a panic from handle, and the key's
	// worker goes on with the next value. Nil lets the panic through.
	Recover func(key K, v T, panicked any)
}

// Queue runs handle for the values pushed under each key, one at a time and
// in order, with one goroutine per key that has values waiting; a key's
// goroutine exits when its lane empties, so an idle key costs nothing. It is
// safe for concurrent use.
type Queue[K comparable, T any] struct {
	ctx    context.Context
	handle func(context.Context, *Lane[K, T], T)
	opt    Options[K, T]

	mu     sync.Mutex
	lanes  map[K]*Lane[K, T] // a key is present while its worker runs
	closed bool
	wg     sync.WaitGroup
}

// Lane is one key's waiting values, as its worker sees them: handle may
// take the next value early (to merge it with the current one).
type Lane[K comparable, T any] struct {
	key   K
	q     *Queue[K, T]
	items []T           // guarded by q.mu
	wake  chan struct{} // a push happened
}

// New returns a queue whose workers call handle; they stop taking values
// when ctx ends (the rest go to Options.Drop).
func New[K comparable, T any](ctx context.Context, handle func(context.Context, *Lane[K, T], T), opt Options[K, T]) *Queue[K, T] {
	if opt.Limit <= 0 {
		panic("keyed: Options.Limit must be positive")
	}
	return &Queue[K, T]{ctx: ctx, handle: handle, opt: opt, lanes: make(map[K]*Lane[K, T])}
}

// Push queues v under key without blocking. It returns false, and v is
// not queued, when the queue is closed, its context has ended, or key
// already has Limit values waiting.
func (q *Queue[K, T]) Push(key K, v T) bool {
	q.mu.Lock()
	if q.closed || q.ctx.Err() != nil {
		q.mu.Unlock()
		return false
	}
	l := q.lanes[key]
	if l == nil {
		l = &Lane[K, T]{key: key, q: q, wake: make(chan struct{}, 1)}
		q.lanes[key] = l
		q.wg.Add(1)
		go q.run(l)
	}
	if len(l.items) >= q.opt.Limit {
		q.mu.Unlock()
		return false
	}
	i := len(l.items)
	for q.opt.Before != nil && i > 0 && q.opt.Before(v, l.items[i-1]) {
		i--
	}
	l.items = append(l.items, v)
	copy(l.items[i+1:], l.items[i:])
	l.items[i] = v
	q.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// run is the worker of l: it hands l's values to handle until none are
// left, then exits.
func (q *Queue[K, T]) run(l *Lane[K, T]) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		if len(l.items) == 0 {
			delete(q.lanes, l.key)
			q.mu.Unlock()
			return
		}
		v := l.items[0]
		var zero T
		l.items[0] = zero
		l.items = l.items[1:]
		q.mu.Unlock()
		if q.ctx.Err() != nil {
			if q.opt.Drop != nil {
				q.opt.Drop(v)
			}
			continue
		}
		q.call(l, v)
	}
}

func (q *Queue[K, T]) call(l *Lane[K, T], v T) {
	if q.opt.Recover != nil {
		defer func() {
			if r := recover(); r != nil {
				q.opt.Recover(l.key, v, r)
			}
		}()
	}
	q.handle(q.ctx, l, v)
}

// Close stops accepting values and waits for the workers; once the
// context has ended they drop what is left instead of handling it.
func (q *Queue[K, T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
}

// Wait blocks until every worker has finished or grace has passed, and
// reports whether they all finished. Pushes are still accepted meanwhile.
func (q *Queue[K, T]) Wait(grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		q.wg.Wait()
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

// Key returns the lane's key.
func (l *Lane[K, T]) Key() K { return l.key }

// TakeIf waits up to d (or until ctx ends) for the lane's next value. If
// one comes and accept(v) holds, it is removed from the lane and returned
// with true: the caller now handles it. Otherwise the value stays first in
// line and TakeIf returns false. Only the lane's own handle may call it;
// accept runs under the queue's lock, so it must be quick and must not use
// the queue.
func (l *Lane[K, T]) TakeIf(ctx context.Context, d time.Duration, accept func(T) bool) (T, bool) {
	var zero T
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		l.q.mu.Lock()
		if len(l.items) > 0 {
			v := l.items[0]
			if !accept(v) {
				l.q.mu.Unlock()
				return zero, false
			}
			l.items[0] = zero
			l.items = l.items[1:]
			l.q.mu.Unlock()
			return v, true
		}
		l.q.mu.Unlock()
		select {
		case <-l.wake:
		case <-timer.C:
			return zero, false
		case <-ctx.Done():
			return zero, false
		}
	}
}
