package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/schedule"
	"github.com/hermesd/hermesd/skills"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/tools"
)

// memoryBudget bounds the memories injected into a system prompt.
const memoryBudget = 4 << 10

// agentTools builds the built-in tools over the store and the skills
// library in HERMES_HOME/skills, and the prompt context they feed.
func (d *Daemon) agentTools(extra []tools.Tool) (*tools.Registry, error) {
	lib, err := skills.Open(filepath.Join(d.cfg.Home, "skills"), skills.WithLogger(d.log))
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	d.skills = lib
	d.memories = newMemoryCache(d.store)
	d.closers = append(d.closers, func() { lib.Close() })
	ts := []tools.Tool{
		tools.TextToSpeech(),
		tools.CurrentTime(nil),
		tools.Memory(d.memories),
		tools.Skills(lib),
		tools.Cronjob(d.store, time.Now, time.Local),
		tools.SessionSearch(d.store),
		tools.Delegate(),
	}
	acting, err := d.actingTools()
	if err != nil {
		return nil, err
	}
	ts = append(ts, acting...)
	return tools.NewRegistry(append(ts, extra...)...)
}

// promptContext is what every turn's system prompt gets beyond the
// configured prompt: what the agent remembers about this user and
// conversation, and the skills it has.
func (d *Daemon) promptContext(ctx context.Context, s messages.Session, senderID string) string {
	var parts []string
	if mem, err := tools.MemoryPrompt(ctx, d.memories, s, senderID, memoryBudget); err != nil {
		d.log.Warn("load memories for prompt", "session", s.Key(), "err", err)
	} else if mem != "" {
		parts = append(parts, mem)
	}
	if sk := tools.SkillsPrompt(d.skills); sk != "" {
		parts = append(parts, sk)
	}
	return strings.Join(parts, "\n\n")
}

// jobClaimer is the scheduler's view of the store: it claims due jobs and
// computes each repeating job's next run from now.
type jobClaimer struct {
	st  *store.Store
	loc *time.Location
	log interface {
		Warn(msg string, args ...any)
	}
}

var _ actors.Jobs = jobClaimer{}

// Claim implements actors.Jobs. A job is marked run before it is fired, so
// a crash in between loses that run instead of repeating it; a job missed
// while the daemon was down runs once, then resumes its schedule.
func (j jobClaimer) Claim(ctx context.Context, now time.Time) ([]*messages.ScheduledFire, error) {
	due, err := j.st.DueJobs(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("due jobs: %w", err)
	}
	var fired []*messages.ScheduledFire
	for _, job := range due {
		if ctx.Err() != nil {
			break // the rest stay due: the next tick claims them
		}
		var next *time.Time
		// Rebuild the schedule as of its creation, as the tool parsed it.
		sched, perr := schedule.Parse(job.Schedule, job.Created, j.loc)
		if perr != nil {
			j.log.Warn("job schedule no longer parses; running it once", "session", job.SessionKey, "job", job.ID, "err", perr)
		} else if !sched.Once() {
			if n, ok := sched.Next(now); ok {
				next = &n
			}
		}
		// The claim waits for its commit even past ctx: a write abandoned on
		// a deadline may still commit, and a job marked run that is not
		// fired is a lost run.
		if err := j.st.MarkJobRun(context.WithoutCancel(ctx), job.ID, now, next); err != nil {
			if errors.Is(err, store.ErrJobNotDue) || errors.Is(err, store.ErrNotFound) {
				continue // claimed elsewhere, or removed meanwhile
			}
			return fired, fmt.Errorf("claim job %s: %w", job.ID, err)
		}
		fired = append(fired, &messages.ScheduledFire{SessionKey: job.SessionKey, JobId: job.ID, Prompt: job.Prompt, DueUnixMs: job.NextRun.UnixMilli()})
	}
	return fired, nil
}
