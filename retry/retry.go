// Package retry holds the two things every retry loop in hermesd needs: a
// sleep that ends with its context, and an exponential backoff.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits d or until ctx ends, and returns ctx's error in the second
// case (and at once when d <= 0 and ctx has already ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff is an exponential delay: First, then doubling up to Max, each
// delay moved by up to ±Jitter of itself (0.2 = ±20 %) so that many clients
// failing together do not retry together. The zero Jitter gives exact
// delays. A Backoff is one retry loop's state: not safe for concurrent use.
type Backoff struct {
	First, Max time.Duration
	Jitter     float64
	next       time.Duration
}

// NewBackoff returns a backoff from first to max with ±20 % jitter.
func NewBackoff(first, max time.Duration) *Backoff {
	return &Backoff{First: first, Max: max, Jitter: 0.2}
}

// Next returns the delay before the next retry and doubles the one after.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = b.First
	}
	d := b.next
	b.next = min(2*b.next, b.Max)
	if b.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * b.Jitter * float64(d))
	}
	return d
}

// Wait sleeps Next() or until ctx ends.
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Reset starts again from First, after a success.
func (b *Backoff) Reset() { b.next = 0 }
