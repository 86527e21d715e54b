package model

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ModelInfo is what the rest of hermesd may know about one configured
// model: how users name it, how big its context is, whether it sees images
// and what it costs. It holds no key.
type ModelInfo struct {
	// Name is the catalog name users pick with /model.
	Name string
	// Model is the provider's id for it, sent as "model".
	Model string
	// Endpoint is the chat-completions URL, any password hidden.
	Endpoint string
	// ContextTokens is the context window in tokens; 0 when not configured.
	ContextTokens int
	// Vision says the model accepts image content parts.
	Vision bool
	// PriceIn and PriceOut are the prices per million prompt and
	// completion tokens, in the operator's currency; 0 when not configured.
	PriceIn, PriceOut float64
	// Fallback names the models tried, in order, when this one fails.
	Fallback []string
}

// Cost is the price of u at this model's prices.
func (m ModelInfo) Cost(u Usage) float64 {
	return (float64(u.PromptTokens)*m.PriceIn + float64(u.CompletionTokens)*m.PriceOut) / 1e6
}

// ModelConfig configures one catalog entry: what it is (ModelInfo; Endpoint
// is derived) and how to reach it (Client; Client.Model is Info.Model).
type ModelConfig struct {
	Info   ModelInfo
	Client Config
}

// Defaults of RouterConfig.
const (
	// DefaultBreakerFailures is how many consecutive failures open an
	// endpoint's breaker.
	DefaultBreakerFailures = 3
	// DefaultBreakerCooldown is how long an open breaker skips its endpoint
	// before one probe call is let through.
	DefaultBreakerCooldown = 30 * time.Second
	// DefaultShortRetryWait is the longest Retry-After a model with a
	// fallback waits out; a longer one falls back at once.
	DefaultShortRetryWait = 5 * time.Second
)

// RouterConfig configures a Router.
type RouterConfig struct {
	// Models is the catalog; names are unique, fallbacks name entries.
	Models []ModelConfig
	// Default is the model used when a Request names none (or one that is
	// not in the catalog); "" means the first.
	Default string
	// BreakerFailures and BreakerCooldown tune the per-endpoint breakers.
	BreakerFailures int
	BreakerCooldown time.Duration
	// ShortRetryWait is the longest Retry-After worth waiting for on a model
	// that has somewhere to fall back to.
	ShortRetryWait time.Duration
	// Observe, when set, is told of every attempt (metrics).
	Observe func(Attempt)
	// Now is the clock of the breakers; nil means time.Now.
	Now func() time.Time
	// Logger receives a warning per fallback; nil discards.
	Logger *slog.Logger
}

// Attempt is one call to one catalog model, as a Router reports it.
type Attempt struct {
	// Model is the catalog name.
	Model string
	// Usage is the answer's usage (zero on failure).
	Usage Usage
	// Err is the failure, nil on success.
	Err error
	// Fallback says the model was not the one asked for.
	Fallback bool
	// Skipped says the breaker was open and the model was not called.
	Skipped bool
	// Breaker is the endpoint's breaker state after the attempt.
	Breaker BreakerState
}

// route is one catalog entry, ready to call.
type route struct {
	info     ModelInfo
	c        Completer
	breaker  *breaker
	endpoint string
	// chain is this model then its fallbacks, depth first, each once: fixed
	// with the catalog, so worked out in NewRouter, not per call.
	chain []*route
}

// Router is a Completer over a catalog of models: it answers with the model
// a Request names (or the default), falls back along that model's chain on
// failures another model may not share (5xx, 408, timeouts, network errors,
// 429 with a long or no Retry-After), and skips an endpoint whose circuit
// breaker is open. It sets Response.Model and Response.Fallback. It is safe
// for concurrent use.
type Router struct {
	routes  map[string]*route
	order   []string
	def     string
	observe func(Attempt)
	log     *slog.Logger
}

var _ Completer = (*Router)(nil)

