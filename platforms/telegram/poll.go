package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"github.com/hermesd/hermesd/retry"
)

// Why the adapter polls with its own getUpdates loop.
//
// Telegram forgets an update once a getUpdates call asks for an offset above
// its id. go-telegram/bot's loop (get_updates.go) moves its offset past each
// update as soon as it hands it to its channel, and sends the next
// getUpdates at once: the update is confirmed to Telegram while its handler
// has barely started. A crash (kill -9, OOM, power loss) before the handler
// got the update into Inbound loses it for good. Its request machinery is
// unexported and getUpdates is not a public method, so this loop makes the
// same multipart call itself (api.go) and decides the offset on its own:
//
//   - The offset sent is always watermark+1, where the watermark is the
//     highest id below which every update taken in has settled: accepted by
//     Inbound, refused by the Gate, or skipped on purpose. An update in
//     flight is never confirmed, so Telegram redelivers it after a crash.
//   - The watermark is persisted (Store.SetCursor) before the poll that
//     confirms it, and a restart resumes from it.
//   - Updates above the watermark that settled before a crash come again
//     after it: the dedup marks (pipeline.claim, two MarkSeen steps around
//     Inbound) skip them. The one window left is a crash after Inbound
//     accepted an update and before its "done" mark was written: that update
//     is handed to Inbound again, with the same message id — duplicated,
//     never lost. Closing it needs Inbound and the mark in one transaction,
//     or Inbound ignoring a message id it already holds.
//
// Cost: while an update is in flight (a transcription, a slow Inbound),
// Telegram keeps returning it, so the loop waits for progress (at most
// repollDelay) before asking again instead of spinning, and at most 100
// updates past the watermark are visible at a time.

// repollDelay is how long the loop waits before polling again when
// Telegram only returned updates that are still being handled.
const repollDelay = 500 * time.Millisecond

// tracker knows which polled updates are still in flight.
type tracker struct {
	mu       sync.Mutex
	inflight map[int64]struct{}
	highest  int64         // highest update id taken in
	moved    chan struct{} // closed when the watermark moves
}

func newTracker(start int64) *tracker {
	return &tracker{inflight: map[int64]struct{}{}, highest: start, moved: make(chan struct{})}
}

// watermarkLocked: every update at or below it has settled.
func (t *tracker) watermarkLocked() int64 {
	w := t.highest
	for id := range t.inflight {
		if id-1 < w {
			w = id - 1
		}
	}
	return w
}

func (t *tracker) watermark() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.watermarkLocked()
}

// add takes in update id; false if it was already taken in.
func (t *tracker) add(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id <= t.highest {
		return false
	}
	t.highest = id
	t.inflight[id] = struct{}{}
	return true
}

// done settles id.
func (t *tracker) done(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	before := t.watermarkLocked()
	delete(t.inflight, id)
	if t.watermarkLocked() != before {
		close(t.moved)
		t.moved = make(chan struct{})
	}
}

// waitMove returns a channel closed once the watermark is no longer w (nil
// if it already is not), and how many updates are in flight.
func (t *tracker) waitMove(w int64) (<-chan struct{}, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.watermarkLocked() != w {
		return nil, len(t.inflight)
	}
	return t.moved, len(t.inflight)
}

// cursorName is where this bot's offset is persisted.
func (a *Adapter) cursorName() string {
	return "telegram:" + strconv.FormatInt(a.botID, 10) + ":offset"
}

