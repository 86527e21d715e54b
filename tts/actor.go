package tts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
)

// Errors the TTS actor answers with (inside *messages.SpeechFailed).
var (
	// ErrBusy means every worker was busy and the queue stayed full for
	// the whole wait bound: the request was refused, not lost.
	ErrBusy = errors.New("tts busy")
	// ErrClosed means the worker pool was shut down, or the actor stopped,
	// before the request ran.
	ErrClosed = errors.New("tts closed")
	// ErrUnknownPlatform means the request's session is on a platform with
	// no declared capabilities, so there is no format to choose; there is
	// no default.
	ErrUnknownPlatform = errors.New("platform has no declared capabilities")
)

// Defaults for ActorConfig.
const (
	// DefaultQueuePerWorker sizes the queue: this many waiting jobs per
	// worker. Cron jobs fire in bursts (every reminder set for 9:00), and a
	// queued request costs a few hundred bytes, so absorb bursts here
	// rather than fail them.
	DefaultQueuePerWorker = 64
	// DefaultMaxWait is how long a request waits for room in a full queue
	// before it is answered ErrBusy. A user would rather hear a reminder
	// late than be told the speech engine is busy.
	DefaultMaxWait = 30 * time.Second
	// DefaultMaxWaiting bounds the requests waiting for room; past it a
	// request is answered ErrBusy at once.
	DefaultMaxWaiting = 1024
	// DefaultSpeakTimeout bounds one synthesis (a cloud call included).
	DefaultSpeakTimeout = 2 * time.Minute
)

// Speaker is the work the TTS actor's workers do; *Synthesizer implements it.
type Speaker interface {
	Speak(ctx context.Context, text, voice string, format messages.AudioFormat) (*messages.Speech, error)
}

var _ Speaker = (*Synthesizer)(nil)

// ActorConfig configures the TTS actor and its worker pool.
type ActorConfig struct {
	// Speaker does the synthesis; required.
	Speaker Speaker
	// Capabilities returns a platform's declared capabilities; the actor
	// encodes for the VoiceFormat of the platform in each request's
	// envelope. Required.
	Capabilities func(messages.Platform) (messages.Capabilities, bool)
	// Guard refuses and counts requests without identity; required.
	Guard *identity.Guard
	// Workers is the number of concurrent syntheses; 0 means
	// runtime.GOMAXPROCS(0): encoding is CPU-bound.
	Workers int
	// QueueSize is how many accepted requests may wait for a worker; 0
	// means DefaultQueuePerWorker × Workers.
	QueueSize int
	// MaxWait is how long a request waits for room when the queue is full;
	// 0 means DefaultMaxWait.
	MaxWait time.Duration
	// MaxWaiting bounds the requests waiting for room; 0 means
	// DefaultMaxWaiting.
	MaxWaiting int
	// Timeout bounds one synthesis; 0 means DefaultSpeakTimeout.
	Timeout time.Duration
	// Log receives warnings (refusals, failures, busy); nil discards.
	Log *slog.Logger
	// Observe, if set, is told about every synthesis (the metrics hook):
	// the requesting platform, the format, how long it took and its error.
	Observe func(platform messages.Platform, format messages.AudioFormat, d time.Duration, err error)
}

// Pool is the TTS actor's worker pool. Its owner (the daemon's wiring)
// closes it at shutdown, after the actor has stopped.
type Pool struct {
	cfg    ActorConfig
	jobs   chan *job
	ctx    context.Context // cancelled to abort running syntheses
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// waiters counts requests waiting for room in the queue; workers wake
	// the actor after each job only while it is positive.
	waiters atomic.Int64

	mu     sync.RWMutex // guards closed against sends on the closed jobs channel
	closed bool
}

// errQueueFull is tryEnqueue's answer when the queue has no room.
var errQueueFull = errors.New("queue full")

// job is one accepted request.
type job struct {
	session  messages.Session
	text     string
	voice    string
	format   messages.AudioFormat
	sender   *actor.PID // who gets the reply: an actor or a future
	self     *actor.PID // the TTS actor, woken when a queue slot frees
	root     *actor.RootContext
	accepted time.Time
	deadline time.Time // while waiting for room
}

