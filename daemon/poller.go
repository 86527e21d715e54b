package daemon

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/store"
)

// pollerLock is the leadership lock of the one member of a cluster that
// long-polls Telegram: the Bot API allows one getUpdates per token (a
// second one ends the first with 409 Conflict).
const pollerLock = "telegram-poller"

// pollerRetry is how often a standby member tries to take the poller lock:
// after the poller dies, updates wait at most about this long (they are
// kept by Telegram meanwhile, and the cursor is in the shared store).
const pollerRetry = 2 * time.Second

// electedTelegram is the Telegram adapter of a cluster member in polling
// mode. Its Run polls only while this member holds the poller lock, and
// stops at once when the lock is lost; meanwhile the member stands by, and
// sends its own sessions' replies as always (every other method is the
// embedded adapter's, so every optional interface it implements stays
// visible to the runtime). A hand-over overlap is harmless: the update
// cursor is in the shared store and the inbox claim drops an update
// accepted twice.
type electedTelegram struct {
	*telegram.Adapter
	st    *store.Store
	log   *slog.Logger
	retry time.Duration
	// standby is set while this member waits for the lock (from the
	// start); cleared while it polls, and for good when the poller stopped
	// on an error (a rejected token), which Health then reports.
	standby atomic.Bool
	// attempts counts tries of the lock (tests wait on it).
	attempts atomic.Int64
}

// newElectedTelegram makes a standing-by elected adapter of a.
func newElectedTelegram(a *telegram.Adapter, st *store.Store, log *slog.Logger) *electedTelegram {
	e := &electedTelegram{Adapter: a, st: st, log: log.With("platform", "telegram"), retry: pollerRetry}
	e.standby.Store(true)
	return e
}

var _ platforms.HealthReporter = (*electedTelegram)(nil)

// Run stands by until this member holds the poller lock, polls while it
// does, and stands by again when it loses it, until ctx ends. A token
// Telegram rejects ends it with that error, as the plain adapter's Run.
func (e *electedTelegram) Run(ctx context.Context, in platforms.Inbound) error {
	for {
		l, ok, err := e.st.TryLeadership(ctx, pollerLock)
		e.attempts.Add(1)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.Warn("telegram: could not try the poller lock; standing by", "err", err)
		case ok:
			err := e.poll(ctx, l, in)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
		}
		t := time.NewTimer(e.retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// poll runs the adapter while l is held; losing l cancels it at once.
func (e *electedTelegram) poll(ctx context.Context, l *store.Leader, in platforms.Inbound) error {
	defer l.Release()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-l.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	e.log.Info("telegram: this member is the cluster's poller")
	e.standby.Store(false)
	err := e.Adapter.Run(rctx, in)
	if ctx.Err() == nil && rctx.Err() != nil {
		e.log.Warn("telegram: lost the poller lock; standing by")
		err = nil
	}
	if err == nil {
		e.standby.Store(true)
	}
	return err
}

// Health is the adapter's while this member polls; standing by is not a
// fault.
func (e *electedTelegram) Health() platforms.Health {
	if e.standby.Load() {
		return platforms.Health{Standby: true}
	}
	return e.Adapter.Health()
}