// runPolling is the long-polling source: see the comment at the top.
func (a *Adapter) runPolling(ctx context.Context, p *pipeline) error {
	if err := a.retryUntil(ctx, "deleteWebhook", func(ctx context.Context) error {
		_, err := a.bot.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
		return err
	}); err != nil {
		return err
	}
	var start int64
	if err := a.retryUntil(ctx, "load the update offset", func(ctx context.Context) error {
		v, err := a.store.Cursor(ctx, a.cursorName())
		if err != nil || v == "" {
			return err
		}
		start, err = strconv.ParseInt(v, 10, 64)
		if err != nil {
			a.log.Error("telegram: stored offset is not a number; starting from Telegram's", "value", v)
			start = 0
		}
		return nil
	}); err != nil {
		return err
	}
	tr := newTracker(start)
	persisted := start
	persist := func(ctx context.Context) {
		if w := tr.watermark(); w > persisted {
			if err := a.store.SetCursor(ctx, a.cursorName(), strconv.FormatInt(w, 10)); err != nil {
				a.noteError(err)
				a.log.Warn("telegram: could not persist the update offset", "offset", w, "err", err)
				return
			}
			persisted = w
		}
	}
	defer func() {
		p.stop()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		persist(pctx)
	}()

	a.log.Info("telegram polling", "offset", start+1)
	// getMe just worked: connected until a poll fails, not only once the
	// first long poll returns (which takes up to PollTimeout when idle).
	a.setConnected(true)
	a.markReady()
	back := retry.NewBackoff(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		persist(ctx)
		w := tr.watermark()
		var raws []json.RawMessage
		pctx, cancel := context.WithTimeout(ctx, a.cfg.PollTimeout+15*time.Second)
		err := a.api.call(pctx, "getUpdates", map[string]string{
			"offset":          strconv.FormatInt(w+1, 10),
			"timeout":         strconv.Itoa(int(a.cfg.PollTimeout / time.Second)),
			"limit":           "100",
			"allowed_updates": allowedUpdates,
		}, &raws)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if err := a.pollFailed(ctx, err, back); err != nil {
				return err
			}
			continue
		}
		back.Reset()
		a.setConnected(true)
		recv := time.Now()
		fresh := 0
		for _, raw := range raws {
			pr, ok := probeID(raw)
			if !ok {
				a.log.Error("telegram update without an id; skipping it", "bytes", len(raw))
				continue
			}
			if !tr.add(pr.ID) {
				continue // still in flight from an earlier poll
			}
			fresh++
			id := pr.ID
			p.dispatch(pr, raw, recv, func(done bool) {
				if done {
					tr.done(id)
				}
			})
		}
		if fresh == 0 {
			if ch, n := tr.waitMove(w); ch != nil && n > 0 {
				t := time.NewTimer(repollDelay)
				select {
				case <-ch:
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
			}
		}
	}
	return nil
}

// pollFailed handles a failed getUpdates: a rejected token ends Run; a
// conflict (a webhook, or another instance polling) and everything else are
// logged and retried with backoff.
func (a *Adapter) pollFailed(ctx context.Context, err error, back *retry.Backoff) error {
	a.setConnected(false)
	a.noteError(err)
	switch {
	case errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound):
		err = fmt.Errorf("telegram: getUpdates: the token was rejected (%s): %w", TokenHint, err)
		a.noteError(err)
		return err
	case errors.Is(err, bot.ErrorConflict):
		a.log.Error("telegram: getUpdates conflict: another instance is polling this bot, or a webhook is set", "err", err)
		if strings.Contains(err.Error(), "webhook") {
			dctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
			_, _ = a.bot.DeleteWebhook(dctx, &bot.DeleteWebhookParams{})
			cancel()
		}
	default:
		if kind, wait := classify(ctx, err); kind == failRateLimited {
			a.log.Warn("telegram: getUpdates rate limited", "retry_after", wait)
			_ = retry.Sleep(ctx, wait)
			return nil
		}
		a.log.Warn("telegram: getUpdates failed; retrying", "err", err)
	}
	_ = back.Wait(ctx)
	return nil
}

// retryUntil runs fn until it succeeds, with backoff; a rejected token or
// the end of ctx stops it (the latter returning nil: Run is shutting down).
func (a *Adapter) retryUntil(ctx context.Context, what string, fn func(context.Context) error) error {
	back := retry.NewBackoff(200*time.Millisecond, 10*time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, bot.ErrorUnauthorized) {
			err = fmt.Errorf("telegram: %s: the token was rejected (%s): %w", what, TokenHint, err)
			a.noteError(err)
			return err
		}
		a.noteError(err)
		a.log.Warn("telegram: "+what+" failed; retrying", "err", err)
		if back.Wait(ctx) != nil {
			return nil
		}
	}
}