// NewActor validates cfg, starts the worker pool and returns the props of
// the TTS actor with the pool that serves it. Spawn the props once; close
// the pool after stopping the actor.
//
// The actor handles *messages.SynthesizeSpeech and answers *messages.Speech
// or *messages.SpeechFailed (or *identity.Refused, from the guard, for a
// request without identity). The format comes from the platform of the
// session stamped in the request's envelope, never from the request. The
// actor never blocks: work runs on the pool, and replies are sent from the
// worker to the captured sender, stamped with the request's session.
func NewActor(cfg ActorConfig) (*actor.Props, *Pool, error) {
	switch {
	case cfg.Speaker == nil:
		return nil, nil, errors.New("tts actor: no Speaker")
	case cfg.Capabilities == nil:
		return nil, nil, errors.New("tts actor: no Capabilities lookup")
	case cfg.Guard == nil:
		return nil, nil, errors.New("tts actor: no identity Guard")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueuePerWorker * cfg.Workers
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = DefaultMaxWaiting
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultSpeakTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p := &Pool{cfg: cfg, jobs: make(chan *job, cfg.QueueSize)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go p.work()
	}
	props := actor.PropsFromProducer(
		func() actor.Actor { return &ttsActor{pool: p} },
		actor.WithReceiverMiddleware(cfg.Guard.Middleware()),
	)
	return props, p, nil
}

// Close stops accepting work, lets queued and running syntheses finish
// until ctx ends, then cancels the rest (their requesters get an error
// reply). It returns ctx's error if it had to cancel.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		p.cancel()
		<-done
	}
	p.cancel()
	return err
}

// tryEnqueue hands j to the workers without blocking.
func (p *Pool) tryEnqueue(j *job) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	select {
	case p.jobs <- j:
		return nil
	default:
		return errQueueFull
	}
}

// work runs jobs until the pool is closed and drained.
func (p *Pool) work() {
	defer p.wg.Done()
	for j := range p.jobs {
		p.run(j)
		if p.waiters.Load() > 0 {
			j.root.Send(j.self, &slotFreed{})
		}
	}
}

// run performs one job and replies to its sender.
func (p *Pool) run(j *job) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.Timeout)
	defer cancel()
	start := time.Now()
	sp, err := p.speak(ctx, j)
	if p.cfg.Observe != nil {
		p.cfg.Observe(j.session.Platform(), j.format, time.Since(start), err)
	}
	if err != nil {
		p.fail(j, err)
		return
	}
	reply(j.root, j.sender, j.session, sp)
}

// speak calls the Speaker, turning a panic into an error: a bad clip must
// cost one reply, not the daemon.
func (p *Pool) speak(ctx context.Context, j *job) (sp *messages.Speech, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tts: synthesis panicked: %v", r)
		}
	}()
	if err := p.ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	sp, err = p.cfg.Speaker.Speak(ctx, j.text, j.voice, j.format)
	switch {
	case err != nil:
		return nil, fmt.Errorf("tts for %s: %w", j.session.Key(), err)
	case sp == nil || sp.Format != j.format:
		return nil, fmt.Errorf("tts for %s: speaker returned the wrong format for %s", j.session.Key(), j.format)
	}
	return sp, nil
}

// fail answers j with err and logs it.
func (p *Pool) fail(j *job, err error) {
	p.cfg.Log.Warn("speech failed", "session", j.session.Key(), "format", j.format.String(), "err", err)
	reply(j.root, j.sender, j.session, &messages.SpeechFailed{Err: err})
}

// reply sends msg to the requester with the session it concerns stamped in
// the envelope, so the identity travels with the answer as it did with the
// request. Futures unwrap envelopes, so this works for RequestFuture too.
func reply(root *actor.RootContext, to *actor.PID, s messages.Session, msg any) {
	h := map[string]string{}
	if s.Valid() {
		h[identity.HeaderKey] = s.Key()
	}
	root.Send(to, &actor.MessageEnvelope{Header: h, Message: msg})
}

// slotFreed is sent by a worker to the actor after a job while requests are
// waiting for room.
type slotFreed struct{}

// waitExpired is sent by the actor's timer when the oldest waiting request
// reaches its deadline; gen tells a stale timer from the current one.
type waitExpired struct{ gen uint64 }

// ttsActor accepts requests, chooses their format and hands them to the
// pool. Requests that find the queue full wait here, in order, never on a
// goroutine of their own.
type ttsActor struct {
	pool     *Pool
	waiting  []*job // FIFO of requests waiting for room
	timer    *time.Timer
	timerGen uint64
}

