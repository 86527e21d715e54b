// Package actors is hermesd's actor tree: the sessions router, one session
// actor per conversation, its turns and their tool calls, and the platform
// outboxes — on protoactor-go. Identity is bound at spawn (package identity):
// a session actor is named by its key, and everything below it inherits the
// binding. See docs/architecture.md.
package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/tools"
)

// Config holds the runtime's tunables. DefaultConfig documents the defaults.
type Config struct {
	// IdleTimeout is how long a session may sit idle before it passivates
	// (its state is in the store; the next message brings it back).
	IdleTimeout time.Duration
	// SweepInterval is how often the router looks for idle sessions; 0
	// disables passivation (tests, benchmarks).
	SweepInterval time.Duration
	// HistoryLimit is how many recent messages a session keeps in context.
	HistoryLimit int
	// MaxToolRounds bounds model↔tool iterations in one turn; the last call
	// is made without tools so the model must answer.
	MaxToolRounds int
	// TurnTimeout bounds a whole turn; ToolTimeout one tool call; TTSTimeout
	// one synthesis; SendTimeout one delivery; StoreTimeout one store call.
	TurnTimeout, ToolTimeout, TTSTimeout, SendTimeout, StoreTimeout time.Duration
	// TypingDelay is how long a turn runs before its chat shows "typing"
	// (or "recording"); TypingRefresh is how often that is renewed
	// (Telegram's expire after about 5 s).
	TypingDelay, TypingRefresh time.Duration
	// MaxInboundBytes is the largest message text accepted.
	MaxInboundBytes int
	// QueueLimit bounds messages waiting under the "queue" busy policy.
	QueueLimit int
	// DefaultBusy is the busy policy of a new session.
	DefaultBusy messages.BusyPolicy
	// SystemPrompt starts every model conversation.
	SystemPrompt string
	// RecoveryConcurrency bounds how many sessions answer what they owed at
	// start at the same time (0 means 32), so a restart with a long backlog
	// does not stampede the model.
	RecoveryConcurrency int
	// ModelName is shown by /status.
	ModelName string
	// ReviewEvery and SweepEvery start a skill review / memory sweep after
	// that many turns (0 = never); SweepOnIdle also sweeps before a session
	// passivates. MaxBackground bounds a session's background children.
	ReviewEvery, SweepEvery int
	SweepOnIdle             bool
	MaxBackground           int
	// MaxDelegateDepth bounds sub-agent nesting; MaxDelegates bounds the
	// sub-agents one turn runs at once, MaxDelegatesTotal those of the
	// whole daemon.
	MaxDelegateDepth, MaxDelegates, MaxDelegatesTotal int
	// SchedulerInterval is how often the scheduler looks for due jobs (it
	// also wakes when a job is created).
	SchedulerInterval time.Duration
	// RouterShards is how many router actors share the session keys; 0
	// means one per CPU.
	RouterShards int
}

// DefaultConfig returns the defaults used by the daemon.
func DefaultConfig() Config {
	return Config{
		IdleTimeout:       30 * time.Minute,
		SweepInterval:     time.Minute,
		HistoryLimit:      200,
		MaxToolRounds:     8,
		TurnTimeout:       10 * time.Minute,
		ToolTimeout:       2 * time.Minute,
		TTSTimeout:        time.Minute,
		SendTimeout:       2 * time.Minute,
		StoreTimeout:      30 * time.Second,
		TypingRefresh:     4 * time.Second,
		MaxInboundBytes:   32 << 10,
		QueueLimit:        20,
		DefaultBusy:       messages.Interrupt,
		SystemPrompt:      "You are Hermes, a helpful assistant chatting with people through a messaging app. Be concise. You can call tools; use text_to_speech when the user wants to hear something.",
		ModelName:         "offline assistant",
		ReviewEvery:       10,
		SweepEvery:        5,
		SweepOnIdle:       true,
		MaxBackground:     4,
		MaxDelegateDepth:  1,
		MaxDelegates:      3,
		MaxDelegatesTotal: 64,
		SchedulerInterval: time.Second,
	}
}

