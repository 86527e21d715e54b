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
	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/tools"
)

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
	// Placement, if set, holds the sessions instead of the local routers
	// (cluster mode, package cluster); nil is single-node.
	Placement Placement
	// Leases, with Placement, fences each session (lease.go).
	Leases Leases
	// Models, if set, is the model catalog: /model lists and switches
	// among it, /usage prices by it (actors/models.go).
	Models Catalog
	// Usage, if set, books every model call's tokens per session and model
	// and answers /usage.
	Usage UsageBook
	// ContextTokens, if set, returns the context window of a model by name
	// ("" is the default model), or 0 when it does not know it (then
	// Config.ContextTokens applies).
	ContextTokens func(model string) int
	// Media, if set, is where adapters stored the photos and documents of
	// inbound messages; a turn reads photos from it for the model.
	Media *media.Store
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
	catalog       Catalog
	usage         UsageBook

	// ctx is the parent of every turn's context; deliverCtx of every send.
	ctx, deliverCtx       context.Context
	cancel, cancelDeliver context.CancelFunc
	accepting             atomic.Bool
	// sending counts outbox workers at work. Not a sync.WaitGroup: a late
	// reply may start one while shutdown waits for them to finish.
	sending        atomic.Int64
	adaptersWG     sync.WaitGroup
	cancelAdapters context.CancelFunc
	runningTurns   atomic.Int64
	// sessionsLive counts session actors over all router shards.
	sessionsLive atomic.Int64
	// placement and grains: cluster mode (placement.go).
	placement Placement
	grains    grains
	leases    Leases
	// releasing counts lease releases in flight: shutdown waits for them,
	// so the next member need not wait for the leases to expire.
	releasing sync.WaitGroup
	// draining ends when shutdown begins: routing in cluster mode stops
	// waiting then (what it carried is stored; placement.go).
	draining    context.Context
	stopRouting context.CancelFunc
	// tokens calibrates token estimates per model; contextTokens is
	// Deps.ContextTokens.
	tokens        tokenMeter
	contextTokens func(model string) int
	// media holds inbound photos and documents (nil: none are read).
	media *media.Store
}

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
		media:     d.Media,
		placement: d.Placement, leases: d.Leases,
	}
	if rt.leased() && rt.cfg.LeaseTTL <= 0 {
		return nil, errors.New("actors: leases need a positive LeaseTTL")
	}
	rt.catalog, rt.usage = d.Models, d.Usage
	rt.contextTokens = d.ContextTokens
	if rt.instrument == nil {
		rt.instrument = func(_ Kind, p *actor.Props) *actor.Props { return p }
	}
	rt.obs = counting{d.Observer, &rt.runningTurns}
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	rt.deliverCtx, rt.cancelDeliver = context.WithCancel(context.Background())
	rt.draining, rt.stopRouting = context.WithCancel(context.Background())

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
		actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, rt.stopChild)))))
	routerProps := rt.instrument(KindRouter, actor.PropsFromProducer(func() actor.Actor { return newRouter(rt) },
		actor.WithSupervisor(actor.NewOneForOneStrategy(3, 10*time.Second, rt.restartSession))))
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
	if rt.placement != nil {
		// A cluster grain is named by the cluster, not by its key: the
		// placement binds it from its cluster identity.
		grain := rt.instrument(KindSession, rt.placement.Bind(actor.PropsFromProducer(func() actor.Actor { return newSession(rt) })))
		if err := rt.placement.Start(rt.sys, grain); err != nil {
			return nil, fmt.Errorf("start cluster: %w", err)
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
	if rt.placement != nil && cfg.OwedSweep > 0 {
		rt.recovering.Add(1)
		go func() {
			defer rt.recovering.Done()
			rt.sweepOwed(cfg.OwedSweep)
		}()
	}

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
func (rt *Runtime) stopChild(reason any) actor.Directive {
	rt.log.Error("actor panicked; stopping it", "reason", fmt.Sprint(reason))
	return actor.StopDirective
}

// restartSession restarts a failed session (it reloads its state in
// Started); the router's strategy bounds how often.
func (rt *Runtime) restartSession(reason any) actor.Directive {
	rt.log.Error("session panicked; restarting it", "reason", fmt.Sprint(reason))
	return actor.RestartDirective
}

// System returns the actor system, for inspection.
func (rt *Runtime) System() *actor.ActorSystem { return rt.sys }

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
	if rt.placement != nil {
		rt.recoverOwedPlaced(keys)
		return
	}
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
	rt.stopRouting()
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
	if rt.placement != nil {
		// Leave, then passivate what this member holds: the next message
		// for each of these sessions activates it on a remaining member.
		// Leaving shuts the actor system down as well.
		rt.placement.Stop()
		rt.passivateGrains()
		rt.releasing.Wait()
	}
	// Deliveries in flight finish, until ctx ends; then they are cancelled
	// (they stay unconfirmed in the store and are sent after the restart).
	for rt.sending.Load() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // shutdown only: a bounded poll
	}
	rt.cancelDeliver()
	rt.waitSending()
	for _, pid := range rt.outboxes {
		_ = rt.sys.Root.StopFuture(pid).Wait()
	}
	if rt.tts != nil {
		_ = rt.sys.Root.StopFuture(rt.tts).Wait()
	}
	if rt.placement == nil {
		rt.sys.Shutdown()
	}
	return nil
}

// waitSending waits until no outbox worker is at work; each one's sends are
// bounded by SendTimeout and end at once when deliverCtx is cancelled.
func (rt *Runtime) waitSending() {
	for rt.sending.Load() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
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

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// Accepting reports whether the runtime takes new messages.
func (rt *Runtime) Accepting() bool { return rt.accepting.Load() }
