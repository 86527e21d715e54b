package daemon

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/discord"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/store/pgtest"
)

type admitAll struct{}

func (admitAll) Admit(context.Context, messages.Platform, string, string, bool) (bool, string) {
	return true, ""
}

// received records the inbound texts per member.
type received struct {
	mu  sync.Mutex
	got map[string][]string
}

func (r *received) inbound(member string) func(context.Context, *messages.UserMessage) error {
	return func(_ context.Context, m *messages.UserMessage) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got[member] = append(r.got[member], m.Text)
		return nil
	}
}

func (r *received) has(member, text string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.got[member] {
		if t == text {
			return true
		}
	}
	return false
}

// waitUntil polls cond until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond) // polling state with a deadline
	}
}

// Two members poll one bot through electedTelegram: only the lock's holder
// polls, the other stands by (and says so in its health); when the holder
// loses the lock's connection its poller stops and the other takes over,
// resuming from the shared offset.
func TestElectedTelegram_OnePollerAndHandOver(t *testing.T) {
	url := pgtest.New(t).NewDatabase(t)
	tg := telegramtest.NewServer(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	member := func(name string) *electedTelegram {
		st, err := store.Open(context.Background(), url, store.WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		cfg := telegram.DefaultConfig()
		cfg.Token, cfg.APIURL, cfg.RateLimit, cfg.PollTimeout = tg.Token(), tg.URL(), false, 2*time.Second
		a, err := telegram.New(cfg, telegram.Deps{Gate: admitAll{}, Log: log, Store: inboxDedup{st}})
		if err != nil {
			t.Fatal(err)
		}
		e := newElectedTelegram(a, st, log)
		e.retry = 50 * time.Millisecond
		return e
	}
	a, b := member("a"), member("b")
	rec := &received{got: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	runErr := make(chan error, 2)
	run := func(e *electedTelegram, name string) {
		runs.Go(func() { runErr <- e.Run(ctx, rec.inbound(name)) })
	}
	defer func() {
		cancel()
		runs.Wait()
		close(runErr)
		for err := range runErr {
			if err != nil {
				t.Errorf("Run returned %v after ctx ended, want nil", err)
			}
		}
	}()

	polling := func(e *electedTelegram) bool { h := e.Health(); return !h.Standby && h.Connected }
	if h := a.Health(); !h.Standby {
		t.Fatalf("before Run: health %+v, want standby", h)
	}
	run(a, "a")
	waitUntil(t, 10*time.Second, "a polls", func() bool { return polling(a) })
	run(b, "b")
	tg.SendText(1, 1, "first")
	waitUntil(t, 10*time.Second, "a receives the first message", func() bool { return rec.has("a", "first") })
	// b tries the lock every 50 ms, in vain.
	waitUntil(t, 10*time.Second, "b tried the lock five times", func() bool { return b.attempts.Load() >= 5 })
	if polling(b) || !b.Health().Standby {
		t.Fatalf("b polls (health %+v) while a holds the lock", b.Health())
	}
	if rec.has("b", "first") {
		t.Fatal("b received a message while standing by")
	}
	if n := tg.PollConflicts(); n != 0 {
		t.Fatalf("%d getUpdates ended by another: two pollers", n)
	}

	// The server ends a's lock connection: a stops polling, b takes over.
	endLockConnection(t, url)
	waitUntil(t, 5*time.Second, "b polls after a lost the lock", func() bool { return polling(b) })
	waitUntil(t, 5*time.Second, "a stands by after losing the lock", func() bool { return a.Health().Standby })
	tg.SendText(1, 1, "second")
	waitUntil(t, 10*time.Second, "b receives the second message", func() bool { return rec.has("b", "second") })
	if rec.has("b", "first") {
		t.Error("b received the first message again: the offset a confirmed was not shared")
	}
	if rec.has("a", "second") {
		t.Error("a received a message after it lost the lock")
	}
}

// Two members run one Discord bot through electedDiscord: only the shard
// lock's holder connects the gateway (one IDENTIFY while both run), the
// other stands by; when the holder loses the lock's connection it closes
// the gateway and the other connects and receives the next message.
func TestElectedDiscord_OneGatewayAndHandOver(t *testing.T) {
	url := pgtest.New(t).NewDatabase(t)
	dc := discordtest.NewServer(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	member := func() *electedDiscord {
		st, err := store.Open(context.Background(), url, store.WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		a, err := discord.New(discord.Config{Token: "Bot " + discordtest.Token, APIURL: dc.URL},
			discord.Deps{Gate: admitAll{}, Log: log, Dedup: inboxDedup{st}})
		if err != nil {
			t.Fatal(err)
		}
		e := newElectedDiscord(a, st, log)
		e.retry = 50 * time.Millisecond
		return e
	}
	a, b := member(), member()
	rec := &received{got: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	defer func() {
		cancel()
		runs.Wait()
	}()
	run := func(e *electedDiscord, name string) {
		runs.Go(func() {
			if err := e.Run(ctx, rec.inbound(name)); err != nil {
				t.Errorf("%s: Run returned %v", name, err)
			}
		})
	}
	run(a, "a")
	dc.WaitConnected(t)
	run(b, "b")
	waitUntil(t, 10*time.Second, "b tried the shard lock five times", func() bool { return b.attempts.Load() >= 5 })
	if !b.Health().Standby || a.Health().Standby {
		t.Fatalf("health a %+v, b %+v: want a connected and b standing by", a.Health(), b.Health())
	}
	dc.DM("300", "42", "first")
	waitUntil(t, 10*time.Second, "a receives the first message", func() bool { return rec.has("a", "first") })
	if n := dc.Identifies(); n != 1 {
		t.Fatalf("%d gateway sessions while one member holds the shard, want 1", n)
	}

	endLockConnection(t, url)
	waitUntil(t, 10*time.Second, "b holds the gateway after a lost the lock", func() bool {
		return !b.Health().Standby && dc.Identifies() == 2 && dc.Connected()
	})
	waitUntil(t, 5*time.Second, "a stands by after losing the lock", func() bool { return a.Health().Standby })
	dc.DM("300", "42", "second")
	waitUntil(t, 10*time.Second, "b receives the second message", func() bool { return rec.has("b", "second") })
	if rec.has("a", "second") {
		t.Error("a received a message after it lost the shard lock")
	}
}

// endLockConnection has the server end the one connection of database url
// that holds an advisory lock (a leader's), as a failover or a network cut
// would.
func endLockConnection(t *testing.T, url string) {
	t.Helper()
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var ended int
	if err := admin.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ended %d lock connections (%v), want 1", ended, err)
	}
}
