package model_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/model/modeltest"
)

// fakeClock is a breaker clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// entry is a catalog entry for srv with fast, few retries.
func entry(name string, srv *modeltest.Server, fallback ...string) model.ModelConfig {
	return model.ModelConfig{
		Info:   model.ModelInfo{Name: name, Model: name + "-id", ContextTokens: 8000, PriceIn: 1, PriceOut: 2, Fallback: fallback},
		Client: model.Config{BaseURL: srv.URL(), RetryBackoff: time.Millisecond, MaxRetries: -1, Timeout: 5 * time.Second},
	}
}

func newRouter(t *testing.T, cfg model.RouterConfig) *model.Router {
	t.Helper()
	r, err := model.NewRouter(cfg)
	if err != nil {
		t.Fatalf("NewRouter: %v", err)
	}
	return r
}

func TestRouter_FailingPrimaryFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler modeltest.Handler
	}{
		{"500", modeltest.Fail(500, "boom", 1<<30, nil)},
		{"503", modeltest.Fail(503, "overloaded", 1<<30, nil)},
		{"429 without Retry-After", modeltest.Fail(429, "slow down", 1<<30, nil)},
		{"HTML page", modeltest.Raw(200, "<html>login</html>")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := modeltest.NewServer(t, modeltest.WithHandler(tc.handler))
			backup := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("from backup")))
			var attempts []model.Attempt
			var mu sync.Mutex
			r := newRouter(t, model.RouterConfig{
				Models: []model.ModelConfig{entry("main", primary, "spare"), entry("spare", backup)},
				Observe: func(a model.Attempt) {
					mu.Lock()
					defer mu.Unlock()
					attempts = append(attempts, a)
				},
			})
			resp, err := r.Complete(t.Context(), userRequest("hi"))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Message.Content != "from backup" || resp.Model != "spare" || !resp.Fallback {
				t.Errorf("resp = %q by %q fallback=%v, want the backup's answer marked as a fallback", resp.Message.Content, resp.Model, resp.Fallback)
			}
			if got := backup.LastRequest(t).Model; got != "spare-id" {
				t.Errorf("backup got model %q, want the provider id", got)
			}
			if primary.Calls() != 1 {
				t.Errorf("primary calls = %d", primary.Calls())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(attempts) != 2 || attempts[0].Err == nil || attempts[0].Model != "main" || attempts[1].Err != nil || !attempts[1].Fallback {
				t.Errorf("attempts = %+v", attempts)
			}
		})
	}
}

func TestRouter_RequestErrorsDoNotFallBack(t *testing.T) {
	primary := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(400, "context length exceeded", 1<<30, nil)))
	backup := modeltest.NewServer(t)
	r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{entry("main", primary, "spare"), entry("spare", backup)}})
	_, err := r.Complete(t.Context(), userRequest("hi"))
	var apiErr *model.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("err = %v, want the 400", err)
	}
	if backup.Calls() != 0 {
		t.Errorf("the backup was called for the request's own fault")
	}
}

