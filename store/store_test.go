package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

// clock is a settable time source for WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// mustOpen opens a store at path and closes it when the test ends.
func mustOpen(tb testing.TB, path string, opts ...store.Option) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), path, opts...)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func dbPath(tb testing.TB) string { return filepath.Join(tb.TempDir(), "state.db") }

func mustClose(tb testing.TB, s *store.Store) {
	tb.Helper()
	if err := s.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

func TestOpen_TwiceIsIdempotent(t *testing.T) { forEachBackend(t, testOpen_TwiceIsIdempotent) }

func testOpen_TwiceIsIdempotent(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	s := mustOpen(t, path)
	if err := s.SetVoiceMode(ctx, "telegram:dm:1", messages.VoiceTTS); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.SetVoiceMode(ctx, "telegram:dm:1", messages.VoiceOff); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("write after Close: got %v, want ErrClosed", err)
	}

	s = mustOpen(t, path)
	r, err := s.Session(ctx, "telegram:dm:1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.VoiceMode, messages.VoiceTTS; got != want {
		t.Fatalf("voice mode after reopen = %q, want %q", got, want)
	}
}

// The CLI (`hermesd pairing approve`) opens the daemon's database while the
// daemon runs: both stores must work and see each other's writes.
func TestOpen_TwoStoresShareOneDatabase(t *testing.T) {
	forEachBackend(t, testOpen_TwoStoresShareOneDatabase)
}

func testOpen_TwoStoresShareOneDatabase(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	daemon := mustOpen(t, path)
	cli := mustOpen(t, path)
	if err := cli.SetBusyPolicy(ctx, "discord:dm:7", messages.Queue); err != nil {
		t.Fatal(err)
	}
	r, err := daemon.Session(ctx, "discord:dm:7")
	if err != nil {
		t.Fatal(err)
	}
	if r.BusyPolicy != messages.Queue {
		t.Fatalf("daemon sees policy %q, want queue", r.BusyPolicy)
	}
	if err := daemon.Append(ctx, store.Message{SessionKey: "discord:dm:7", Role: store.User, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	path := dbPath(t)
	mustClose(t, mustOpen(t, path))
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations(version, applied) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	_, err = store.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema: got %v, want an error saying it is newer", err)
	}
}

func TestSession_DefaultsAndSettings(t *testing.T) {
	forEachBackend(t, testSession_DefaultsAndSettings)
}

func testSession_DefaultsAndSettings(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const key = "telegram:group:-100:u42"
	r, err := s.Session(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := store.SessionRecord{Key: key, Platform: "telegram", Conversation: 1, VoiceMode: messages.VoiceOn, BusyPolicy: messages.Interrupt}
	if r != want {
		t.Fatalf("unknown session = %+v, want defaults %+v", r, want)
	}
	if err := s.SetVoiceMode(ctx, key, "loud"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("SetVoiceMode(loud) = %v, want ErrInvalid", err)
	}
	if err := s.SetBusyPolicy(ctx, key, messages.Steer); err != nil {
		t.Fatal(err)
	}
	if r, _ = s.Session(ctx, key); r.BusyPolicy != messages.Steer || r.VoiceMode != messages.VoiceOn {
		t.Fatalf("after SetBusyPolicy(steer): %+v", r)
	}
	if _, err := s.Session(ctx, "not a key"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Session(invalid key) = %v, want ErrInvalid", err)
	}
}

func TestListSessions(t *testing.T) { forEachBackend(t, testListSessions) }

func testListSessions(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	c := newClock()
	s := mustOpen(t, newDB(t), store.WithClock(c.Now))
	for _, key := range []string{"telegram:dm:1", "discord:dm:2", "telegram:dm:3"} {
		if err := s.Append(ctx, store.Message{SessionKey: key, Role: store.User, Content: "x"}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
	}
	all, err := s.ListSessions(ctx, store.SessionFilter{}, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(all); got != "telegram:dm:3 discord:dm:2 telegram:dm:1" {
		t.Fatalf("all sessions, newest first = %s", got)
	}
	tg, err := s.ListSessions(ctx, store.SessionFilter{Platform: "telegram"}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(tg); got != "telegram:dm:1" {
		t.Fatalf("telegram page 2 = %s", got)
	}
	if all[0].Turns != 1 || all[0].Created.IsZero() {
		t.Fatalf("record %+v: want 1 turn and a creation time", all[0])
	}
}

func keysOf(rs []store.SessionRecord) string {
	var ks []string
	for _, r := range rs {
		ks = append(ks, r.Key)
	}
	return strings.Join(ks, " ")
}

func TestCursor(t *testing.T) { forEachBackend(t, testCursor) }

func testCursor(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	s := mustOpen(t, path)
	if v, err := s.Cursor(ctx, "telegram:offset"); err != nil || v != "" {
		t.Fatalf("unset cursor = %q, %v", v, err)
	}
	if err := s.SetCursor(ctx, "telegram:offset", "1001"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	s = mustOpen(t, path)
	if v, err := s.Cursor(ctx, "telegram:offset"); err != nil || v != "1001" {
		t.Fatalf("cursor after reopen = %q, %v; want 1001", v, err)
	}
}

func TestMarkSeen(t *testing.T) { forEachBackend(t, testMarkSeen) }

func testMarkSeen(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	c := newClock()
	s := mustOpen(t, newDB(t), store.WithClock(c.Now), store.WithDedupTTL(time.Hour))
	check := func(p, id string, want bool) {
		t.Helper()
		first, err := s.MarkSeen(ctx, messagesPlatform(p), id)
		if err != nil {
			t.Fatal(err)
		}
		if first != want {
			t.Fatalf("MarkSeen(%s, %s) first = %v, want %v", p, id, first, want)
		}
	}
	seen := func(p, id string, want bool) {
		t.Helper()
		got, err := s.Seen(ctx, messagesPlatform(p), id)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("Seen(%s, %s) = %v, want %v", p, id, got, want)
		}
	}
	seen("telegram", "5", false)
	seen("telegram", "5", false) // asking does not mark
	check("telegram", "5", true)
	seen("telegram", "5", true)
	check("telegram", "5", false)
	check("discord", "5", true) // ids are per platform
	seen("discord", "6", false)
	c.Advance(59 * time.Minute)
	seen("telegram", "5", true)
	check("telegram", "5", false)
	c.Advance(2 * time.Hour) // past the TTL: remembered no longer
	seen("telegram", "5", false)
	check("telegram", "5", true)
	check("telegram", "5", false)
}
