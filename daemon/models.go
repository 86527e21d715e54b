package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms/web"
	"github.com/hermesd/hermesd/store"
)

// buildModel is the Completer turns call: a test's model, the offline
// assistant, or a Router over the configured catalog (config.Models, one
// entry for the single-model keys). The router is returned too (nil
// otherwise) for /model, /usage and the metrics; name is what /status shows.
func (d *Daemon) buildModel(cfg config.Config, log *slog.Logger, o Options) (c model.Completer, r *model.Router, name string, err error) {
	if o.Model != nil {
		return o.Model, nil, "test model", nil
	}
	if cfg.Offline() {
		return model.Offline{}, nil, "offline assistant (set OPENAI_BASE_URL to use a model)", nil
	}
	rc := model.RouterConfig{Default: cfg.DefaultModel, Logger: log, Observe: d.modelAttempt}
	for _, m := range cfg.Models {
		rc.Models = append(rc.Models, model.ModelConfig{
			Info: model.ModelInfo{Name: m.Name, Model: m.Model, ContextTokens: m.ContextTokens, Vision: m.Vision,
				PriceIn: m.PriceIn, PriceOut: m.PriceOut, Fallback: m.Fallback},
			Client: model.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model, Timeout: m.Timeout, Logger: log},
		})
	}
	r, err = model.NewRouter(rc)
	if err != nil {
		if len(cfg.Models) == 1 && cfg.ModelBaseURL != "" {
			err = fmt.Errorf("OPENAI_BASE_URL: %w", err)
		}
		return nil, nil, "", err
	}
	return r, r, r.Default(), nil
}

// modelAttempt feeds the router's attempts to the metrics. The metrics are
// built after the router, before any call.
func (d *Daemon) modelAttempt(a model.Attempt) {
	m := d.obs.metrics
	if m == nil {
		return
	}
	outcome := "ok"
	switch {
	case a.Skipped:
		outcome = "skipped"
	case a.Err != nil:
		outcome = "error"
	}
	m.ModelAttempt(a.Model, outcome, a.Fallback, string(a.Breaker))
}

// Models returns the model catalog, or nil when hermesd runs one fixed
// Completer (the offline assistant, a test's model).
func (d *Daemon) Models() *model.Router { return d.router }

var (
	_ actors.ModelSaver = persistence{}
	_ actors.UsageBook  = persistence{}
)

// SaveModel implements actors.ModelSaver.
func (p persistence) SaveModel(ctx context.Context, s messages.Session, name string) error {
	return fencedErr(p.st.SetSessionModel(withStoreFence(ctx), s.Key(), name))
}

// AddUsage implements actors.UsageBook.
func (p persistence) AddUsage(s messages.Session, name string, u model.Usage, done func(error)) {
	p.st.AddUsageAsync(s.Key(), name, u.PromptTokens, u.CompletionTokens, done)
}

// Usage implements actors.UsageBook.
func (p persistence) Usage(ctx context.Context, s messages.Session) ([]actors.UsageEntry, string, error) {
	today := p.st.Today()
	rows, err := p.st.Usage(ctx, s.Key())
	if err != nil {
		return nil, "", err
	}
	out := make([]actors.UsageEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, actors.UsageEntry{Day: r.Day, Model: r.Model, Calls: r.Calls, TokensIn: r.TokensIn, TokensOut: r.TokensOut})
	}
	return out, today, nil
}

// handleUsage serves GET /api/sessions/{key}/usage: the session's tokens
// and cost today and in total, and per model, as /usage shows them.
func (d *Daemon) handleUsage(w http.ResponseWriter, r *http.Request) {
	s, err := messages.ParseKey(r.PathValue("key"))
	if err != nil {
		web.WriteError(w, http.StatusBadRequest, "bad_key", "not a session key: "+err.Error())
		return
	}
	entries, today, err := persistence{d.store}.Usage(r.Context(), s)
	if err != nil {
		status := http.StatusServiceUnavailable
		if errors.Is(err, store.ErrInvalid) {
			status = http.StatusBadRequest
		}
		web.WriteError(w, status, "store", err.Error())
		return
	}
	var cat actors.Catalog
	if d.router != nil {
		cat = d.router
	}
	sum := actors.Summarize(entries, today, cat)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Session string `json:"session"`
		actors.UsageSummary
	}{s.Key(), sum})
}