func TestRouter_BreakerOpensSkipsAndCloses(t *testing.T) {
	var mu sync.Mutex
	up := false
	primary := modeltest.NewServer(t, modeltest.WithHandler(func(ctx context.Context, req model.Request) (model.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			return model.Response{}, &model.APIError{Status: 502, Message: "bad gateway"}
		}
		return modeltest.Reply("primary back")(ctx, req)
	}))
	backup := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("backup")))
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	r := newRouter(t, model.RouterConfig{
		Models:          []model.ModelConfig{entry("main", primary, "spare"), entry("spare", backup)},
		BreakerFailures: 3, BreakerCooldown: time.Minute, Now: clock.Now,
	})
	for i := range 3 {
		resp, err := r.Complete(t.Context(), userRequest("hi"))
		if err != nil || resp.Model != "spare" {
			t.Fatalf("call %d: %v %+v", i, err, resp)
		}
	}
	if st, _ := r.Breaker("main"); st != model.BreakerOpen {
		t.Fatalf("breaker after 3 failures = %s, want open", st)
	}
	// Open: the primary is not called at all.
	for range 5 {
		if resp, err := r.Complete(t.Context(), userRequest("hi")); err != nil || resp.Model != "spare" {
			t.Fatalf("while open: %v %+v", err, resp)
		}
	}
	if primary.Calls() != 3 {
		t.Errorf("primary called %d times, want 3: an open breaker must skip it", primary.Calls())
	}
	// Still failing after the cooldown: one probe, then open again.
	clock.Advance(time.Minute)
	if st, _ := r.Breaker("main"); st != model.BreakerHalfOpen {
		t.Errorf("breaker after cooldown = %s, want half-open", st)
	}
	if _, err := r.Complete(t.Context(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	if primary.Calls() != 4 {
		t.Errorf("primary calls = %d, want one probe", primary.Calls())
	}
	if st, _ := r.Breaker("main"); st != model.BreakerOpen {
		t.Errorf("breaker after a failed probe = %s, want open", st)
	}
	// Recovered: the next probe closes it and the primary answers again.
	mu.Lock()
	up = true
	mu.Unlock()
	clock.Advance(time.Minute)
	resp, err := r.Complete(t.Context(), userRequest("hi"))
	if err != nil || resp.Model != "main" || resp.Fallback || resp.Message.Content != "primary back" {
		t.Fatalf("after recovery: %v %+v", err, resp)
	}
	if st, _ := r.Breaker("main"); st != model.BreakerClosed {
		t.Errorf("breaker after a good probe = %s, want closed", st)
	}
}

func TestRouter_RetryAfter(t *testing.T) {
	t.Run("short wait is waited out", func(t *testing.T) {
		primary := modeltest.NewServer(t, modeltest.WithHandler(modeltest.RateLimit(300*time.Millisecond, 1, modeltest.Reply("after the wait"))))
		backup := modeltest.NewServer(t)
		e := entry("main", primary, "spare")
		e.Client.MaxRetries = 2
		r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{e, entry("spare", backup)}, ShortRetryWait: 2 * time.Second})
		resp, err := r.Complete(t.Context(), userRequest("hi"))
		if err != nil || resp.Model != "main" || resp.Message.Content != "after the wait" {
			t.Fatalf("%v %+v", err, resp)
		}
		reqs := primary.Requests()
		if len(reqs) != 2 || reqs[1].Received.Sub(reqs[0].Received) < 300*time.Millisecond {
			t.Errorf("retry came %v after the 429, want at least its Retry-After", reqs[len(reqs)-1].Received.Sub(reqs[0].Received))
		}
		if backup.Calls() != 0 {
			t.Error("fell back instead of waiting a short Retry-After")
		}
	})
	t.Run("long wait falls back and leaves the endpoint alone", func(t *testing.T) {
		primary := modeltest.NewServer(t, modeltest.WithHandler(modeltest.RateLimit(time.Hour, 1<<30, nil)))
		backup := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("backup")))
		e := entry("main", primary, "spare")
		e.Client.MaxRetries = 2
		clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
		r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{e, entry("spare", backup)}, Now: clock.Now, BreakerCooldown: time.Second})
		start := time.Now()
		resp, err := r.Complete(t.Context(), userRequest("hi"))
		if err != nil || resp.Model != "spare" {
			t.Fatalf("%v %+v", err, resp)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("took %s: waited for a long Retry-After", el)
		}
		clock.Advance(10 * time.Minute) // past the cooldown, within the Retry-After
		if _, err := r.Complete(t.Context(), userRequest("hi")); err != nil {
			t.Fatal(err)
		}
		if primary.Calls() != 1 {
			t.Errorf("primary calls = %d: called again before its Retry-After", primary.Calls())
		}
		clock.Advance(10 * time.Minute) // an hour is not trusted: probed after 15 minutes
		if _, err := r.Complete(t.Context(), userRequest("hi")); err != nil {
			t.Fatal(err)
		}
		if primary.Calls() != 2 {
			t.Errorf("primary calls = %d, want one probe after the longest hold", primary.Calls())
		}
	})
}

