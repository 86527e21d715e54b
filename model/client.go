package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"
)

// Client is a Completer for any OpenAI-compatible chat-completions endpoint
// (OpenAI, OpenRouter, vLLM, llama.cpp server, Ollama), over plain net/http.
// It retries transient failures a bounded number of times, bounds each call
// by Config.Timeout, and returns *APIError, *TimeoutError or *ProtocolError
// for UserMessage to word. It is safe for concurrent use.
type Client struct {
	url          string // the chat-completions endpoint
	logURL       string // the same, with any password redacted
	apiKey       string
	model        string
	timeout      time.Duration
	maxRetries   int
	retryBackoff time.Duration
	maxRetryWait time.Duration
	http         *http.Client
	log          *slog.Logger
}

var _ Completer = (*Client)(nil)

// NewClient returns a Client for cfg. It fails only on a missing or
// malformed BaseURL; it does not contact the endpoint.
func NewClient(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	endpoint, err := completionsURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("model: new client: %w", err)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Many sessions call the same host at once; the default of 2 idle
		// connections per host would make most calls dial again.
		t.MaxIdleConnsPerHost = 64
		hc = &http.Client{Transport: t}
	}
	return &Client{
		url:          endpoint,
		logURL:       redactURL(endpoint),
		apiKey:       cfg.APIKey,
		model:        cfg.Model,
		timeout:      cfg.Timeout,
		maxRetries:   cfg.MaxRetries,
		retryBackoff: cfg.RetryBackoff,
		maxRetryWait: cfg.MaxRetryWait,
		http:         hc,
		log:          cfg.Logger,
	}, nil
}

// String names the client without its API key, so that %v cannot leak it.
func (c *Client) String() string {
	return fmt.Sprintf("model.Client{url: %s, model: %q}", c.logURL, c.model)
}

// Complete sends req and returns the model's answer. Network errors, 408,
// 429 and 5xx are retried up to Config.MaxRetries times, after Retry-After
// when the server sent one, else after a jittered exponential backoff. The
// whole call, waits included, ends at Config.Timeout (a *TimeoutError) or
// when ctx is done (ctx's error), whichever comes first; a streamed call
// that is delivering ends only when Config.Timeout passes with no new piece
// (below).
//
// With req.OnDelta set the answer is streamed (stream.go): "stream": true
// with stream_options.include_usage, OnDelta called per piece of text and
// per tool call as its name appears, and the same Response returned at the
// end. A server that answers plain JSON instead is read as usual and its
// answer delivered as one delta. A failure is retried only while nothing
// was delivered; after that the caller gets the error. Each delta restarts
// the timeout: a long answer that keeps coming is not cut off part-way (the
// turn's own deadline in ctx still bounds it), and one that stalls fails
// Config.Timeout after its last piece.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := encodeRequest(c.model, req)
	if err != nil {
		return Response{}, fmt.Errorf("model: chat completion: %w", err)
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timedOut := &TimeoutError{After: c.timeout}
	deadline := time.AfterFunc(c.timeout, func() { cancel(timedOut) })
	defer deadline.Stop()

	start := time.Now()
	// A streamed answer that has shown the user something cannot be taken
	// back by a retry: once a delta went out, a failure is the caller's.
	var delivered bool
	if req.OnDelta != nil {
		onDelta := req.OnDelta
		req.OnDelta = func(d Delta) {
			delivered = true
			// Too late when it fired already: the call is cancelled.
			deadline.Reset(c.timeout)
			onDelta(d)
		}
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.attempt(callCtx, body, req.OnDelta)
		if err == nil {
			c.log.LogAttrs(ctx, slog.LevelDebug, "model call",
				slog.String("model", c.model), slog.Int("attempt", attempt),
				slog.Duration("elapsed", time.Since(start)),
				slog.Int("prompt_tokens", resp.Usage.PromptTokens),
				slog.Int("completion_tokens", resp.Usage.CompletionTokens),
				slog.Int("tool_calls", len(resp.Message.ToolCalls)))
			return resp, nil
		}
		if cerr := contextError(ctx, callCtx); cerr != nil {
			return Response{}, fmt.Errorf("model: chat completion: %w", cerr)
		}
		wait, retry := c.retryWait(callCtx, err, attempt)
		if !retry || delivered {
			if attempt > 1 {
				err = &retriedError{attempts: attempt, err: err}
			}
			return Response{}, fmt.Errorf("model: chat completion: %w", err)
		}
		c.log.LogAttrs(ctx, slog.LevelWarn, "model call failed, retrying",
			slog.String("url", c.logURL), slog.String("model", c.model),
			slog.Int("attempt", attempt), slog.Duration("wait", wait), slog.String("err", err.Error()))
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-callCtx.Done():
			timer.Stop()
			return Response{}, fmt.Errorf("model: chat completion: %w", contextError(ctx, callCtx))
		}
	}
}

