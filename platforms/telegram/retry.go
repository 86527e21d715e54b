package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-telegram/bot"

	"github.com/hermesd/hermesd/retry"
)

// Retry budgets of one outgoing call.
const (
	// maxRateLimitRetries bounds how often one call waits out a 429.
	maxRateLimitRetries = 3
	// maxTransientRetries bounds retries after 5xx and network errors.
	maxTransientRetries = 3
)

// failure is what an error from a Bot API call means for the caller.
type failure int

const (
	failOther       failure = iota // give up, report
	failRateLimited                // 429: wait retry_after, then retry
	failTransient                  // 5xx or a network error: back off, retry
	failUncertain                  // timed out after sending: maybe delivered, do not retry
	failBlocked                    // 403 blocked by the user
	failForbidden                  // any other 403
	failBadRequest                 // 400: the request itself is wrong; callers may fall back
	failCanceled                   // the caller's context ended
)

// classify says what err, from a call made under parent, means; for 429 it
// also returns how long Telegram asked to wait.
func classify(parent context.Context, err error) (failure, time.Duration) {
	if parent.Err() != nil {
		return failCanceled, 0
	}
	var tm *bot.TooManyRequestsError
	if errors.As(err, &tm) {
		return failRateLimited, max(time.Duration(tm.RetryAfter)*time.Second, time.Second)
	}
	if errors.Is(err, bot.ErrorForbidden) {
		if strings.Contains(strings.ToLower(err.Error()), "blocked") {
			return failBlocked, 0
		}
		return failForbidden, 0
	}
	if errors.Is(err, bot.ErrorBadRequest) {
		return failBadRequest, 0
	}
	var se *serverError
	if errors.As(err, &se) {
		return failTransient, 0
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return failTransient, 0 // never reached Telegram: safe to retry
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return failUncertain, 0
	}
	// Any other transport error (http.Client wraps them all in *url.Error,
	// a net.Error): a timeout may have delivered the message; a reset or a
	// refused connection is worth another try, as users of such gateways
	// expect.
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return failUncertain, 0
		}
		return failTransient, 0
	}
	return failOther, 0
}

// isEntityError reports a 400 about the HTML markup, after which the same
// text goes out again as plain text.
func isEntityError(err error) bool {
	s := strings.ToLower(err.Error())
	return errors.Is(err, bot.ErrorBadRequest) &&
		(strings.Contains(s, "can't parse entities") || strings.Contains(s, "unsupported start tag") || strings.Contains(s, "can't find end"))
}

// isVoiceForbidden reports Telegram's refusal of voice notes in this chat.
func isVoiceForbidden(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "VOICE_MESSAGES_FORBIDDEN")
}

// attempt runs one outgoing call for the chat held in slot (session key for
// the log), paced, with
// bounded retries of what is safe to retry: 429 after retry_after, 5xx and
// network errors with backoff. A timeout is reported as ErrUncertain and a
// 403 as ErrBlocked/ErrForbidden, neither retried; a 400 is returned for the
// caller to fall back.
func (a *Adapter) attempt(ctx context.Context, slot *chatSlot, key, method string, fn func(ctx context.Context) error) error {
	back := retry.NewBackoff(500*time.Millisecond, 4*time.Second)
	rateLimited, transient := 0, 0
	for {
		if err := a.out.pace(ctx, slot); err != nil {
			return fmt.Errorf("%s: waiting for the rate limit: %w", method, err)
		}
		actx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		err := fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		kind, wait := classify(ctx, err)
		a.observe(kind, wait, err)
		switch kind {
		case failRateLimited:
			if rateLimited++; rateLimited > maxRateLimitRetries {
				return fmt.Errorf("%s: %w after %d retries: %w", method, ErrRateLimited, maxRateLimitRetries, err)
			}
			a.log.Warn("telegram rate limit; waiting", "session", key, "method", method, "retry_after", wait)
			if err := retry.Sleep(ctx, wait); err != nil {
				return fmt.Errorf("%s: waiting out a 429: %w", method, err)
			}
		case failTransient:
			if transient++; transient > maxTransientRetries {
				return fmt.Errorf("%s: giving up after %d retries: %w", method, maxTransientRetries, err)
			}
			a.log.Warn("telegram call failed; retrying", "session", key, "method", method, "err", err)
			if err := back.Wait(ctx); err != nil {
				return fmt.Errorf("%s: %w", method, err)
			}
		case failUncertain:
			return fmt.Errorf("%s: %w: %w", method, ErrUncertain, err)
		case failBlocked:
			return fmt.Errorf("%s: %w: %w", method, ErrBlocked, err)
		case failForbidden:
			return fmt.Errorf("%s: %w: %w", method, ErrForbidden, err)
		case failCanceled:
			return fmt.Errorf("%s: %w", method, ctx.Err())
		default:
			return fmt.Errorf("%s: %w", method, err)
		}
	}
}

// observe reports a failed call to the metrics hooks, if any.
func (a *Adapter) observe(kind failure, wait time.Duration, err error) {
	switch kind {
	case failCanceled:
	case failRateLimited:
		if a.deps.OnRateLimited != nil {
			a.deps.OnRateLimited(wait)
		}
	default:
		if a.deps.OnAPIError == nil {
			return
		}
		status := 0 // network error or timeout
		var se *serverError
		switch {
		case errors.As(err, &se):
			status = se.status
		case kind == failBlocked || kind == failForbidden:
			status = 403
		case kind == failBadRequest:
			status = 400
		}
		a.deps.OnAPIError(status)
	}
}
