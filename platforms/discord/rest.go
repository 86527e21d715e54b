package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/hermesd/hermesd/retry"
)

// Discord JSON error codes the adapter acts on.
const (
	codeTooLarge           = 40005
	codeMissingPermissions = 50013
	codeVoiceForbidden     = 50173
)

// APIError is a refusal from Discord's REST API, after the adapter's own
// retries. Callers can tell a permanent refusal (a 4xx: unknown channel,
// missing permission) from a temporary one with Temporary.
type APIError struct {
	// Op is what the adapter was doing ("send message", "typing", …).
	Op string
	// Status is the HTTP status.
	Status int
	// Code is Discord's JSON error code (10003, 50013, …), or 0.
	Code int
	// Message is Discord's error message.
	Message string
	// RetryAfter is the wait Discord asked for on a 429.
	RetryAfter time.Duration
}

// Error reads like "discord: send message: HTTP 404, code 10003: Unknown Channel".
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "discord: %s: HTTP %d", e.Op, e.Status)
	if e.Code != 0 {
		fmt.Fprintf(&b, ", code %d", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	return b.String()
}

// Temporary reports whether the same request may succeed later (rate
// limits and server errors).
func (e *APIError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// request is one REST call.
type request struct {
	op          string
	method, url string
	contentType string
	body        []byte
	// attempts overrides Config.MaxAttempts (1 = no retry).
	attempts int
	// log carries the session key when the call is for one; nil = a.log.
	log *slog.Logger
}

// do performs r with bounded retries: a 429 waits the retry_after Discord
// asked for, a 5xx or network error backs off exponentially; every wait ends
// with ctx. Other refusals return an *APIError at once. discordgo's own
// rate-limit sleeps ignore contexts, so it is told not to retry, and the
// bucket's wait is taken here, cancellably, before each try.
func (a *Adapter) do(ctx context.Context, r request) ([]byte, error) {
	maxAttempts := r.attempts
	if maxAttempts <= 0 {
		maxAttempts = a.cfg.MaxAttempts
	}
	// After a server or network error: 250 ms, 500 ms, 1 s, … capped at 5 s.
	back := retry.Backoff{First: 250 * time.Millisecond, Max: 5 * time.Second}
	for attempt := 1; ; attempt++ {
		if err := a.waitBucket(ctx, r); err != nil {
			return nil, err
		}
		raw, err := a.dg.RequestRaw(r.method, r.url, r.contentType, r.body, "", 0,
			discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false), discordgo.WithRestRetries(0))
		if err == nil {
			return raw, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("discord: %s: %w", r.op, ctx.Err())
		}
		err = sanitize(r.op, err)
		var apiErr *APIError
		isAPI := errors.As(err, &apiErr)
		a.observe(apiErr, isAPI)
		if isAPI && !apiErr.Temporary() {
			return nil, err
		}
		wait := back.Next()
		if isAPI && apiErr.Status == http.StatusTooManyRequests {
			wait = max(apiErr.RetryAfter, 50*time.Millisecond)
			if wait > a.cfg.MaxRetryWait {
				a.health.fail(err)
				return nil, err
			}
		}
		if attempt >= maxAttempts {
			a.health.fail(err)
			return nil, fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		log := r.log
		if log == nil {
			log = a.log
		}
		log.Debug("retrying REST call", "op", r.op, "attempt", attempt, "in", wait, "err", err)
		if err := retry.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("discord: %s: %w", r.op, err)
		}
	}
}

// waitBucket sleeps, cancellably, for the rate-limit bucket of r's URL when
// Discord said it is exhausted, so that discordgo's uncancellable bucket
// sleep finds nothing left to wait. A busy bucket (a request in flight on
// it) is left to discordgo.
func (a *Adapter) waitBucket(ctx context.Context, r request) error {
	b := a.dg.Ratelimiter.GetBucket(strings.SplitN(r.url, "?", 2)[0])
	if !b.TryLock() {
		return nil
	}
	wait := a.dg.Ratelimiter.GetWaitTime(b, 1)
	b.Unlock()
	if wait <= 0 {
		return nil
	}
	if wait > a.cfg.MaxRetryWait {
		return &APIError{Op: r.op, Status: http.StatusTooManyRequests, Message: "rate limited", RetryAfter: wait}
	}
	if err := retry.Sleep(ctx, wait); err != nil {
		return fmt.Errorf("discord: %s: waiting for rate limit: %w", r.op, err)
	}
	return nil
}

// sanitize turns discordgo's errors into *APIError, so that no discordgo
// type leaves the package; other errors (network) are wrapped with op.
func sanitize(op string, err error) error {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil {
		return &APIError{Op: op, Status: http.StatusTooManyRequests, Message: rl.Message, RetryAfter: rl.RetryAfter}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		e := &APIError{Op: op, Status: re.Response.StatusCode}
		if re.Message != nil {
			e.Code, e.Message = re.Message.Code, re.Message.Message
		}
		if e.Message == "" {
			e.Message = http.StatusText(e.Status)
		}
		return e
	}
	return fmt.Errorf("discord: %s: %v", op, err)
}

// errorCode returns Discord's JSON error code of err, or 0.
func errorCode(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// errorStatus returns the HTTP status of err, or 0.
func errorStatus(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// observe reports a failed call to the metrics hooks, if any.
func (a *Adapter) observe(apiErr *APIError, isAPI bool) {
	switch {
	case isAPI && apiErr.Status == http.StatusTooManyRequests:
		if a.deps.OnRateLimited != nil {
			a.deps.OnRateLimited(apiErr.RetryAfter)
		}
	case a.deps.OnAPIError == nil:
	case isAPI:
		a.deps.OnAPIError(apiErr.Status)
	default:
		a.deps.OnAPIError(0) // network error
	}
}
