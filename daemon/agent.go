package daemon

import (
	"context"
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
	d.skills = tools.SkillSources{
		Shared:  lib,
		ChatDir: filepath.Join(d.cfg.Home, "chat-skills"),
		Admins:  d.cfg.AdminUsers,
		Log:     d.log,
	}
	d.memories = newMemoryCache(d.store)
	d.closers = append(d.closers, func() { lib.Close() })
	ts := []tools.Tool{
		tools.TextToSpeech(),
		tools.CurrentTime(nil),
		tools.Memory(d.memories),
		tools.Skills(d.skills),
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
// conversation, and the skills this chat can load (the shared ones and its
// own), both quoted as data.
func (d *Daemon) promptContext(ctx context.Context, s messages.Session, senderID string) string {
	var parts []string
	if mem, err := tools.MemoryPrompt(ctx, d.memories, s, senderID, memoryBudget); err != nil {
		d.log.Warn("load memories for prompt", "session", s.Key(), "err", err)
	} else if mem != "" {
		parts = append(parts, mem)
	}
	if sk := tools.SkillsPrompt(d.skills, s); sk != "" {
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

// Claim implements actors.Jobs. Every due job is claimed in one write (a
// thousand due jobs used to cost a thousand sequential commits, long enough
// under load to fire reminders a minute late), and the claim waits for its
// commit even past ctx: a write abandoned on a deadline may still commit,
// and a job marked run that is not fired is a lost run. A job missed while
// the daemon was down runs once, then resumes its schedule.
func (j jobClaimer) Claim(ctx context.Context, now time.Time) ([]*messages.ScheduledFire, error) {
	claimed, err := j.st.ClaimDueJobs(context.WithoutCancel(ctx), now, func(job store.Job) *time.Time {
		// Rebuild the schedule as of its creation, as the tool parsed it.
		sched, perr := schedule.Parse(job.Schedule, job.Created, j.loc)
		if perr != nil {
			j.log.Warn("job schedule no longer parses; running it once", "session", job.SessionKey, "job", job.ID, "err", perr)
			return nil
		}
		if sched.Once() {
			return nil
		}
		if n, ok := sched.Next(now); ok {
			return &n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	fired := make([]*messages.ScheduledFire, 0, len(claimed))
	for _, job := range claimed {
		fired = append(fired, &messages.ScheduledFire{SessionKey: job.SessionKey, JobId: job.ID, Prompt: job.Prompt, DueUnixMs: job.NextRun.UnixMilli()})
	}
	return fired, nil
}
