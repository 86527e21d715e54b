package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

// Schedulers on several members claim due jobs at the same moments: every
// occurrence of every job is claimed by exactly one of them.
func TestPostgres_ConcurrentClaimDueJobsNeverDoubleClaim(t *testing.T) {
	ctx := context.Background()
	url := pgURL(t)
	const members, oneShots, recurring, rounds = 3, 120, 30, 8
	stores := make([]*store.Store, members)
	for i := range stores {
		stores[i] = mustOpen(t, url)
	}
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range oneShots {
		j := store.Job{ID: fmt.Sprintf("once-%d", i), SessionKey: fmt.Sprintf("web:dm:o%d", i), Schedule: "in 1m", Prompt: "p",
			NextRun: start.Add(time.Duration(i%rounds) * time.Hour), Once: true}
		if err := stores[0].PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for i := range recurring {
		j := store.Job{ID: fmt.Sprintf("hourly-%d", i), SessionKey: fmt.Sprintf("web:dm:r%d", i), Schedule: "every 1h", Prompt: "p", NextRun: start}
		if err := stores[1].PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	next := func(j store.Job) *time.Time { n := j.NextRun.Add(time.Hour); return &n }

	type claim struct {
		id  string
		due time.Time
	}
	var mu sync.Mutex
	claims := map[claim]int{}
	for r := range rounds {
		now := start.Add(time.Duration(r) * time.Hour)
		var wg sync.WaitGroup
		errs := make(chan error, members)
		begin := make(chan struct{})
		for _, s := range stores {
			wg.Go(func() {
				<-begin
				got, err := s.ClaimDueJobs(ctx, now, next)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, j := range got {
					claims[claim{j.ID, j.NextRun}]++
				}
				mu.Unlock()
			})
		}
		close(begin)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	want := oneShots + recurring*rounds
	if len(claims) != want {
		t.Errorf("%d occurrences claimed, want %d", len(claims), want)
	}
	for c, n := range claims {
		if n != 1 {
			t.Errorf("%s due %v claimed %d times", c.id, c.due, n)
		}
	}
}

// Members starting together on a new database apply the schema once.
func TestPostgres_MembersMigrateTogether(t *testing.T) {
	url := pgURL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := store.Open(context.Background(), url)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestPostgres_RefusesNewerSchema(t *testing.T) {
	url := pgURL(t)
	mustClose(t, mustOpen(t, url))
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations(version, applied) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := store.Open(context.Background(), url); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema: got %v, want an error saying it is newer", err)
	}
}

func TestPostgres_PathHidesPasswordAndBackupRefuses(t *testing.T) {
	url := pgURL(t)
	// The test server trusts loopback, so any password is accepted.
	withPassword := strings.Replace(url, "postgres@", "postgres:s3cret@", 1)
	s := mustOpen(t, withPassword)
	if strings.Contains(s.Path(), "s3cret") || !strings.HasPrefix(s.Path(), "postgres://") {
		t.Fatalf("Path() = %q, want the URL without its password", s.Path())
	}
	err := store.Backup(context.Background(), url, filepath.Join(t.TempDir(), "copy.db"))
	if !errors.Is(err, store.ErrBackupPostgres) || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("Backup of a PostgreSQL URL: %v, want ErrBackupPostgres naming pg_dump", err)
	}
	if _, err := store.Open(context.Background(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
}

// Text a user can send but PostgreSQL cannot store as text (a NUL byte,
// invalid UTF-8) is stored with U+FFFD in its place there, not refused:
// the message and its turn are not lost.
func TestHostileText(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		ctx := context.Background()
		s := mustOpen(t, newDB(t))
		const key = "telegram:dm:9"
		text := "null\x00byte word"
		seq, err := s.Accept(ctx, key, &messages.UserMessage{SessionKey: key, MessageId: "m\x00", Text: text, SenderId: "9"})
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		if _, err := s.Accept(ctx, key, &messages.UserMessage{SessionKey: key, MessageId: "m\x00", Text: text}); !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("redelivery of the same id: %v, want ErrDuplicate", err)
		}
		p, err := s.Pending(ctx, key)
		if err != nil || len(p) != 1 || p[0].Message.GetText() != text || p[0].Message.GetInboxSeq() != seq {
			t.Fatalf("pending = %v, %v; want the envelope unchanged", p, err)
		}
		h, err := s.History(ctx, key, 0)
		if err != nil || len(h) != 1 || !strings.HasPrefix(h[0].Content, "null") || !strings.HasSuffix(h[0].Content, "word") {
			t.Fatalf("history = %v, %v", h, err)
		}
		if got, err := s.Search(ctx, key, "word", 5); err != nil || len(got) != 1 {
			t.Fatalf("search = %v, %v", got, err)
		}
		// Protobuf refuses invalid UTF-8 in an envelope; history takes it.
		if err := s.Append(ctx, store.Message{SessionKey: key, Role: store.Assistant, Content: "\xffbad utf8 answer"}); err != nil {
			t.Fatalf("append invalid UTF-8: %v", err)
		}
		if got, err := s.Search(ctx, key, "answer", 5); err != nil || len(got) != 1 || !strings.HasSuffix(got[0].Content, "bad utf8 answer") {
			t.Fatalf("search = %v, %v", got, err)
		}
		if _, err := s.AddMemory(ctx, store.SessionScope(key), "likes \x00 tea"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetCursor(ctx, "c\x00", "v\xff"); err != nil {
			t.Fatal(err)
		}
	})
}

// The server ends the store's connections (a restart, a failover, an
// administrator): writes fail at most briefly, then work again on new
// connections, and nothing committed is lost.
func TestPostgres_WriterSurvivesLostConnections(t *testing.T) {
	ctx := context.Background()
	url := pgURL(t)
	s := mustOpen(t, url)
	const key = "web:dm:reconnect"
	mustAppend(t, s, key, "before")
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var killed int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no store connection to end")
	}
	failed := 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Append(ctx, store.Message{SessionKey: key, Role: store.User, Content: "after"})
		if err == nil {
			break
		}
		failed++
		if time.Now().After(deadline) {
			t.Fatalf("writes still fail %d tries after the connections were ended: %v", failed, err)
		}
	}
	if failed > 1 {
		t.Errorf("%d writes failed after the connection was ended; want at most the one that found it broken", failed)
	}
	h, err := s.History(ctx, key, 0)
	if err != nil || contents(h) != "before after" {
		t.Fatalf("history = %q, %v; want \"before after\"", contents(h), err)
	}
}

