package tools_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/schedule"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/tools"
)

const (
	keyA = "telegram:dm:100"
	keyB = "discord:group:200:u7"
)

// t0 is the fixed "now" of the cron tests (with sub-millisecond noise, as a
// real clock has).
var t0 = time.Date(2026, 3, 2, 10, 20, 30, 123456789, time.UTC)

func cronTool(st tools.JobStore) tools.Tool {
	return tools.Cronjob(st, func() time.Time { return t0 }, time.UTC)
}

func jobsOf(t *testing.T, st *store.Store, key string) []store.Job {
	t.Helper()
	jobs, err := st.JobsForSession(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// The offline assistant's "remind me in 10s to stretch" call stores a
// one-shot job for this chat that comes due 10 s later, and wakes the
// scheduler.
func TestCronjob_RemindIn10s(t *testing.T) {
	st := openStore(t)
	env := newEnv(keyA, "100")
	out := mustCall(t, cronTool(st), env, `{"action":"create","schedule":"10s","prompt":"Remind the user: stretch"}`)

	jobs := jobsOf(t, st, keyA)
	if len(jobs) != 1 {
		t.Fatalf("jobs of %s = %+v, want one", keyA, jobs)
	}
	j := jobs[0]
	due := t0.Truncate(time.Millisecond).Add(10 * time.Second)
	if !j.NextRun.Equal(due) || !j.Once || j.Prompt != "Remind the user: stretch" || j.SessionKey != keyA {
		t.Errorf("job = %+v, want a one-shot for %s due at %v", j, keyA, due)
	}
	if !strings.Contains(out, j.ID) || !strings.Contains(out, "in 10s") {
		t.Errorf("answer %q does not name the job id %s and when it runs", out, j.ID)
	}
	if env.changes() != 1 {
		t.Errorf("JobsChanged called %d times, want 1", env.changes())
	}
	// The scheduler finds it due at that time, not before.
	if early, _ := st.DueJobs(context.Background(), due.Add(-time.Second)); len(early) != 0 {
		t.Errorf("job due a second early: %+v", early)
	}
	if dueJobs, _ := st.DueJobs(context.Background(), due); len(dueJobs) != 1 || dueJobs[0].SessionKey != keyA {
		t.Errorf("due jobs at %v = %+v, want this chat's job", due, dueJobs)
	}
}

// A job belongs to the calling chat whatever the arguments say.
func TestCronjob_SessionFromEnvNotArguments(t *testing.T) {
	st := openStore(t)
	env := newEnv(keyA, "100")
	mustCall(t, cronTool(st), env, fmt.Sprintf(`{"action":"create","schedule":"every 1h","prompt":"post the news",`+
		`"session_key":%q,"session":%q,"key":%q,"chat_id":"200"}`, keyB, keyB, keyB))
	if got := jobsOf(t, st, keyB); len(got) != 0 {
		t.Errorf("a job landed in %s: %+v", keyB, got)
	}
	if got := jobsOf(t, st, keyA); len(got) != 1 || got[0].SessionKey != keyA {
		t.Errorf("jobs of %s = %+v, want the new job", keyA, got)
	}
}

func TestCronjob_OtherChatsJobsAreInvisible(t *testing.T) {
	st := openStore(t)
	cron := cronTool(st)
	a, b := newEnv(keyA, "100"), newEnv(keyB, "7")
	mustCall(t, cron, a, `{"action":"create","schedule":"0 9 * * *","prompt":"morning summary for A"}`)
	mustCall(t, cron, b, `{"action":"create","schedule":"30m","prompt":"reminder for B"}`)
	idA := jobsOf(t, st, keyA)[0].ID

	type listed struct {
		Jobs []struct{ ID, Prompt string }
	}
	got := decodeResult[listed](t, mustCall(t, cron, b, `{"action":"list"}`))
	if len(got.Jobs) != 1 || got.Jobs[0].Prompt != "reminder for B" {
		t.Errorf("B lists %+v, want only its own job", got.Jobs)
	}

	before := b.changes()
	_, err := call(t, cron, b, fmt.Sprintf(`{"action":"remove","id":%q}`, idA))
	if err == nil || !strings.Contains(err.Error(), "no such job") {
		t.Errorf("B removing A's job: err = %v, want no such job", err)
	}
	if len(jobsOf(t, st, keyA)) != 1 {
		t.Error("B removed A's job")
	}
	if b.changes() != before {
		t.Error("a refused remove woke the scheduler")
	}

	if out := mustCall(t, cron, a, fmt.Sprintf(`{"action":"remove","id":%q}`, idA)); !strings.Contains(out, idA) {
		t.Errorf("remove answer %q does not name the job", out)
	}
	if len(jobsOf(t, st, keyA)) != 0 {
		t.Error("A could not remove its own job")
	}
	if got := decodeResult[listed](t, mustCall(t, cron, a, `{"action":"list"}`)); len(got.Jobs) != 0 {
		t.Errorf("A lists %+v after removing its job", got.Jobs)
	}
}

func TestCronjob_BadArguments(t *testing.T) {
	st := openStore(t)
	env := newEnv(keyA, "100")
	cases := []struct{ args, want string }{
		{`{"action":"create","schedule":"every 1s","prompt":"spam"}`, "shorter than the minimum of 10s"},
		{`{"action":"create","schedule":"2020-01-01T00:00:00Z","prompt":"x"}`, "is in the past"},
		{`{"action":"create","schedule":"61 * * * *","prompt":"x"}`, "minute field \"61\": 61 is out of range 0-59"},
		{`{"action":"create","schedule":"whenever","prompt":"x"}`, "cannot read \"whenever\""},
		{`{"action":"create","schedule":"","prompt":"x"}`, "empty schedule"},
		{`{"action":"create","schedule":"10m","prompt":"  "}`, "prompt is empty"},
		{`{"action":"create","schedule":"10m","prompt":"` + strings.Repeat("x", tools.MaxJobPrompt+1) + `"}`, "at most 4000"},
		{`{"action":"remove"}`, "id is empty"},
		{`{"action":"explode"}`, "want create, list or remove"},
		{`{"action":`, "bad arguments"},
	}
	for _, c := range cases {
		_, err := call(t, cronTool(st), env, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80s: err = %v, want it to contain %q", c.args, err, c.want)
		}
	}
	if jobs := jobsOf(t, st, keyA); len(jobs) != 0 || env.changes() != 0 {
		t.Errorf("refused calls stored %+v and woke the scheduler %d times", jobs, env.changes())
	}
}

func TestCronjob_LimitPerChat(t *testing.T) {
	st := openStore(t)
	a, b := newEnv(keyA, "100"), newEnv(keyB, "7")
	for i := range tools.MaxJobsPerSession {
		mustCall(t, cronTool(st), a, fmt.Sprintf(`{"action":"create","schedule":"%dm","prompt":"job %d"}`, i+1, i))
	}
	_, err := call(t, cronTool(st), a, `{"action":"create","schedule":"1h","prompt":"one too many"}`)
	if err == nil || !strings.Contains(err.Error(), "remove one first") {
		t.Errorf("job %d: err = %v, want the limit", tools.MaxJobsPerSession+1, err)
	}
	// Another chat has its own allowance.
	mustCall(t, cronTool(st), b, `{"action":"create","schedule":"1h","prompt":"B is fine"}`)
}

// The scheduler rebuilds a job's schedule from what the tool stored and
// gets the same next run.
func TestCronjob_ScheduleRebuildsFromJob(t *testing.T) {
	st := openStore(t)
	env := newEnv(keyA, "100")
	for _, spec := range []string{"10s", "every 5m", "*/15 * * * *", "2026-04-01T09:00:00+02:00"} {
		mustCall(t, cronTool(st), env, fmt.Sprintf(`{"action":"create","schedule":%q,"prompt":"p"}`, spec))
	}
	for _, j := range jobsOf(t, st, keyA) {
		s, err := schedule.Parse(j.Schedule, j.Created, time.UTC)
		if err != nil {
			t.Fatalf("rebuild %q: %v", j.Schedule, err)
		}
		next, ok := s.Next(j.Created)
		if !ok || !next.Equal(j.NextRun) || s.Once() != j.Once {
			t.Errorf("%q rebuilt: next %v once %v; stored %v once %v", j.Schedule, next, s.Once(), j.NextRun, j.Once)
		}
	}
}

func TestCronjob_RefusesUnboundCall(t *testing.T) {
	st := openStore(t)
	env := &fakeEnv{session: messages.Session{}}
	if _, err := call(t, cronTool(st), env, `{"action":"list"}`); err == nil {
		t.Fatal("a call without a conversation listed jobs")
	}
}
