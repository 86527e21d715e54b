// Package metrics exposes hermesd's Prometheus metrics: the actor-system
// series under protoactor's own names (so existing protoactor dashboards
// work) and hermesd's own (sessions, turns, model tokens, tool calls, TTS,
// deliveries, platform errors, identity refusals). docs/metrics.md lists
// every series.
//
// Everything goes through the OpenTelemetry SDK and its Prometheus exporter,
// on a registry and a MeterProvider this package owns: nothing is global.
// protoactor's built-in metrics are not used, because they only work with a
// process-global otel.SetMeterProvider and never export the mailbox gauge;
// the actor series are emitted from hermesd's own middleware instead, which
// the runtime installs on every actor's Props (see PropsOptions).
//
// Every label is bounded: kinds, platforms, outcomes, tool names, formats
// and Go type names, never a chat id or a session key.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/hermesd/hermesd/messages"
)

// Options configure the metrics.
type Options struct {
	// Address is the value of the "address" label on actor series, as
	// protoactor sets it; empty means "nonhost" (remoting off).
	Address string
	// Actors, if set, is read once per scrape for the live actors and the
	// queued user messages of each actor kind (inspect.Tree.EachKind): it
	// feeds protoactor_actor_mailbox_length and hermesd_actors_live.
	Actors func(yield func(kind string, live, mailbox int64))
	// Tools are the names of the registered tools; a tool call under any
	// other name (the model may invent one) is labelled "other". Empty
	// admits the first 64 names seen.
	Tools []string
	// Models are the catalog's model names; a model label under any other
	// name is "other". Empty admits the first 32 names seen.
	Models []string
	// Store, if set, is read once per scrape for the store writer's
	// counters (hermesd_store_*).
	Store func() StoreCounts
}

// Metrics records hermesd's metrics and serves them. It implements
// actors.Observer. All methods are safe for concurrent use.
type Metrics struct {
	// attrCache maps a label set's values to its measurement option.
	attrCache sync.Map
	reg       *prometheus.Registry
	provider  *sdkmetric.MeterProvider
	address   string

	kindsMu sync.RWMutex
	kinds   map[string]*kindProbe

	// Label bounds.
	platforms, outcomes, tools, kindsLabel, deliveryKinds, formats,
	msgTypes, requestTypes, statusClasses *bounded
	models, modelOutcomes, breakerStates *bounded

	actor     actorInstruments
	receive   *receiveHistogram
	hermesd   hermesdInstruments
	callbacks []metric.Registration
	cluster   clusterInstruments // cluster.go
}

// New builds the registry, the MeterProvider and every instrument.
func New(o Options) (*Metrics, error) {
	m := &Metrics{
		reg: prometheus.NewRegistry(), address: o.Address, kinds: make(map[string]*kindProbe),
		platforms: firstN(16), outcomes: firstN(32), kindsLabel: firstN(32),
		deliveryKinds: fixed("text", "voice", "audio", "file"), formats: fixed(messages.FormatOggOpus.String(), messages.FormatMP3.String()),
		msgTypes: firstN(256), requestTypes: firstN(64), statusClasses: fixed("network", "4xx", "5xx"),
		receive: newReceiveHistogram(),
	}
	if m.address == "" {
		m.address = "nonhost"
	}
	if len(o.Tools) > 0 {
		m.tools = fixed(o.Tools...)
	} else {
		m.tools = firstN(64)
	}
	m.models = firstN(32)
	if len(o.Models) > 0 {
		m.models = fixed(o.Models...)
	}
	m.modelOutcomes = fixed("ok", "error", "skipped")
	m.breakerStates = fixed("closed", "open", "half-open")
	if err := m.reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register Go collector: %w", err)
	}
	if err := m.reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(m.reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
		otelprom.WithProducer(m.receive),
	)
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	m.provider = sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exp),
		// No resource detection: it would read OTEL_* variables from the
		// environment, and only package config reads the environment.
		sdkmetric.WithResource(resource.Empty()),
		// Exemplars need traces, which hermesd does not record; skipping
		// them keeps the per-message cost down.
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter),
	)
	meter := m.provider.Meter("github.com/hermesd/hermesd/metrics")
	if err := m.actor.init(meter); err != nil {
		return nil, errors.Join(err, m.provider.Shutdown(context.Background()))
	}
	if err := m.hermesd.init(meter); err != nil {
		return nil, errors.Join(err, m.provider.Shutdown(context.Background()))
	}
	if err := m.cluster.init(meter); err != nil {
		return nil, errors.Join(err, m.provider.Shutdown(context.Background()))
	}
	if o.Actors != nil {
		reg, err := m.registerActorGauges(meter, o.Actors)
		if err != nil {
			return nil, errors.Join(err, m.provider.Shutdown(context.Background()))
		}
		m.callbacks = append(m.callbacks, reg)
	}
	if o.Store != nil {
		reg, err := registerStoreSeries(meter, o.Store)
		if err != nil {
			return nil, errors.Join(err, m.unregister(), m.provider.Shutdown(context.Background()))
		}
		m.callbacks = append(m.callbacks, reg)
	}
	return m, nil
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Gatherer returns the registry, for tests and for adding collectors.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Shutdown stops the MeterProvider; scrapes after it return no OpenTelemetry
// series.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if err := errors.Join(m.unregister(), m.provider.Shutdown(ctx)); err != nil {
		return fmt.Errorf("shut down metrics: %w", err)
	}
	return nil
}

// unregister removes the scrape-time callbacks.
func (m *Metrics) unregister() error {
	var errs []error
	for _, r := range m.callbacks {
		errs = append(errs, r.Unregister())
	}
	m.callbacks = nil
	return errors.Join(errs...)
}