// A platform redelivering an update to two members at once (a webhook retry
// that reaches another member): exactly one Accept stores it, the other gets
// ErrDuplicate.
func TestPostgres_ConcurrentAcceptOfOneUpdateStoresItOnce(t *testing.T) {
	ctx := context.Background()
	url := pgURL(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	const updates = 150
	for i := range updates {
		key := fmt.Sprintf("telegram:dm:%d", 700+i%5)
		m := &messages.UserMessage{SessionKey: key, MessageId: fmt.Sprint(i), Text: "hello"}
		results := make(chan error, 2)
		begin := make(chan struct{})
		for _, s := range []*store.Store{a, b} {
			go func() {
				<-begin
				_, err := s.Accept(ctx, key, m)
				results <- err
			}()
		}
		close(begin)
		ok, dup := 0, 0
		for range 2 {
			switch err := <-results; {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrDuplicate):
				dup++
			default:
				t.Fatalf("update %d: %v", i, err)
			}
		}
		if ok != 1 || dup != 1 {
			t.Fatalf("update %d: %d stored, %d duplicates; want 1 and 1", i, ok, dup)
		}
	}
	pending := 0
	for i := range 5 {
		p, err := a.Pending(ctx, fmt.Sprintf("telegram:dm:%d", 700+i))
		if err != nil {
			t.Fatal(err)
		}
		pending += len(p)
	}
	if pending != updates {
		t.Fatalf("%d pending inputs, want %d", pending, updates)
	}
}

// Wrong pairing codes tried on two members at once are all counted: the
// platform locks after exactly MaxFailures of them, half tried on each.
func TestPostgres_PairingFailuresCountedAcrossMembers(t *testing.T) {
	ctx := context.Background()
	url := pgURL(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	lim := store.PairingLimits{CodeTTL: time.Hour, MaxPending: 3, MaxFailures: 20, Lockout: time.Hour}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := a.RequestPairing(ctx, messages.Telegram, "55", "Eve", "ABCD2345", now, lim); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, s := range []*store.Store{a, b} {
		wg.Go(func() {
			for range lim.MaxFailures / 2 {
				if _, err := s.ApprovePairing(ctx, messages.Telegram, "WRONG000", now, lim); !errors.Is(err, store.ErrPairingCode) {
					t.Errorf("wrong code: %v, want ErrPairingCode", err)
				}
			}
		})
	}
	wg.Wait()
	if _, err := a.ApprovePairing(ctx, messages.Telegram, "ABCD2345", now, lim); !errors.Is(err, store.ErrPairingLocked) {
		t.Fatalf("right code after %d wrong ones on two members: %v, want ErrPairingLocked", lim.MaxFailures, err)
	}
}