func TestRouter_StreamFallbackResets(t *testing.T) {
	primary := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("half an ans")),
		modeltest.WithStreaming(modeltest.Streaming{ChunkRunes: 5, CutAfter: 2}))
	backup := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("whole answer")))
	r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{entry("main", primary, "spare"), entry("spare", backup)}})
	var d deltas
	resp, err := r.Complete(t.Context(), streamed("hi", &d))
	if err != nil {
		t.Fatal(err)
	}
	all := d.all()
	if len(all) < 2 || all[0].Text != "half " || all[0].Reset || !all[1].Reset {
		t.Fatalf("deltas = %+v, want the partial text, then a reset with the backup's first piece", all)
	}
	if d.text() != "whole answer" || resp.Message.Content != "whole answer" || !resp.Fallback {
		t.Errorf("shown %q, answer %q fallback=%v", d.text(), resp.Message.Content, resp.Fallback)
	}
}

func TestRouter_CatalogAndDefault(t *testing.T) {
	a := modeltest.NewServer(t)
	b := modeltest.NewServer(t)
	eb := entry("vision", b)
	eb.Info.Vision = true
	eb.Info.ContextTokens = 128000
	r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{entry("small", a), eb}, Default: "vision"})
	if r.Default() != "vision" {
		t.Errorf("default = %q", r.Default())
	}
	ms := r.Models()
	if len(ms) != 2 || ms[0].Name != "small" || ms[1].Name != "vision" || !ms[1].Vision || ms[1].ContextTokens != 128000 {
		t.Errorf("models = %+v", ms)
	}
	info, ok := r.Info("small")
	if !ok || info.Vision || info.Model != "small-id" || info.Endpoint != a.URL()+"/chat/completions" {
		t.Errorf("Info(small) = %+v %v", info, ok)
	}
	if got := info.Cost(model.Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000}); got != 2 {
		t.Errorf("cost = %v, want 1 + 1", got)
	}
	if _, ok := r.Info("nope"); ok {
		t.Error("Info of an unknown model")
	}
	// No model named, or an unknown one: the default answers.
	for _, name := range []string{"", "gone-from-config"} {
		req := userRequest("hi")
		req.Model = name
		resp, err := r.Complete(t.Context(), req)
		if err != nil || resp.Model != "vision" || resp.Fallback {
			t.Errorf("Model %q: %v %+v", name, err, resp)
		}
	}
	req := userRequest("hi")
	req.Model = "small"
	if resp, err := r.Complete(t.Context(), req); err != nil || resp.Model != "small" {
		t.Errorf("Model small: %v %+v", err, resp)
	}
	if a.Calls() != 1 || b.Calls() != 2 {
		t.Errorf("calls a=%d b=%d", a.Calls(), b.Calls())
	}
}

func TestRouter_BadCatalogs(t *testing.T) {
	srv := modeltest.NewServer(t)
	for name, cfg := range map[string]model.RouterConfig{
		"empty":            {},
		"duplicate":        {Models: []model.ModelConfig{entry("a", srv), entry("a", srv)}},
		"unknown fallback": {Models: []model.ModelConfig{entry("a", srv, "b")}},
		"unknown default":  {Models: []model.ModelConfig{entry("a", srv)}, Default: "b"},
		"bad URL":          {Models: []model.ModelConfig{{Info: model.ModelInfo{Name: "a"}, Client: model.Config{BaseURL: "ftp://x"}}}},
	} {
		if _, err := model.NewRouter(cfg); err == nil {
			t.Errorf("%s: NewRouter accepted it", name)
		}
	}
}

func TestRouter_AllSkippedIsUnavailable(t *testing.T) {
	dead := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(http.StatusBadGateway, "down", 1<<30, nil)))
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{entry("only", dead)}, BreakerFailures: 1, Now: clock.Now})
	if _, err := r.Complete(t.Context(), userRequest("hi")); err == nil {
		t.Fatal("a dead model answered")
	}
	_, err := r.Complete(t.Context(), userRequest("hi"))
	var ue *model.UnavailableError
	if !errors.As(err, &ue) || dead.Calls() != 1 {
		t.Fatalf("err = %v after %d calls, want UnavailableError without a call", err, dead.Calls())
	}
	if msg := model.UserMessage(err); msg == "" {
		t.Error("no user message")
	}
}