// NewRouter checks the catalog and builds a client per model, with one
// breaker per endpoint shared by the models on it.
func NewRouter(cfg RouterConfig) (*Router, error) {
	if len(cfg.Models) == 0 {
		return nil, errors.New("model: router: no models configured")
	}
	if cfg.BreakerFailures <= 0 {
		cfg.BreakerFailures = DefaultBreakerFailures
	}
	if cfg.BreakerCooldown <= 0 {
		cfg.BreakerCooldown = DefaultBreakerCooldown
	}
	if cfg.ShortRetryWait <= 0 {
		cfg.ShortRetryWait = DefaultShortRetryWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{routes: map[string]*route{}, observe: cfg.Observe, log: cfg.Logger}
	breakers := map[string]*breaker{}
	for _, mc := range cfg.Models {
		name := mc.Info.Name
		if name == "" {
			return nil, errors.New("model: router: a model has no name")
		}
		if _, dup := r.routes[name]; dup {
			return nil, fmt.Errorf("model: router: model %q is configured twice", name)
		}
		ccfg := mc.Client
		if ccfg.Model == "" {
			ccfg.Model = mc.Info.Model
		}
		if ccfg.Model == "" {
			ccfg.Model = name
		}
		if len(mc.Info.Fallback) > 0 && (ccfg.MaxRetryWait <= 0 || ccfg.MaxRetryWait > cfg.ShortRetryWait) {
			// A long wait is better spent on the fallback.
			ccfg.MaxRetryWait = cfg.ShortRetryWait
		}
		if ccfg.Logger == nil {
			ccfg.Logger = cfg.Logger
		}
		c, err := NewClient(ccfg)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		info := mc.Info
		info.Model = ccfg.Model
		info.Endpoint = c.logURL
		info.Fallback = slices.Clone(info.Fallback)
		b := breakers[c.url]
		if b == nil {
			b = newBreaker(cfg.BreakerFailures, cfg.BreakerCooldown, cfg.Now)
			breakers[c.url] = b
		}
		r.routes[name] = &route{info: info, c: c, breaker: b, endpoint: c.url}
		r.order = append(r.order, name)
	}
	for _, name := range r.order {
		for _, fb := range r.routes[name].info.Fallback {
			if _, ok := r.routes[fb]; !ok {
				return nil, fmt.Errorf("model: router: model %q falls back to %q, which is not configured", name, fb)
			}
		}
	}
	for _, name := range r.order {
		r.routes[name].chain = r.walkChain(name)
	}
	r.def = r.order[0]
	if cfg.Default != "" {
		if _, ok := r.routes[cfg.Default]; !ok {
			return nil, fmt.Errorf("model: router: default model %q is not configured", cfg.Default)
		}
		r.def = cfg.Default
	}
	return r, nil
}

// Models returns the catalog in configuration order.
func (r *Router) Models() []ModelInfo {
	out := make([]ModelInfo, 0, len(r.order))
	for _, name := range r.order {
		info := r.routes[name].info
		info.Fallback = slices.Clone(info.Fallback)
		out = append(out, info)
	}
	return out
}

// Info returns the catalog entry called name.
func (r *Router) Info(name string) (ModelInfo, bool) {
	rt, ok := r.routes[name]
	if !ok {
		return ModelInfo{}, false
	}
	info := rt.info
	info.Fallback = slices.Clone(info.Fallback)
	return info, true
}

// Default is the name of the model used when a Request names none.
func (r *Router) Default() string { return r.def }

// Resolve is the catalog name a Request.Model of name is answered by: name
// itself when configured, else the default.
func (r *Router) Resolve(name string) string {
	if _, ok := r.routes[name]; ok {
		return name
	}
	return r.def
}

// Breaker returns the state of the breaker of the endpoint serving name.
func (r *Router) Breaker(name string) (BreakerState, bool) {
	rt, ok := r.routes[name]
	if !ok {
		return "", false
	}
	return rt.breaker.snapshot(), true
}

// walkChain is the model name then its fallbacks, depth first, each once.
func (r *Router) walkChain(name string) []*route {
	var out []*route
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		rt := r.routes[n]
		out = append(out, rt)
		for _, fb := range rt.info.Fallback {
			walk(fb)
		}
	}
	walk(name)
	return out
}

