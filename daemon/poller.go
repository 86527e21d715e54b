package daemon

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/discord"
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

// election runs one platform connection of a cluster only while this member
// holds a leadership lock (store.TryLeadership): a Telegram poller, a
// Discord gateway shard. The others stand by, trying the lock every retry,
// and still send their own sessions' replies; losing the lock ends the
// connection at once. A hand-over overlap is harmless: the platform's
// cursor is in the shared store and the inbox claim drops a message
// accepted twice.
type election struct {
	st   *store.Store
	lock string
	// role names the connection in logs ("the cluster's poller").
	role  string
	log   *slog.Logger
	retry time.Duration
	// standby is set while this member waits for the lock (from the
	// start); cleared while it leads, and for good when the connection
	// stopped on an error (a rejected token), which Health then reports.
	standby atomic.Bool
	// attempts counts tries of the lock (tests wait on it).
	attempts atomic.Int64
}

func newElection(st *store.Store, lock, role string, log *slog.Logger) *election {
	e := &election{st: st, lock: lock, role: role, log: log, retry: pollerRetry}
	e.standby.Store(true)
	return e
}

// run stands by until this member holds the lock, runs connect while it
// does, and stands by again when it loses it, until ctx ends. An error of
// connect (a token the platform rejects) ends it.
func (e *election) run(ctx context.Context, connect func(context.Context) error) error {
	for {
		l, ok, err := e.st.TryLeadership(ctx, e.lock)
		e.attempts.Add(1)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.Warn("could not try the leadership lock; standing by", "lock", e.lock, "err", err)
		case ok:
			err := e.lead(ctx, l, connect)
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

// lead runs connect while l is held; losing l cancels it at once.
func (e *election) lead(ctx context.Context, l *store.Leader, connect func(context.Context) error) error {
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
	e.log.Info("this member is " + e.role)
	e.standby.Store(false)
	err := connect(rctx)
	if ctx.Err() == nil && rctx.Err() != nil {
		e.log.Warn("lost the leadership lock; standing by", "lock", e.lock)
		err = nil
	}
	if err == nil {
		e.standby.Store(true)
	}
	return err
}

// health is the connection's while this member leads; standing by is not
// a fault.
func (e *election) health(connected func() platforms.Health) platforms.Health {
	if e.standby.Load() {
		return platforms.Health{Standby: true}
	}
	return connected()
}

// electedTelegram is the Telegram adapter of a cluster member in polling
// mode: it polls only while this member holds the poller lock. Every other
// method is the embedded adapter's, so every optional interface it
// implements stays visible to the runtime.
type electedTelegram struct {
	*telegram.Adapter
	*election
}

// newElectedTelegram makes a standing-by elected adapter of a.
func newElectedTelegram(a *telegram.Adapter, st *store.Store, log *slog.Logger) *electedTelegram {
	return &electedTelegram{Adapter: a, election: newElection(st, pollerLock, "the cluster's Telegram poller", log.With("platform", "telegram"))}
}

var _ platforms.HealthReporter = (*electedTelegram)(nil)

// Run polls while this member holds the poller lock, until ctx ends.
func (e *electedTelegram) Run(ctx context.Context, in platforms.Inbound) error {
	return e.run(ctx, func(ctx context.Context) error { return e.Adapter.Run(ctx, in) })
}

// Health is the adapter's while this member polls.
func (e *electedTelegram) Health() platforms.Health { return e.health(e.Adapter.Health) }

// discordShardLock is the leadership lock of the member that holds the
// Discord gateway connection. hermesd runs a bot as one shard (shard 0 of
// 1), so this is the one per-shard lock: every member connecting the
// gateway would receive every event (the inbox would keep one copy of each
// message, but the gateway work would be repeated on every member).
const discordShardLock = "discord-shard-0"

// electedDiscord is the Discord adapter of a cluster member: it holds the
// gateway connection only while this member holds the shard's lock, and
// sends its own sessions' replies (REST, from any member) always.
type electedDiscord struct {
	*discord.Adapter
	*election
}

func newElectedDiscord(a *discord.Adapter, st *store.Store, log *slog.Logger) *electedDiscord {
	return &electedDiscord{Adapter: a, election: newElection(st, discordShardLock, "the cluster's Discord gateway (shard 0)", log.With("platform", "discord"))}
}

var _ platforms.HealthReporter = (*electedDiscord)(nil)

// Run holds the gateway connection while this member holds the shard's
// lock, until ctx ends.
func (e *electedDiscord) Run(ctx context.Context, in platforms.Inbound) error {
	return e.run(ctx, func(ctx context.Context) error { return e.Adapter.Run(ctx, in) })
}

// Health is the adapter's while this member holds the gateway.
func (e *electedDiscord) Health() platforms.Health { return e.health(e.Adapter.Health) }
