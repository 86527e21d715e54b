package metrics

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hermesd/hermesd/messages"
)

// Bucket boundaries, in seconds, for what a person waits on.
var (
	turnBuckets     = []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	toolBuckets     = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	deliveryBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	ttsBuckets      = []float64{.05, .1, .25, .5, 1, 2, 5, 10, 20, 30, 60, 120}
)

// hermesdInstruments are hermesd's own series.
type hermesdInstruments struct {
	sessionsActive                               metric.Int64Gauge
	sessionsStarted, sessionsStopped, passivated metric.Int64Counter
	turnsStarted, turns                          metric.Int64Counter
	turnsRunning                                 metric.Int64UpDownCounter
	turnDuration                                 metric.Float64Histogram
	modelCalls, tokens                           metric.Int64Counter
	toolCalls                                    metric.Int64Counter
	toolDuration                                 metric.Float64Histogram
	ttsRequests                                  metric.Int64Counter
	ttsDuration                                  metric.Float64Histogram
	deliveries                                   metric.Int64Counter
	deliveryDuration                             metric.Float64Histogram
	apiErrors, rateLimited, refusals             metric.Int64Counter
	retryAfter                                   metric.Float64Counter
	// The model catalog's series (ModelAttempt).
	modelRequests, modelFallbacks metric.Int64Counter
	modelBreaker                  metric.Int64Gauge
}

func (h *hermesdInstruments) init(meter metric.Meter) error {
	var err error
	counter := func(name, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var c metric.Int64Counter
		c, err = meter.Int64Counter(name, metric.WithDescription(desc))
		return c
	}
	histogram := func(name, desc string, buckets []float64) metric.Float64Histogram {
		if err != nil {
			return nil
		}
		var c metric.Float64Histogram
		c, err = meter.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(buckets...))
		return c
	}
	h.sessionsStarted = counter("hermesd_sessions_started", "Session actors started (a new conversation, or one coming back after passivation), by platform.")
	h.sessionsStopped = counter("hermesd_sessions_stopped", "Session actors stopped (passivated or at shutdown), by platform.")
	h.passivated = counter("hermesd_sessions_passivated", "Idle sessions passivated to the store.")
	h.turnsStarted = counter("hermesd_turns_started", "Agent turns started, by platform.")
	h.turns = counter("hermesd_turns", "Agent turns finished, by platform and outcome.")
	h.turnDuration = histogram("hermesd_turn_duration_seconds", "Duration of agent turns, by platform and outcome.", turnBuckets)
	h.modelCalls = counter("hermesd_model_calls", "Model completions answered.")
	h.tokens = counter("hermesd_model_tokens", "Tokens of model completions, by model and direction (in, out).")
	h.modelRequests = counter("hermesd_model_requests", "Calls to each catalog model, by model, outcome (ok, error, skipped by an open breaker) and breaker state after the call.")
	h.modelFallbacks = counter("hermesd_model_fallbacks", "Answers given by a fallback model, by the model that answered.")
	h.toolCalls = counter("hermesd_tool_calls", "Tool calls, by tool and outcome.")
	h.toolDuration = histogram("hermesd_tool_call_duration_seconds", "Duration of tool calls, by tool and outcome.", toolBuckets)
	h.ttsRequests = counter("hermesd_tts_requests", "Speech synthesis requests, by platform, format and outcome.")
	h.ttsDuration = histogram("hermesd_tts_synthesis_duration_seconds", "Time to synthesize and encode speech, by platform and format.", ttsBuckets)
	h.deliveries = counter("hermesd_deliveries", "Replies delivered to a platform, by platform, kind and outcome.")
	h.deliveryDuration = histogram("hermesd_delivery_duration_seconds", "Time to deliver one reply, by platform and kind.", deliveryBuckets)
	h.apiErrors = counter("hermesd_platform_api_errors", "Failed platform API calls, by platform and status class.")
	h.rateLimited = counter("hermesd_platform_rate_limited", "Platform API calls answered 429, by platform.")
	h.refusals = counter("hermesd_identity_refusals", "Session-scoped requests refused because they carried no session identity, by request type.")
	if err != nil {
		return fmt.Errorf("create hermesd instruments: %w", err)
	}
	if h.retryAfter, err = meter.Float64Counter("hermesd_platform_retry_after_seconds",
		metric.WithDescription("Seconds platforms asked hermesd to wait (429 retry_after), by platform."), metric.WithUnit("s")); err != nil {
		return fmt.Errorf("create retry-after counter: %w", err)
	}
	if h.turnsRunning, err = meter.Int64UpDownCounter("hermesd_turns_running", metric.WithDescription("Agent turns running now, by platform.")); err != nil {
		return fmt.Errorf("create running-turns gauge: %w", err)
	}
	if h.modelBreaker, err = meter.Int64Gauge("hermesd_model_breaker_open",
		metric.WithDescription("State of the circuit breaker of each model's endpoint: 0 closed, 1 half-open, 2 open.")); err != nil {
		return fmt.Errorf("create breaker gauge: %w", err)
	}
	if h.sessionsActive, err = meter.Int64Gauge("hermesd_sessions_active", metric.WithDescription("Live session actors, as the router counts them.")); err != nil {
		return fmt.Errorf("create active-sessions gauge: %w", err)
	}
	return nil
}