// Complete answers req with the model it names, or along its fallback chain.
// Each model's client retries as usual first (a short Retry-After is waited
// out); a failure that is the model's or its endpoint's moves on to the next
// model. A failure that is the request's (400, 401, a cancelled ctx) is
// returned as is. When every model failed or was skipped, the last real
// failure is returned, or an *UnavailableError when none was tried.
//
// When streaming, a fallback after the failed model showed some text sends
// Delta{Reset: true} before (or with) the next model's first piece.
func (r *Router) Complete(ctx context.Context, req Request) (Response, error) {
	asked := r.Resolve(req.Model)
	onDelta := req.OnDelta
	var shown, reset bool
	if onDelta != nil {
		req.OnDelta = func(d Delta) {
			if reset {
				d.Reset, reset = true, false
			}
			shown = true
			onDelta(d)
		}
	}
	var lastErr error
	var skipped []string
	for i, rt := range r.routes[asked].chain {
		name := rt.info.Name
		fallback := i > 0
		ok, probe := rt.breaker.allow()
		if !ok {
			skipped = append(skipped, name)
			r.report(Attempt{Model: name, Fallback: fallback, Skipped: true, Breaker: rt.breaker.snapshot()})
			continue
		}
		resp, err := rt.c.Complete(ctx, req)
		if err == nil {
			rt.breaker.success()
			r.report(Attempt{Model: name, Usage: resp.Usage, Fallback: fallback, Breaker: rt.breaker.snapshot()})
			if reset && onDelta != nil {
				onDelta(Delta{Reset: true}) // the fallback said nothing to replace the text with
			}
			resp.Model, resp.Fallback = name, fallback
			return resp, nil
		}
		if ctx.Err() != nil {
			rt.breaker.release(probe)
			return Response{}, err
		}
		hold, endpointFault := failureOf(err)
		if endpointFault {
			rt.breaker.failure(hold, probe)
		} else {
			rt.breaker.release(probe)
		}
		r.report(Attempt{Model: name, Err: err, Fallback: fallback, Breaker: rt.breaker.snapshot()})
		if !endpointFault {
			return Response{}, err
		}
		lastErr = err
		if shown {
			shown, reset = false, true
		}
		r.log.LogAttrs(ctx, slog.LevelWarn, "model failed, trying the next",
			slog.String("model", name), slog.String("err", err.Error()))
	}
	if lastErr != nil {
		return Response{}, lastErr
	}
	return Response{}, &UnavailableError{Models: skipped}
}

// failureOf says whether err is the endpoint's fault (worth a fallback and a
// breaker count) and, for a 429 with a Retry-After, how long to leave the
// endpoint alone.
func failureOf(err error) (hold time.Duration, endpointFault bool) {
	var apiErr *APIError
	switch {
	case errors.As(err, &apiErr):
		if !apiErr.Retryable() {
			return 0, false
		}
		if apiErr.Status == http.StatusTooManyRequests {
			return apiErr.RetryAfter, true
		}
		return 0, true
	case errors.As(err, new(*TimeoutError)), errors.As(err, new(*transportError)):
		return 0, true
	case errors.As(err, new(*ProtocolError)):
		// An HTML page or garbage: this endpoint cannot answer; another may.
		return 0, true
	}
	return 0, false
}

func (r *Router) report(a Attempt) {
	if r.observe != nil {
		r.observe(a)
	}
}

// UnavailableError reports that every model that could answer was skipped
// because its endpoint's breaker is open after repeated failures.
type UnavailableError struct {
	// Models are the catalog names skipped.
	Models []string
}

// Error names the skipped models.
func (e *UnavailableError) Error() string {
	return "model: every model is unavailable after repeated failures: " + strings.Join(e.Models, ", ")
}
