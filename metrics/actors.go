package metrics

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// bg is the context every measurement is recorded with: hermesd records no
// traces, so there is nothing to carry.
var bg = context.Background()

// actorInstruments are the actor-system series, named as protoactor names
// them (the receive histogram is receiveHistogram).
type actorInstruments struct {
	spawned, stopped, restarted, failed, deadLetters metric.Int64Counter
}

func (a *actorInstruments) init(meter metric.Meter) error {
	var err error
	counter := func(name, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var c metric.Int64Counter
		c, err = meter.Int64Counter(name, metric.WithDescription(desc))
		return c
	}
	a.spawned = counter("protoactor_actor_spawn_count", "Actors spawned, by kind.")
	a.stopped = counter("protoactor_actor_stopped_count", "Actors stopped, by kind of the actor that stopped.")
	a.restarted = counter("protoactor_actor_restarted_count", "Actor restarts by their supervisor, by kind.")
	a.failed = counter("protoactor_actor_failure_count", "Panics while an actor handled a message, by kind.")
	a.deadLetters = counter("protoactor_deadletter_count", "Messages sent to an actor that no longer exists, by message type.")
	if err != nil {
		return fmt.Errorf("create actor counters: %w", err)
	}
	return nil
}

// registerActorGauges registers the one callback that reports every kind's
// queued messages and live actors at scrape time — once, not per actor.
func (m *Metrics) registerActorGauges(meter metric.Meter, each func(yield func(kind string, live, mailbox int64))) (metric.Registration, error) {
	mailbox, err := meter.Int64ObservableGauge("protoactor_actor_mailbox_length",
		metric.WithDescription("User messages waiting in the mailboxes of live actors, summed by kind."))
	if err != nil {
		return nil, fmt.Errorf("create mailbox gauge: %w", err)
	}
	live, err := meter.Int64ObservableGauge("hermesd_actors_live",
		metric.WithDescription("Live actors, by kind."))
	if err != nil {
		return nil, fmt.Errorf("create live-actors gauge: %w", err)
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		each(func(kind string, n, depth int64) {
			attrs := metric.WithAttributeSet(m.kindAttrs(kind))
			o.ObserveInt64(mailbox, depth, attrs)
			o.ObserveInt64(live, n, attrs)
		})
		return nil
	}, mailbox, live)
	if err != nil {
		return nil, fmt.Errorf("register actor gauges: %w", err)
	}
	return reg, nil
}

func (m *Metrics) kindAttrs(kind string) attribute.Set {
	return attribute.NewSet(attribute.String("actortype", m.kindsLabel.value(kind)), attribute.String("address", m.address))
}

// kindProbe is the instrumentation of one actor kind, built once: its
// attribute sets are computed up front so the per-message path allocates
// nothing.
type kindProbe struct {
	m    *Metrics
	add  []metric.AddOption
	opts []actor.PropsOption
	// byType holds the receive histogram's series per message type:
	// reflect.Type → *receiveCell.
	byType sync.Map
	base   []attribute.KeyValue
}

// Props returns a copy of p whose actors are counted as kind (p is shared
// and is not changed: Clone, never Configure). Use PropsOptions to combine this
// with other instrumentation in one Clone.
func (m *Metrics) Props(kind string, p *actor.Props) *actor.Props {
	return p.Clone(m.PropsOptions(kind)...)
}

// PropsOptions returns the props options that count an actor as kind: a spawn
// counter run once per spawn (OnInit) and a receiver middleware that times
// every message and counts restarts, stops and panics. The slice is built
// once per kind and shared: do not modify it.
func (m *Metrics) PropsOptions(kind string) []actor.PropsOption {
	return m.probe(kind).opts
}

func (m *Metrics) probe(kind string) *kindProbe {
	m.kindsMu.RLock()
	k := m.kinds[kind]
	m.kindsMu.RUnlock()
	if k != nil {
		return k
	}
	m.kindsMu.Lock()
	defer m.kindsMu.Unlock()
	if k = m.kinds[kind]; k != nil {
		return k
	}
	set := m.kindAttrs(kind)
	k = &kindProbe{m: m, add: []metric.AddOption{metric.WithAttributeSet(set)}, base: set.ToSlice()}
	k.opts = []actor.PropsOption{
		actor.WithOnInit(func(actor.Context) { m.actor.spawned.Add(bg, 1, k.add...) }),
		actor.WithReceiverMiddleware(k.middleware),
	}
	m.kinds[kind] = k
	return k
}

// middleware times each message. A panic is counted and re-raised, so the
// supervisor still sees it; protoactor's own recover comes after this one.
func (k *kindProbe) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		switch env.Message.(type) {
		case *actor.Restarting:
			k.m.actor.restarted.Add(bg, 1, k.add...)
		case *actor.Stopped:
			k.m.actor.stopped.Add(bg, 1, k.add...)
		}
		// Since on a fixed epoch reads only the monotonic clock, about half
		// the cost of time.Now (which reads the wall clock too).
		start := time.Since(k.m.receive.start)
		defer k.failed()
		next(c, env)
		k.m.receive.record(k.cell(env.Message), time.Since(k.m.receive.start)-start)
	}
}

// failed counts a panic and re-raises it. It must be deferred directly.
func (k *kindProbe) failed() {
	if r := recover(); r != nil {
		k.m.actor.failed.Add(bg, 1, k.add...)
		panic(r)
	}
}

// cell returns the receive histogram's series for this kind and msg's type.
func (k *kindProbe) cell(msg any) *receiveCell {
	t := reflect.TypeOf(msg)
	if v, ok := k.byType.Load(t); ok {
		return v.(*receiveCell)
	}
	k.m.kindsMu.Lock() // one cell per type, even when two actors race here
	defer k.m.kindsMu.Unlock()
	if v, ok := k.byType.Load(t); ok {
		return v.(*receiveCell)
	}
	attrs := append(k.base[:len(k.base):len(k.base)], attribute.String("messagetype", k.m.messageType(t)))
	c := k.m.receive.cell(attribute.NewSet(attrs...))
	k.byType.Store(t, c)
	return c
}

// messageType names a message type as protoactor does ("actor.Started",
// "messages.UserMessage"), bounded.
func (m *Metrics) messageType(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	return m.msgTypes.value(strings.TrimPrefix(t.String(), "*"))
}

// WatchDeadLetters counts the dead letters of sys from its event stream
// until the returned function is called.
func (m *Metrics) WatchDeadLetters(sys *actor.ActorSystem) (stop func()) {
	sub := sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*actor.DeadLetterEvent); ok {
			m.actor.deadLetters.Add(bg, 1, metric.WithAttributes(
				attribute.String("address", m.address),
				attribute.String("messagetype", m.messageType(reflect.TypeOf(dl.Message)))))
		}
	})
	return func() { sys.EventStream.Unsubscribe(sub) }
}