func TestRouter_FallbackLoopsEnd(t *testing.T) {
	a := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(500, "a down", 1<<30, nil)))
	b := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(500, "b down", 1<<30, nil)))
	r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{entry("a", a, "b"), entry("b", b, "a")}})
	_, err := r.Complete(t.Context(), userRequest("hi"))
	var apiErr *model.APIError
	if !errors.As(err, &apiErr) || apiErr.Message != "b down" {
		t.Fatalf("err = %v, want the last failure", err)
	}
	if a.Calls() != 1 || b.Calls() != 1 {
		t.Errorf("calls a=%d b=%d, want each once", a.Calls(), b.Calls())
	}
}

// TestRouter_BreakerIsPerEndpoint: two models served by one endpoint share
// its breaker (a dead provider is dead for both); another endpoint's is
// untouched.
func TestRouter_BreakerIsPerEndpoint(t *testing.T) {
	dead := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Fail(500, "down", 1<<30, nil)))
	alive := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("alive")))
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	r := newRouter(t, model.RouterConfig{
		Models:          []model.ModelConfig{entry("a", dead, "c"), entry("b", dead, "c"), entry("c", alive)},
		BreakerFailures: 2, Now: clock.Now,
	})
	for range 2 {
		if _, err := r.Complete(t.Context(), userRequest("hi")); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b"} {
		if st, _ := r.Breaker(name); st != model.BreakerOpen {
			t.Errorf("breaker of %s = %s, want open: same endpoint as a", name, st)
		}
	}
	if st, _ := r.Breaker("c"); st != model.BreakerClosed {
		t.Errorf("breaker of c = %s", st)
	}
	req := userRequest("hi")
	req.Model = "b"
	resp, err := r.Complete(t.Context(), req)
	if err != nil || resp.Model != "c" || dead.Calls() != 2 {
		t.Errorf("b on an open endpoint: %v %+v, dead calls %d", err, resp, dead.Calls())
	}
}

// TestRouter_HangingPrimaryTimesOutThenFallsBack: a primary that never
// answers costs its own timeout, not the caller's whole budget.
func TestRouter_HangingPrimaryTimesOutThenFallsBack(t *testing.T) {
	hang := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Delay(time.Hour, modeltest.Echo())))
	backup := modeltest.NewServer(t, modeltest.WithHandler(modeltest.Reply("backup")))
	e := entry("main", hang, "spare")
	e.Client.Timeout = 200 * time.Millisecond
	r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{e, entry("spare", backup)}})
	start := time.Now()
	resp, err := r.Complete(t.Context(), userRequest("hi"))
	if err != nil || resp.Model != "spare" || !resp.Fallback {
		t.Fatalf("%v %+v", err, resp)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s", el)
	}
}

// TestRouter_CancelledCallerDoesNotFallBack: /stop ends the call; no other
// model is asked and the breaker counts nothing.
func TestRouter_CancelledCallerDoesNotFallBack(t *testing.T) {
	arrived := make(chan struct{}, 1)
	primary := modeltest.NewServer(t, modeltest.WithHandler(func(ctx context.Context, req model.Request) (model.Response, error) {
		arrived <- struct{}{}
		<-ctx.Done()
		return model.Response{}, ctx.Err()
	}))
	backup := modeltest.NewServer(t)
	r := newRouter(t, model.RouterConfig{Models: []model.ModelConfig{entry("main", primary, "spare"), entry("spare", backup)}, BreakerFailures: 1})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := r.Complete(ctx, userRequest("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if backup.Calls() != 0 {
		t.Error("a cancelled call fell back")
	}
	if st, _ := r.Breaker("main"); st != model.BreakerClosed {
		t.Errorf("breaker = %s after a cancellation", st)
	}
}