// Deps are the runtime's collaborators, built by cmd/hermesd.
type Deps struct {
	Log     *slog.Logger
	Persist Persistence
	Model   model.Completer
	Tools   *tools.Registry
	// Adapters are the running platforms; each gets an outbox.
	Adapters []platforms.Adapter
	// TTS, if set, is spawned as the shared speech actor.
	TTS *actor.Props
	// Guard refuses identity-less requests to shared actors (and counts them).
	Guard *identity.Guard
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// ActorOptions are extra actor-system options (metrics middleware …).
	ActorOptions []actor.ConfigOption
	// PromptContext, if set, returns what to add to a turn's system prompt
	// (memories of this user and conversation, the skills index); it is
	// called once per turn, off the actor goroutines.
	PromptContext func(ctx context.Context, s messages.Session, senderID string) string
	// Jobs, if set, starts the scheduler over these persisted jobs.
	Jobs Jobs
	// Fault, if set, is called first in every Receive of the session,
	// turn, background, and tool actors with the actor's kind (a Kind
	// constant); tests panic from it to inject failures where production
	// code would fail. Lifecycle messages are not passed to it.
	Fault func(kind Kind, c actor.Context)
	// Instrument, if set, decorates the Props of every actor the runtime
	// creates (metrics and inspection middleware). kind is one of the Kind
	// constants. It must return a Clone, never Configure p.
	Instrument func(kind Kind, p *actor.Props) *actor.Props
}

// Kind is what an actor of the tree is, as passed to Deps.Instrument and
// Deps.Fault and shown by inspection and metrics (the actortype label).
type Kind string

// Actor kinds.
const (
	KindRouter  Kind = "router"
	KindSession Kind = "session"
	KindTurn    Kind = "turn"
	// KindBackground is a review, memory sweep, cron run or /background
	// prompt: a turn-shaped child of the session that is not the user's turn.
	KindBackground Kind = "background"
	KindTool       Kind = "tool"
	KindOutbox     Kind = "outbox"
	KindTTS        Kind = "tts"
	KindScheduler  Kind = "scheduler"
)

// Runtime is a running actor tree.
type Runtime struct {
	cfg     Config
	log     *slog.Logger
	sys     *actor.ActorSystem
	persist Persistence
	model   model.Completer
	tools   *tools.Registry
	guard   *identity.Guard
	obs     Observer

	adapters map[messages.Platform]platforms.Adapter
	outboxes map[messages.Platform]*actor.PID
	nowhere  *actor.PID
	tts      *actor.PID
	routers  []*actor.PID

	sessionProps  *actor.Props
	faultHook     func(kind Kind, c actor.Context)
	recovering    sync.WaitGroup
	instrument    func(kind Kind, p *actor.Props) *actor.Props
	promptContext func(ctx context.Context, s messages.Session, senderID string) string
	scheduler     *actor.PID
	delegates     chan struct{}
	delegateSeq   atomic.Uint64
	turnIDs       atomic.Uint64
	shutdownOnce  sync.Once

	// ctx is the parent of every turn's context; deliverCtx of every send.
	ctx, deliverCtx       context.Context
	cancel, cancelDeliver context.CancelFunc
	accepting             atomic.Bool
	deliveries            sync.WaitGroup
	adaptersWG            sync.WaitGroup
	cancelAdapters        context.CancelFunc
	runningTurns          atomic.Int64
	// sessionsLive counts session actors over all router shards.
	sessionsLive atomic.Int64
}

// ErrShuttingDown is returned by Receive once shutdown has begun.
var ErrShuttingDown = errors.New("hermesd is shutting down")