func (m *Metrics) platform(p messages.Platform) attribute.KeyValue {
	return attribute.String("platform", m.platforms.value(string(p)))
}

// SessionStarted implements actors.Observer.
func (m *Metrics) SessionStarted(s messages.Session) {
	m.hermesd.sessionsStarted.Add(bg, 1, m.attrs(m.platform(s.Platform())))
}

// SessionStopped implements actors.Observer.
func (m *Metrics) SessionStopped(s messages.Session) {
	m.hermesd.sessionsStopped.Add(bg, 1, m.attrs(m.platform(s.Platform())))
}

// SessionsActive implements actors.Observer.
func (m *Metrics) SessionsActive(n int) { m.hermesd.sessionsActive.Record(bg, int64(n)) }

// SessionPassivated implements actors.Observer.
func (m *Metrics) SessionPassivated() { m.hermesd.passivated.Add(bg, 1) }

// TurnStarted implements actors.Observer.
func (m *Metrics) TurnStarted(s messages.Session) {
	attrs := m.attrs(m.platform(s.Platform()))
	m.hermesd.turnsStarted.Add(bg, 1, attrs)
	m.hermesd.turnsRunning.Add(bg, 1, attrs)
}

// TurnFinished implements actors.Observer.
func (m *Metrics) TurnFinished(s messages.Session, outcome string, d time.Duration) {
	p := m.platform(s.Platform())
	m.hermesd.turnsRunning.Add(bg, -1, m.attrs(p))
	attrs := m.attrs(p, attribute.String("outcome", m.outcomes.value(outcome)))
	m.hermesd.turns.Add(bg, 1, attrs)
	m.hermesd.turnDuration.Record(bg, d.Seconds(), attrs)
}

// ModelCall implements actors.Observer: one answered completion of the
// catalog model named model.
func (m *Metrics) ModelCall(model string, promptTokens, completionTokens int) {
	m.hermesd.modelCalls.Add(bg, 1)
	name := attribute.String("model", m.models.value(model))
	m.hermesd.tokens.Add(bg, int64(promptTokens), m.attrs(name, attribute.String("direction", "in")))
	m.hermesd.tokens.Add(bg, int64(completionTokens), m.attrs(name, attribute.String("direction", "out")))
}

// ModelAttempt records one attempt of the model router on a catalog model:
// outcome is ok, error or skipped (its breaker was open), fallback says the
// model was not the one asked for, breaker is its endpoint's breaker state
// after the attempt (closed, open, half-open).
func (m *Metrics) ModelAttempt(model, outcome string, fallback bool, breaker string) {
	name := attribute.String("model", m.models.value(model))
	state := m.breakerStates.value(breaker)
	m.hermesd.modelRequests.Add(bg, 1, m.attrs(name, attribute.String("outcome", m.modelOutcomes.value(outcome)), attribute.String("breaker", state)))
	if fallback && outcome == "ok" {
		m.hermesd.modelFallbacks.Add(bg, 1, m.attrs(name))
	}
	level := int64(0)
	switch state {
	case "half-open":
		level = 1
	case "open":
		level = 2
	}
	m.hermesd.modelBreaker.Record(bg, level, m.attrs(name))
}

