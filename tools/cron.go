package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/schedule"
	"github.com/hermesd/hermesd/store"
)

// Bounds of the cronjob tool. A conversation's jobs are turns the model
// starts on its own, so their number and size are capped.
const (
	// MaxJobsPerSession is how many scheduled jobs one conversation may hold.
	MaxJobsPerSession = 20
	// MaxJobPrompt is the longest prompt a job may carry, in characters.
	MaxJobPrompt = 4000
)

// JobStore is what the cronjob tool needs of the store (*store.Store).
type JobStore interface {
	PutJob(ctx context.Context, j store.Job) error
	RemoveJob(ctx context.Context, key, id string) error
	JobsForSession(ctx context.Context, key string) ([]store.Job, error)
}

// Cronjob schedules prompts to run later as turns of the calling
// conversation: reminders ("in 10m"), repeating checks ("every 1h", cron
// expressions) and one-shots at a given time. A job always belongs to the
// conversation that created it — its session key comes from env, never from
// an argument — so a model cannot schedule work into, list or remove jobs of
// another chat. now and loc are the clock and the zone cron expressions run
// in; nil means time.Now and time.Local.
//
// The job's Created is the time its schedule was parsed at, so the
// scheduler rebuilds the same schedule with schedule.Parse(j.Schedule,
// j.Created, loc).
func Cronjob(st JobStore, now func() time.Time, loc *time.Location) Tool {
	if now == nil {
		now = time.Now
	}
	if loc == nil {
		loc = time.Local
	}
	c := cronTool{st: st, now: now, loc: loc}
	zone := loc.String()
	if zone == "Local" {
		zone = now().In(loc).Format("MST, UTC-07:00") // "Local" tells the model nothing
	}
	return Tool{
		Name: "cronjob",
		Description: "Schedule a prompt to run later in this chat, as if the user sent it then: reminders, " +
			"recurring checks, timed tasks. Actions: create (needs schedule and prompt), list, remove (needs id). " +
			"Schedules: a delay (\"10m\", \"2h\", \"1d\") runs once; \"every 30m\" repeats; a cron expression " +
			"(\"0 9 * * 1-5\", server time zone " + zone + ") repeats; an RFC 3339 time runs once then. " +
			"Write the prompt as an instruction to yourself, e.g. \"Remind the user: stretch\".",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["create","list","remove"]},` +
			`"schedule":{"type":"string","description":"When to run (create): 10m, every 1h, 0 9 * * *, 2026-05-01T09:00:00+02:00."},` +
			`"prompt":{"type":"string","description":"What to do when it runs (create)."},` +
			`"id":{"type":"string","description":"The job to remove (remove)."}},"required":["action"]}`),
		Run: c.run,
	}
}

type cronTool struct {
	st  JobStore
	now func() time.Time
	loc *time.Location
}

type cronArgs struct {
	Action   string `json:"action"`
	Schedule string `json:"schedule"`
	Prompt   string `json:"prompt"`
	ID       string `json:"id"`
}

func (c cronTool) run(ctx context.Context, env Env, args json.RawMessage) (string, error) {
	var a cronArgs
	if err := decode(args, &a); err != nil {
		return "", err
	}
	s, err := conversation(env)
	if err != nil {
		return "", fmt.Errorf("cronjob: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(a.Action)) {
	case "create", "add":
		return c.create(ctx, env, s, a)
	case "list":
		return c.list(ctx, s)
	case "remove", "delete", "cancel":
		return c.remove(ctx, env, s, a.ID)
	default:
		return "", fmt.Errorf("%w: action %q, want create, list or remove", ErrBadArguments, a.Action)
	}
}

func (c cronTool) create(ctx context.Context, env Env, s messages.Session, a cronArgs) (string, error) {
	prompt := strings.TrimSpace(a.Prompt)
	switch {
	case prompt == "":
		return "", fmt.Errorf("%w: prompt is empty: say what to do when the job runs", ErrBadArguments)
	case len([]rune(prompt)) > MaxJobPrompt:
		return "", fmt.Errorf("%w: prompt is %d characters, at most %d allowed", ErrBadArguments, len([]rune(prompt)), MaxJobPrompt)
	}
	// The store keeps milliseconds: parse at the time it will store, so the
	// scheduler rebuilds exactly this schedule from the job.
	now := c.now().Truncate(time.Millisecond)
	spec := strings.TrimSpace(a.Schedule)
	sched, err := schedule.Parse(spec, now, c.loc)
	if err != nil {
		return "", fmt.Errorf("%w: schedule: %w", ErrBadArguments, err)
	}
	next, _ := sched.Next(now) // Parse refuses schedules that never run
	existing, err := c.st.JobsForSession(ctx, s.Key())
	if err != nil {
		return "", fmt.Errorf("cronjob: %w", err)
	}
	if len(existing) >= MaxJobsPerSession {
		return "", fmt.Errorf("cronjob: this chat already has %d scheduled jobs, the most allowed; remove one first", len(existing))
	}
	id, err := newJobID()
	if err != nil {
		return "", fmt.Errorf("cronjob: %w", err)
	}
	j := store.Job{ID: id, SessionKey: s.Key(), Schedule: spec, Prompt: prompt, NextRun: next, Once: sched.Once(), Created: now}
	if err := c.st.PutJob(ctx, j); err != nil {
		return "", fmt.Errorf("cronjob: %w", err)
	}
	env.JobsChanged()
	when := fmt.Sprintf("at %s (in %s)", next.In(c.loc).Format(time.RFC3339), schedule.FormatDuration(next.Sub(now).Round(time.Second)))
	if sched.Once() {
		return fmt.Sprintf("Scheduled job %s: runs once %s.", id, when), nil
	}
	return fmt.Sprintf("Scheduled job %s: runs %s, first %s.", id, sched, when), nil
}

// jobView is one job as the model sees it.
type jobView struct {
	ID       string `json:"id"`
	Schedule string `json:"schedule"`
	Prompt   string `json:"prompt"`
	NextRun  string `json:"next_run,omitempty"`
	LastRun  string `json:"last_run,omitempty"`
	Once     bool   `json:"once"`
	Disabled bool   `json:"disabled,omitempty"`
}

func (c cronTool) list(ctx context.Context, s messages.Session) (string, error) {
	jobs, err := c.st.JobsForSession(ctx, s.Key())
	if err != nil {
		return "", fmt.Errorf("cronjob: %w", err)
	}
	out := struct {
		Jobs []jobView `json:"jobs"`
	}{Jobs: make([]jobView, 0, len(jobs))}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, jobView{
			ID: j.ID, Schedule: j.Schedule, Prompt: clip(j.Prompt, 300), Once: j.Once, Disabled: j.Disabled,
			NextRun: c.stamp(j.NextRun), LastRun: c.stamp(j.LastRun),
		})
	}
	return jsonResult(out)
}

func (c cronTool) stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(c.loc).Format(time.RFC3339)
}

func (c cronTool) remove(ctx context.Context, env Env, s messages.Session, id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", fmt.Errorf("%w: id is empty: list the jobs to find it", ErrBadArguments)
	}
	// The store only deletes a job of this session: another chat's id is
	// indistinguishable from one that does not exist.
	if err := c.st.RemoveJob(ctx, s.Key(), id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("cronjob: no such job %q in this chat", id)
		}
		return "", fmt.Errorf("cronjob: %w", err)
	}
	env.JobsChanged()
	return fmt.Sprintf("Removed job %s.", id), nil
}

// newJobID returns a random id, short enough for a user to read back and
// wide enough (48 bits) that ids of all sessions never collide in practice.
func newJobID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("job id: %w", err)
	}
	return "job_" + hex.EncodeToString(b[:]), nil
}

// conversation returns the session a tool works for, refusing the zero
// Session: a tool never acts without a conversation of its own.
func conversation(env Env) (messages.Session, error) {
	s := env.Session()
	if !s.Valid() {
		return messages.Session{}, errors.New("this call is not bound to a conversation")
	}
	return s, nil
}

// jsonResult encodes a tool result without HTML escaping, so "<" and "&"
// in users' text stay readable.
func jsonResult(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	return strings.TrimSpace(buf.String()), nil
}