// attempt makes one HTTP exchange. With onDelta set the request asked for a
// stream, and the answer is read as one when the server sent one.
func (c *Client) attempt(ctx context.Context, body []byte, onDelta func(Delta)) (Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if onDelta != nil {
		hreq.Header.Set("Accept", "text/event-stream, application/json")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	hreq.Header.Set("User-Agent", "hermesd")
	if c.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	hresp, err := c.http.Do(hreq)
	if err != nil {
		// net/http strips URL passwords from its errors; the key is in a
		// header and never appears.
		return Response{}, &transportError{err: err}
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, hresp.Body, 4<<10)
		_ = hresp.Body.Close()
	}()
	if onDelta != nil && hresp.StatusCode >= 200 && hresp.StatusCode <= 299 && isEventStream(hresp.Header) {
		return c.readStream(hresp.Body, onDelta)
	}
	data, err := io.ReadAll(io.LimitReader(hresp.Body, maxResponseBytes+1))
	if err != nil {
		return Response{}, &transportError{err: fmt.Errorf("read response: %w", err)}
	}
	if len(data) > maxResponseBytes {
		return Response{}, &ProtocolError{Problem: fmt.Sprintf("response larger than %d MiB", maxResponseBytes>>20)}
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return Response{}, c.apiError(hresp.StatusCode, hresp.Header, data)
	}
	resp, err := c.decodeResponse(data)
	if err == nil && onDelta != nil {
		// A server that ignored "stream" answered in one piece: deliver
		// it as one delta, so the caller's view is the same.
		announce(resp.Message, onDelta)
	}
	return resp, err
}

// retryWait decides whether a failed attempt is retried, and after how long.
func (c *Client) retryWait(ctx context.Context, err error, attempt int) (time.Duration, bool) {
	if attempt > c.maxRetries {
		return 0, false
	}
	var apiErr *APIError
	switch {
	case errors.As(err, &apiErr):
		if !apiErr.Retryable() {
			return 0, false
		}
	case errors.As(err, new(*transportError)):
	default:
		return 0, false
	}
	wait := c.backoff(attempt)
	if apiErr != nil && apiErr.RetryAfter > 0 {
		if apiErr.RetryAfter > c.maxRetryWait {
			return 0, false
		}
		wait = apiErr.RetryAfter
	}
	// A wait that outlives the call would end in a timeout that hides the
	// server's real answer: return that answer instead.
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
		return 0, false
	}
	return wait, true
}

// backoff is RetryBackoff doubled per retry, with equal jitter so that many
// sessions failing together do not retry in lockstep.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.retryBackoff << (attempt - 1)
	half := d / 2
	return half + rand.N(half+1)
}

// contextError returns nil while callCtx is live; otherwise a *TimeoutError
// when the call's own timeout fired, or the caller's context error (with its
// cause, when one was given) when ctx ended.
func contextError(ctx, callCtx context.Context) error {
	if callCtx.Err() == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		if cause := context.Cause(ctx); cause != nil && cause != err {
			return fmt.Errorf("%w: %w", err, cause)
		}
		return err
	}
	return context.Cause(callCtx)
}
