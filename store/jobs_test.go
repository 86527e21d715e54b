package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermesd/hermesd/store"
)

// A scheduler claims due jobs with MarkJobRun and fires only what it claimed:
// a one-shot job fires exactly once, even if the daemon restarts after
// firing it and sees the same due time again.
func TestJobs_OneShotFiresOnceAcrossRestart(t *testing.T) {
	forEachBackend(t, testJobs_OneShotFiresOnceAcrossRestart)
}

func testJobs_OneShotFiresOnceAcrossRestart(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	s := mustOpen(t, path)
	job := store.Job{ID: "remind-1", SessionKey: "telegram:dm:1", Schedule: "in 5m", Prompt: "stretch", NextRun: now, Once: true}
	if err := s.PutJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	fired := 0
	runScheduler := func(s *store.Store) {
		t.Helper()
		due, err := s.DueJobs(ctx, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range due {
			err := s.MarkJobRun(ctx, j.ID, now.Add(time.Minute), nil)
			if errors.Is(err, store.ErrJobNotDue) || errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			fired++
		}
	}
	if due, _ := s.DueJobs(ctx, now.Add(-time.Second)); len(due) != 0 {
		t.Fatalf("job due before its time: %+v", due)
	}
	runScheduler(s)
	runScheduler(s)
	mustClose(t, s)
	s = mustOpen(t, path)
	runScheduler(s)
	if fired != 1 {
		t.Fatalf("one-shot job fired %d times, want 1", fired)
	}
	if err := s.MarkJobRun(ctx, "remind-1", now.Add(time.Minute), nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second claim = %v, want ErrNotFound", err)
	}
	if js, _ := s.JobsForSession(ctx, "telegram:dm:1"); len(js) != 0 {
		t.Fatalf("one-shot job still listed after it ran: %+v", js)
	}
}

func TestJobs_RecurringAndScoped(t *testing.T) { forEachBackend(t, testJobs_RecurringAndScoped) }

func testJobs_RecurringAndScoped(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	const key = "discord:thread:1:2"
	j := store.Job{ID: "daily", SessionKey: key, Schedule: "0 8 * * *", Prompt: "news", NextRun: t0}
	if err := s.PutJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	next := t0.Add(24 * time.Hour)
	if err := s.MarkJobRun(ctx, "daily", t0, &next); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkJobRun(ctx, "daily", t0, &next); !errors.Is(err, store.ErrJobNotDue) {
		t.Fatalf("claiming the same occurrence twice = %v, want ErrJobNotDue", err)
	}
	js, err := s.JobsForSession(ctx, key)
	if err != nil || len(js) != 1 {
		t.Fatalf("JobsForSession = %+v, %v", js, err)
	}
	if !js[0].NextRun.Equal(next) || !js[0].LastRun.Equal(t0) || js[0].Disabled {
		t.Fatalf("after a run: %+v", js[0])
	}

	// Another session can neither take over nor remove the job.
	stolen := j
	stolen.SessionKey = "discord:dm:666"
	if err := s.PutJob(ctx, stolen); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PutJob from another session = %v, want ErrNotFound", err)
	}
	if err := s.RemoveJob(ctx, "discord:dm:666", "daily"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RemoveJob from another session = %v, want ErrNotFound", err)
	}
	// With no next run a recurring job is disabled, not deleted.
	if err := s.MarkJobRun(ctx, "daily", next, nil); err != nil {
		t.Fatal(err)
	}
	if js, _ := s.JobsForSession(ctx, key); len(js) != 1 || !js[0].Disabled {
		t.Fatalf("job after its last run: %+v", js)
	}
	if due, _ := s.DueJobs(ctx, next.Add(48*time.Hour)); len(due) != 0 {
		t.Fatalf("disabled job is due: %+v", due)
	}
	if err := s.RemoveJob(ctx, key, "daily"); err != nil {
		t.Fatal(err)
	}
}

// ClaimDueJobs claims every due job in one write, each occurrence once:
// a one-shot job is gone, a recurring one moves on, a job not yet due stays,
// and a second claim of the same moment finds nothing.
func TestJobs_ClaimDueJobsClaimsEachOccurrenceOnce(t *testing.T) {
	forEachBackend(t, testJobs_ClaimDueJobsClaimsEachOccurrenceOnce)
}

func testJobs_ClaimDueJobsClaimsEachOccurrenceOnce(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, j := range []store.Job{
		{ID: "once", SessionKey: "telegram:dm:1", Schedule: "in 5m", Prompt: "a", NextRun: now.Add(-time.Minute), Once: true},
		{ID: "hourly", SessionKey: "discord:dm:2", Schedule: "every 1h", Prompt: "b", NextRun: now},
		{ID: "later", SessionKey: "web:dm:c", Schedule: "in 1h", Prompt: "c", NextRun: now.Add(time.Hour), Once: true},
	} {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	next := func(store.Job) *time.Time { n := now.Add(time.Hour); return &n }
	claimed, err := s.ClaimDueJobs(ctx, now, next)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 2 || claimed[0].ID != "once" || claimed[1].ID != "hourly" {
		t.Fatalf("claimed %+v, want once and hourly, oldest first", claimed)
	}
	if again, err := s.ClaimDueJobs(ctx, now, next); err != nil || len(again) != 0 {
		t.Fatalf("second claim of the same moment = %+v, %v", again, err)
	}
	due, err := s.DueJobs(ctx, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 || due[0].ID != "hourly" || due[1].ID != "later" {
		t.Fatalf("due an hour later: %+v; want hourly (moved on) and later", due)
	}
}
