package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/messages"
)

// Jobs is where the scheduler finds due work. Claim returns the jobs due at
// now and marks them run (computing each repeating job's next run from now,
// so a job missed while the daemon was down runs once, not once per missed
// period). A job is claimed before it fires: a crash in between loses that
// one run rather than repeating it.
type Jobs interface {
	Claim(ctx context.Context, now time.Time) ([]*messages.ScheduledFire, error)
}

// schedulerActor fires persisted jobs into the router by session key, so a
// job's session is activated from its key exactly as for a live message and
// the job runs as a child of that session.
type schedulerActor struct {
	rt    *Runtime
	jobs  Jobs
	stop  func()
	busy  bool
	again bool
}

type schedulerTick struct{}

type schedulerDone struct {
	fired []*messages.ScheduledFire
	err   error
}

// Receive handles lifecycle first, then ticks.
func (s *schedulerActor) Receive(c actor.Context) {
	rethrowWork(c.Message())
	switch m := c.Message().(type) {
	case *actor.Started:
		iv := s.rt.cfg.SchedulerInterval
		s.stop = every(c.ActorSystem().Root, c.Self(), 0, iv, &schedulerTick{})
	case *actor.Stopping, *actor.Restarting:
		if s.stop != nil {
			s.stop()
		}
	case *schedulerTick:
		if s.busy {
			s.again = true
			return
		}
		s.claim(c)
	case *schedulerDone:
		s.busy = false
		if m.err != nil {
			s.rt.log.Error("scheduler: claim due jobs", "err", m.err)
		}
		for _, f := range m.fired {
			s.rt.log.Info("job due", "session", f.GetSessionKey(), "job", f.GetJobId())
			if err := s.rt.Fire(f); err != nil {
				s.rt.log.Error("fire job", "session", f.GetSessionKey(), "job", f.GetJobId(), "err", err)
			}
		}
		if s.again {
			s.again = false
			s.claim(c)
		}
	}
}

// claim queries the store off the actor's goroutine.
func (s *schedulerActor) claim(c actor.Context) {
	s.busy = true
	jobs, timeout := s.jobs, s.rt.cfg.StoreTimeout
	goSend(c, func() any {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		fired, err := jobs.Claim(ctx, time.Now())
		return &schedulerDone{fired, err}
	})
}
