package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermesd/hermesd/store"
)

func TestUsage_BookedPerDayAndModel(t *testing.T) {
	forEachBackend(t, testUsage_BookedPerDayAndModel)
}

func testUsage_BookedPerDayAndModel(t *testing.T, newDB func(testing.TB) string) {
	clk := newClock()
	st := mustOpen(t, newDB(t), store.WithClock(clk.Now))
	ctx := context.Background()
	const key = "telegram:dm:42"
	for _, c := range []struct {
		model   string
		in, out int
	}{{"main", 100, 20}, {"main", 50, 5}, {"spare", 7, 3}} {
		if err := st.AddUsage(ctx, key, c.model, c.in, c.out); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(24 * time.Hour)
	if err := st.AddUsage(ctx, key, "main", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.AddUsage(ctx, "telegram:dm:43", "main", 999, 999); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Usage(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.UsageRow{
		{Day: "2026-03-01", Model: "main", Calls: 2, TokensIn: 150, TokensOut: 25},
		{Day: "2026-03-01", Model: "spare", Calls: 1, TokensIn: 7, TokensOut: 3},
		{Day: "2026-03-02", Model: "main", Calls: 1, TokensIn: 1, TokensOut: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	if st.Today() != "2026-03-02" {
		t.Errorf("today = %q", st.Today())
	}
	if err := st.AddUsage(ctx, "not a key", "main", 1, 1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad key: %v", err)
	}
	if err := st.AddUsage(ctx, key, "main", -1, 1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("negative tokens: %v", err)
	}
}

func TestSessionModel_PersistsAcrossReopen(t *testing.T) {
	forEachBackend(t, testSessionModel_PersistsAcrossReopen)
}

func testSessionModel_PersistsAcrossReopen(t *testing.T, newDB func(testing.TB) string) {
	path := newDB(t)
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.SessionModel(ctx, "web:dm:abc"); err != nil || m != "" {
		t.Fatalf("unset model = %q, %v", m, err)
	}
	if err := st.SetVoiceMode(ctx, "web:dm:abc", "tts"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetSessionModel(ctx, "web:dm:abc", "spare"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = mustOpen(t, path)
	m, err := st.SessionModel(ctx, "web:dm:abc")
	if err != nil || m != "spare" {
		t.Fatalf("model after reopen = %q, %v", m, err)
	}
	rec, err := st.Session(ctx, "web:dm:abc")
	if err != nil || rec.VoiceMode != "tts" {
		t.Errorf("other settings kept: %+v %v", rec, err)
	}
}

// AddUsageAsync queues the booking before it returns: a write queued after
// it (here a synchronous one) commits after it, so once that one returned
// the booking is read back; bad input is refused through done.
func TestUsage_AsyncBookingIsQueuedInOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newDB func(testing.TB) string) {
		st := mustOpen(t, newDB(t))
		ctx := context.Background()
		const key = "telegram:dm:44"
		done := make(chan error, 2)
		st.AddUsageAsync(key, "main", 10, 2, func(err error) { done <- err })
		if err := st.SetVoiceMode(ctx, key, "tts"); err != nil {
			t.Fatal(err)
		}
		rows, err := st.Usage(ctx, key)
		if err != nil || len(rows) != 1 || rows[0].TokensIn != 10 || rows[0].TokensOut != 2 {
			t.Fatalf("after a later write: %+v, %v", rows, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		st.AddUsageAsync(key, "main", -1, 0, func(err error) { done <- err })
		if err := <-done; !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("negative tokens: %v", err)
		}
	})
}