// Receive implements actor.Actor.
func (a *ttsActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
	case *actor.Stopping:
		a.failWaiting(fmt.Errorf("%w: tts actor stopping", ErrClosed))
	case *actor.Restarting:
		a.failWaiting(fmt.Errorf("%w: tts actor restarting", ErrClosed))
	case *actor.Stopped:
	case *messages.SynthesizeSpeech:
		a.handleSynthesize(c, m)
	case *slotFreed:
		a.drain(c)
	case *waitExpired:
		if m.gen == a.timerGen {
			a.timer = nil
		}
		a.drain(c)
	default:
		a.pool.cfg.Log.Warn("tts actor: unhandled message", "type", fmt.Sprintf("%T", m))
	}
}

func (a *ttsActor) handleSynthesize(c actor.Context, m *messages.SynthesizeSpeech) {
	sender := c.Sender()
	if sender == nil {
		a.pool.cfg.Log.Warn("tts actor: request sent without a sender, nobody to answer; use Request or RequestFuture")
		return
	}
	root := c.ActorSystem().Root
	if m == nil {
		reply(root, sender, messages.Session{}, &messages.SpeechFailed{Err: errors.New("tts: nil SynthesizeSpeech request")})
		return
	}
	// The guard middleware refused requests without identity already; this
	// keeps the rule if the actor is ever spawned without it.
	s, err := a.pool.cfg.Guard.Require(c)
	if err != nil {
		reply(root, sender, messages.Session{}, &messages.SpeechFailed{Err: err})
		return
	}
	j := &job{session: s, text: m.Text, voice: m.Voice, sender: sender, self: c.Self(), root: root, accepted: time.Now()}
	caps, ok := a.pool.cfg.Capabilities(s.Platform())
	if !ok {
		a.pool.fail(j, fmt.Errorf("tts for %s: %w: %q", s.Key(), ErrUnknownPlatform, s.Platform()))
		return
	}
	j.format = caps.VoiceFormat
	if j.format != messages.FormatOggOpus && j.format != messages.FormatMP3 {
		a.pool.fail(j, fmt.Errorf("tts for %s: platform %q declares voice format %v: %w", s.Key(), s.Platform(), j.format, ErrUnsupportedFormat))
		return
	}
	if len(a.waiting) == 0 {
		switch err := a.pool.tryEnqueue(j); {
		case err == nil:
			return
		case !errors.Is(err, errQueueFull):
			a.pool.fail(j, err)
			return
		}
	}
	if len(a.waiting) >= a.pool.cfg.MaxWaiting {
		a.pool.fail(j, fmt.Errorf("%w: %d requests already waiting for room in the queue", ErrBusy, len(a.waiting)))
		return
	}
	j.deadline = j.accepted.Add(a.pool.cfg.MaxWait)
	a.waiting = append(a.waiting, j)
	// Count the waiter before retrying, so a job that finishes from now on
	// wakes the actor, and one that finished before left room for the retry.
	a.pool.waiters.Add(1)
	a.drain(c)
}

// drain moves waiting requests into the queue while it has room, answers
// ErrBusy to those past their deadline, and arms the timer for the next
// deadline.
func (a *ttsActor) drain(c actor.Context) {
	now := time.Now()
	for len(a.waiting) > 0 {
		j := a.waiting[0]
		if !now.Before(j.deadline) {
			a.pop()
			a.pool.fail(j, fmt.Errorf("%w: all %d workers busy and the queue of %d full for %s", ErrBusy, a.pool.cfg.Workers, a.pool.cfg.QueueSize, a.pool.cfg.MaxWait))
			continue
		}
		err := a.pool.tryEnqueue(j)
		if errors.Is(err, errQueueFull) {
			break
		}
		a.pop()
		if err != nil {
			a.pool.fail(j, err)
		}
	}
	if len(a.waiting) > 0 && a.timer == nil {
		a.timerGen++
		gen, root, self := a.timerGen, c.ActorSystem().Root, c.Self()
		a.timer = time.AfterFunc(time.Until(a.waiting[0].deadline), func() {
			root.Send(self, &waitExpired{gen: gen})
		})
	}
}

func (a *ttsActor) pop() {
	a.waiting[0] = nil
	a.waiting = a.waiting[1:]
	if len(a.waiting) == 0 {
		a.waiting = nil
	}
	a.pool.waiters.Add(-1)
}

// failWaiting answers every waiting request: the actor is going away and
// its queue with it.
func (a *ttsActor) failWaiting(err error) {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	for len(a.waiting) > 0 {
		j := a.waiting[0]
		a.pop()
		a.pool.fail(j, err)
	}
}