// Start builds the actor system and the tree, and starts the adapters.
func Start(cfg Config, d Deps) (*Runtime, error) {
	if d.Model == nil || d.Persist == nil {
		return nil, errors.New("actors: a model and a persistence are required")
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Guard == nil {
		d.Guard = &identity.Guard{Log: d.Log}
	}
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	if d.Tools == nil {
		d.Tools, _ = tools.NewRegistry()
	}
	rt := &Runtime{
		cfg: cfg, log: d.Log, persist: d.Persist, model: d.Model, tools: d.Tools,
		guard:      d.Guard,
		adapters:   make(map[messages.Platform]platforms.Adapter),
		outboxes:   make(map[messages.Platform]*actor.PID),
		instrument: d.Instrument, promptContext: d.PromptContext, faultHook: d.Fault,
		delegates: make(chan struct{}, max(cfg.MaxDelegatesTotal, 1)),
	}
	if rt.instrument == nil {
		rt.instrument = func(_ Kind, p *actor.Props) *actor.Props { return p }
	}
	rt.obs = counting{d.Observer, &rt.runningTurns}
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	rt.deliverCtx, rt.cancelDeliver = context.WithCancel(context.Background())

	opts := append([]actor.ConfigOption{actor.WithLoggerFactory(protoLogger(d.Log))}, d.ActorOptions...)
	rt.sys = actor.NewActorSystem(opts...)

	guardMW := actor.WithReceiverMiddleware(d.Guard.Middleware())
	for _, a := range d.Adapters {
		p := a.Capabilities().Platform
		if _, dup := rt.adapters[p]; dup {
			return nil, fmt.Errorf("actors: two adapters for platform %s", p)
		}
		rt.adapters[p] = a
		ob := newOutbox(rt, p, a)
		pid, err := rt.sys.Root.SpawnNamed(rt.instrument(KindOutbox, actor.PropsFromProducer(func() actor.Actor { return ob }, guardMW)), "outbox-"+string(p))
		if err != nil {
			return nil, fmt.Errorf("spawn outbox %s: %w", p, err)
		}
		rt.outboxes[p] = pid
	}
	nb := newOutbox(rt, "", nil)
	var err error
	if rt.nowhere, err = rt.sys.Root.SpawnNamed(rt.instrument(KindOutbox, actor.PropsFromProducer(func() actor.Actor { return nb }, guardMW)), "outbox-missing"); err != nil {
		return nil, fmt.Errorf("spawn outbox: %w", err)
	}
	if d.TTS != nil {
		if rt.tts, err = rt.sys.Root.SpawnNamed(rt.instrument(KindTTS, d.TTS), "tts"); err != nil {
			return nil, fmt.Errorf("spawn tts: %w", err)
		}
	}

	// One Props for every session: the actor's own name (its key) binds it.
	rt.sessionProps = rt.instrument(KindSession, identity.ByName(actor.PropsFromProducer(func() actor.Actor { return newSession(rt) },
		actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, stopChild)))))
	routerProps := rt.instrument(KindRouter, actor.PropsFromProducer(func() actor.Actor { return newRouter(rt) },
		actor.WithSupervisor(actor.NewOneForOneStrategy(3, 10*time.Second, restartSession))))
	// The router is sharded by key: spawning a session is the router's
	// costliest work, and one router would do all of it on one goroutine.
	shards := cfg.RouterShards
	if shards <= 0 {
		shards = runtime.GOMAXPROCS(0)
	}
	rt.routers = make([]*actor.PID, shards)
	for i := range rt.routers {
		if rt.routers[i], err = rt.sys.Root.SpawnNamed(routerProps, fmt.Sprintf("sessions-%d", i)); err != nil {
			return nil, fmt.Errorf("spawn router: %w", err)
		}
	}
	rt.accepting.Store(true)
	if d.Jobs != nil {
		sp := rt.instrument(KindScheduler, actor.PropsFromProducer(func() actor.Actor { return &schedulerActor{rt: rt, jobs: d.Jobs} }))
		if rt.scheduler, err = rt.sys.Root.SpawnNamed(sp, "scheduler"); err != nil {
			return nil, fmt.Errorf("spawn scheduler: %w", err)
		}
	}

	rt.recovering.Add(1)
	go rt.recoverOwed()

	actx, cancel := context.WithCancel(context.Background())
	rt.cancelAdapters = cancel
	for _, a := range d.Adapters {
		rt.adaptersWG.Add(1)
		go func() {
			defer rt.adaptersWG.Done()
			p := a.Capabilities().Platform
			if err := a.Run(actx, rt.Receive); err != nil && actx.Err() == nil {
				rt.log.Error("platform stopped", "platform", p, "err", err)
			}
		}()
	}
	return rt, nil
}

// stopChild is the supervision decision for turns and tools: they are
// one-shot, so a failure stops them (a restart would run the turn again);
// the parent notices the Terminated and answers with an error.
func stopChild(any) actor.Directive { return actor.StopDirective }

// restartSession restarts a failed session (it reloads its state in
// Started); the router's strategy bounds how often.
func restartSession(any) actor.Directive { return actor.RestartDirective }

// System returns the actor system, for inspection.
func (rt *Runtime) System() *actor.ActorSystem { return rt.sys }

