package discord

import (
	"context"
	"log/slog"
	"sync"
)

// keyedQueue runs handle for the values pushed under each key, one at a time
// and in push order, with one goroutine per key that has pending values.
// Different keys run in parallel and never wait for each other. It restores
// per-channel order for Discord: values are pushed in gateway order from
// the single gateway reader, so each channel's messages reach Inbound in the
// order Discord sent them, while a slow channel (a long transcription, a
// slow Inbound) holds up only itself.
type keyedQueue[T any] struct {
	ctx     context.Context
	limit   int
	log     *slog.Logger
	handle  func(context.Context, T)
	mu      sync.Mutex
	pending map[string][]T // a key is present while its worker runs
	closed  bool
	wg      sync.WaitGroup
}

// newKeyedQueue returns a queue whose workers stop when ctx ends; at most
// limit values wait per key.
func newKeyedQueue[T any](ctx context.Context, limit int, log *slog.Logger, handle func(context.Context, T)) *keyedQueue[T] {
	return &keyedQueue[T]{ctx: ctx, limit: limit, log: log, handle: handle, pending: make(map[string][]T)}
}

// push queues v under key without blocking. It returns false when the queue
// is closed or key's backlog is full.
func (q *keyedQueue[T]) push(key string, v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	p, running := q.pending[key]
	if len(p) >= q.limit {
		return false
	}
	q.pending[key] = append(p, v)
	if !running {
		q.wg.Add(1)
		go q.drain(key)
	}
	return true
}

// drain handles key's values until none are left, then exits. When ctx has
// ended the rest are dropped.
func (q *keyedQueue[T]) drain(key string) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		p := q.pending[key]
		if len(p) == 0 || q.ctx.Err() != nil {
			delete(q.pending, key)
			q.mu.Unlock()
			return
		}
		v := p[0]
		var zero T
		p[0] = zero
		q.pending[key] = p[1:]
		q.mu.Unlock()
		q.safeHandle(key, v)
	}
}

// safeHandle keeps a panic in one message from killing the daemon or the
// channel's later messages.
func (q *keyedQueue[T]) safeHandle(key string, v T) {
	defer func() {
		if r := recover(); r != nil {
			q.log.Error("panic handling message", "channel", key, "panic", r)
		}
	}()
	q.handle(q.ctx, v)
}

// close stops accepting values and waits for the workers, which stop early
// once ctx has ended.
func (q *keyedQueue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
}