// ToolCall implements actors.Observer.
func (m *Metrics) ToolCall(tool, outcome string, d time.Duration) {
	attrs := m.attrs(attribute.String("tool", m.tools.value(tool)), attribute.String("outcome", m.outcomes.value(outcome)))
	m.hermesd.toolCalls.Add(bg, 1, attrs)
	m.hermesd.toolDuration.Record(bg, d.Seconds(), attrs)
}

// Delivery implements actors.Observer. kind is what the reply was shown as
// (text, voice, audio, file).
func (m *Metrics) Delivery(p messages.Platform, kind, outcome string, d time.Duration) {
	pk := []attribute.KeyValue{m.platform(p), attribute.String("kind", m.deliveryKinds.value(kind))}
	m.hermesd.deliveries.Add(bg, 1, m.attrs(append(pk, attribute.String("outcome", m.outcomes.value(outcome)))...))
	m.hermesd.deliveryDuration.Record(bg, d.Seconds(), m.attrs(pk...))
}

// TTS records one speech synthesis for platform in format that took d; err
// is its failure, if any. The TTS actor calls it. The format label is the
// format's own name (ogg/opus, mp3): typed, so no caller can invent one.
func (m *Metrics) TTS(platform messages.Platform, format messages.AudioFormat, d time.Duration, err error) {
	pf := []attribute.KeyValue{m.platform(platform), attribute.String("format", m.formats.value(format.String()))}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.hermesd.ttsRequests.Add(bg, 1, m.attrs(append(pf, attribute.String("outcome", outcome))...))
	if err == nil {
		m.hermesd.ttsDuration.Record(bg, d.Seconds(), m.attrs(pf...))
	}
}

// PlatformAPIError records a failed call to a platform's API: status is the
// HTTP status, or 0 when no answer came (network, timeout). Platform
// adapters call it; 429s go to RateLimited instead.
func (m *Metrics) PlatformAPIError(platform string, status int) {
	class := "network"
	switch {
	case status >= 500:
		class = "5xx"
	case status >= 400:
		class = "4xx"
	case status > 0:
		class = other
	}
	m.hermesd.apiErrors.Add(bg, 1, m.attrs(m.platform(messages.Platform(platform)), attribute.String("status", m.statusClasses.value(class))))
}

// RateLimited records a 429 from platform that asked to wait retryAfter.
// Platform adapters call it.
func (m *Metrics) RateLimited(platform string, retryAfter time.Duration) {
	attrs := m.attrs(m.platform(messages.Platform(platform)))
	m.hermesd.rateLimited.Add(bg, 1, attrs)
	if retryAfter > 0 {
		m.hermesd.retryAfter.Add(bg, retryAfter.Seconds(), attrs)
	}
}

// IdentityRefused records a session-scoped request refused for lack of
// identity; it fits identity.Guard's OnRefuse hook.
func (m *Metrics) IdentityRefused(requestType string) {
	m.hermesd.refusals.Add(bg, 1, m.attrs(attribute.String("request_type", m.requestTypes.value(requestType))))
}

// attrs returns the measurement option for a label set, built once per
// distinct set: labels are bounded, and building an attribute set on every
// event was about a fifth of a turn's CPU in the turn benchmark.
func (m *Metrics) attrs(kv ...attribute.KeyValue) metric.MeasurementOption {
	var b strings.Builder
	for _, x := range kv {
		b.WriteString(string(x.Key))
		b.WriteByte('=')
		b.WriteString(x.Value.Emit())
		b.WriteByte(0)
	}
	key := b.String()
	if o, ok := m.attrCache.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	m.attrCache.Store(key, o)
	return o
}