// Receive is the platforms.Inbound of every adapter: it validates the
// message, persists it (so it is safe before the platform is told), and
// routes it to its session. Callers keep each chat's order.
func (rt *Runtime) Receive(ctx context.Context, m *messages.UserMessage) error {
	if !rt.accepting.Load() {
		return ErrShuttingDown
	}
	s, err := messages.ParseKey(m.GetSessionKey())
	if err != nil {
		return fmt.Errorf("route message: %w", err)
	}
	if n := len(m.GetText()); n > rt.cfg.MaxInboundBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", platforms.ErrTooLarge, n, rt.cfg.MaxInboundBytes)
	}
	if m.ReceivedUnixMs == 0 {
		m.ReceivedUnixMs = time.Now().UnixMilli()
	}
	cmd, _, isCmd := parseCommand(m.GetText())
	switch {
	case isCmd && (cmd == "new" || cmd == "reset"):
		// Applied here, before routing, so later messages land in the new
		// conversation; the session learns the conversation's number.
		conv, err := rt.persist.NewConversation(ctx, s)
		if err != nil {
			rt.log.Error("start a new conversation", "session", s.Key(), "err", err)
			return fmt.Errorf("start a new conversation: %w", err)
		}
		rt.sys.Root.Send(rt.routerOf(s.Key()), &conversationReset{m: m, conv: conv})
		return nil
	case isCmd:
		// Commands steer the session; they are not part of the conversation.
	default:
		seq, err := rt.persist.Accept(ctx, s, m)
		if errors.Is(err, ErrDuplicate) {
			// Accepted once already: its session answers it (activating
			// loads it as pending); routing it again could answer it twice.
			rt.log.Info("platform sent a message again; not starting a second turn", "session", s.Key(), "message", m.GetMessageId())
			rt.sys.Root.Send(rt.routerOf(s.Key()), &resumeSession{key: s.Key()})
			return nil
		}
		if err != nil {
			rt.log.Error("persist inbound message", "session", s.Key(), "err", err)
			return fmt.Errorf("persist message: %w", err)
		}
		m.InboxSeq = seq
	}
	rt.sys.Root.Send(rt.routerOf(m.GetSessionKey()), m)
	return nil
}

// recoverOwed activates, at start, every session that owes work (pending
// inputs, unconfirmed replies), oldest first, at most RecoveryConcurrency at
// a time: each answers what it owes before the next one starts.
func (rt *Runtime) recoverOwed() {
	defer rt.recovering.Done()
	ctx, cancel := context.WithTimeout(rt.ctx, rt.cfg.StoreTimeout)
	keys, err := rt.persist.Owed(ctx)
	cancel()
	if err != nil {
		rt.log.Error("find sessions that owe work", "err", err)
		return
	}
	if len(keys) == 0 {
		return
	}
	rt.log.Info("recovering sessions that owe work", "sessions", len(keys))
	n := rt.cfg.RecoveryConcurrency
	if n <= 0 {
		n = 32
	}
	slots := make(chan struct{}, n)
	for _, key := range keys {
		select {
		case slots <- struct{}{}:
		case <-rt.ctx.Done():
			return
		}
		var once sync.Once
		free := func() { once.Do(func() { <-slots }) }
		// A session that dies before it is done must not hold its slot.
		time.AfterFunc(rt.cfg.TurnTimeout+turnGrace, free)
		rt.sys.Root.Send(rt.routerOf(key), &resumeSession{key: key, recovered: free})
	}
}

// fault runs the test hook for an actor of kind, except on lifecycle
// messages.
func (rt *Runtime) fault(kind Kind, c actor.Context) {
	if rt.faultHook == nil {
		return
	}
	switch c.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting, *actor.Terminated:
		return
	}
	rt.faultHook(kind, c)
}

// Fire routes a due scheduled job to its session, activating it from the
// key exactly as a live message would.
func (rt *Runtime) Fire(f *messages.ScheduledFire) error {
	if _, err := messages.ParseKey(f.GetSessionKey()); err != nil {
		return fmt.Errorf("fire job %s: %w", f.GetJobId(), err)
	}
	rt.sys.Root.Send(rt.routerOf(f.GetSessionKey()), f)
	return nil
}

// Shutdown stops accepting messages, lets running turns finish for up to
// grace, then cancels what is left, drains the outboxes and stops the system.
// A second call returns at once.
func (rt *Runtime) Shutdown(ctx context.Context, grace time.Duration) error {
	var err error
	rt.shutdownOnce.Do(func() { err = rt.shutdown(ctx, grace) })
	return err
}

func (rt *Runtime) shutdown(ctx context.Context, grace time.Duration) error {
	rt.accepting.Store(false)
	rt.cancelAdapters()
	rt.adaptersWG.Wait()

	deadline := time.Now().Add(grace)
	for rt.runningTurns.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // shutdown only: a bounded poll
	}
	rt.cancel()
	rt.recovering.Wait()
	if rt.scheduler != nil {
		_ = rt.sys.Root.StopFuture(rt.scheduler).Wait()
	}
	for _, r := range rt.routers {
		if _, err := rt.sys.Root.PoisonFuture(r).Result(); err != nil {
			rt.log.Warn("stop sessions", "err", err)
		}
	}
	drained := make(chan struct{})
	go func() { rt.deliveries.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		rt.cancelDeliver()
		<-drained
	}
	rt.cancelDeliver()
	for _, pid := range rt.outboxes {
		_ = rt.sys.Root.StopFuture(pid).Wait()
	}
	if rt.tts != nil {
		_ = rt.sys.Root.StopFuture(rt.tts).Wait()
	}
	rt.sys.Shutdown()
	return nil
}

// RunningTurns returns how many turns are running now.
func (rt *Runtime) RunningTurns() int64 { return rt.runningTurns.Load() }

// routerOf returns the router shard responsible for a session key (FNV-1a:
// cheap, stable, and spreads keys that differ only in their last digits).
func (rt *Runtime) routerOf(key string) *actor.PID {
	if len(rt.routers) == 1 {
		return rt.routers[0]
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return rt.routers[h%uint32(len(rt.routers))]
}

// outbox returns the outbox of platform p; a platform that is not running
// gets one that answers every delivery with an error.
func (rt *Runtime) outbox(p messages.Platform) *actor.PID {
	if pid := rt.outboxes[p]; pid != nil {
		return pid
	}
	return rt.nowhere
}

// indicates reports whether platform p shows chat actions.
func (rt *Runtime) indicates(p messages.Platform) bool {
	_, ok := rt.adapters[p].(platforms.Indicator)
	return ok
}

// turnProps are the Props of turn t; the producer makes a fresh copy of t,
// so no instance is ever reused (a restart would otherwise run on the state
// the failed instance left).
func (rt *Runtime) turnProps(t *turn) *actor.Props {
	tmpl := *t
	return rt.instrument(t.actorKind(), actor.PropsFromProducer(func() actor.Actor { t := tmpl; return &t },
		actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, stopChild))))
}

func (rt *Runtime) toolProps(ctx context.Context, call model.ToolCall, t *turn, sender string) *actor.Props {
	turnID, session, depth := t.id, t.session, t.depth
	if call.Name == "delegate_task" && t.delegates == nil {
		t.delegates = make(chan struct{}, max(rt.cfg.MaxDelegates, 1))
	}
	sem := t.delegates
	// A sub-agent is the tool's child: it is stopped, never restarted.
	return rt.instrument(KindTool, actor.PropsFromProducer(func() actor.Actor {
		return &toolActor{rt: rt, ctx: ctx, call: call, turn: turnID, session: session, sender: sender, depth: depth, delegates: sem}
	}, actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, stopChild))))
}

// systemPrompt is the configured prompt plus what the model should know
// about where it is talking — from the turn's own binding, never from a
// field of a message.
func (rt *Runtime) systemPrompt(s messages.Session, instructions string) string {
	p := rt.cfg.SystemPrompt
	if instructions != "" {
		p += "\n\n" + instructions
	}
	return p + fmt.Sprintf("\nYou are talking on %s (%s chat).", s.Platform(), s.Kind())
}

// counting wraps an Observer and keeps the running-turn count shutdown needs.
type counting struct {
	Observer
	running *atomic.Int64
}

func (c counting) TurnStarted(s messages.Session) {
	c.running.Add(1)
	c.Observer.TurnStarted(s)
}

func (c counting) TurnFinished(s messages.Session, outcome string, d time.Duration) {
	c.running.Add(-1)
	c.Observer.TurnFinished(s, outcome, d)
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// protoLogger sends protoactor's own logs to ours at Warn and above: it logs
// every recovered panic at Info with no stack, which we log ourselves.
func protoLogger(l *slog.Logger) func(*actor.ActorSystem) *slog.Logger {
	return func(s *actor.ActorSystem) *slog.Logger {
		return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("lib", "protoactor")
	}
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(g string) slog.Handler { return minLevel{h.Handler.WithGroup(g), h.min} }

// Accepting reports whether the runtime takes new messages.
func (rt *Runtime) Accepting() bool { return rt.accepting.Load() }
