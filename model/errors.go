package model

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// APIError is an HTTP error answered by the model endpoint (or a 200 answer
// that carried an error object, as OpenRouter sends when a provider fails
// mid-way). Callers branch on Status; users see UserMessage.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the server's own explanation, trimmed to one line, with the
	// API key scrubbed out should the server echo it.
	Message string
	// RetryAfter is the server's Retry-After (or retry-after-ms) hint; zero
	// when it sent none.
	RetryAfter time.Duration
}

// Error describes the failure for logs; it never contains the API key.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model endpoint answered %d", e.Status)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", formatDuration(e.RetryAfter))
	}
	return b.String()
}

// Retryable reports whether the same request may succeed later: request
// timeouts (408), rate limits (429) and server errors (5xx). The client
// retries exactly these, plus network errors.
func (e *APIError) Retryable() bool {
	return e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// TimeoutError reports that a Complete call ran out of its configured
// Timeout. It unwraps to context.DeadlineExceeded, so errors.Is works as for
// any deadline, while UserMessage can still say how long the user waited.
type TimeoutError struct {
	// After is the configured timeout.
	After time.Duration
}

// Error says how long the model was given.
func (e *TimeoutError) Error() string {
	return "model did not answer within " + formatDuration(e.After)
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// Timeout reports true, as net.Error does for timeouts.
func (e *TimeoutError) Timeout() bool { return true }

// ProtocolError reports an answer that is not a usable chat completion:
// invalid JSON, an HTML page (a base URL that points at a web UI), no
// choices. It is not retried: the same request would get the same answer.
type ProtocolError struct {
	// Problem says what was wrong, e.g. "response is not valid JSON".
	Problem string
	// Snippet is the start of the body, one line, for the logs.
	Snippet string
	// Err is the decoding error, if any.
	Err error
}

// Error describes the problem and shows the start of the body.
func (e *ProtocolError) Error() string {
	msg := "model endpoint sent an unusable response: " + e.Problem
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Snippet != "" {
		msg += fmt.Sprintf(" (body starts %q)", e.Snippet)
	}
	return msg
}

// Unwrap returns the decoding error.
func (e *ProtocolError) Unwrap() error { return e.Err }

// transportError marks a failure to exchange bytes with the endpoint
// (connection refused, reset, broken body); such failures are retried.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// retriedError records that a failure persisted over several attempts, so
// the user is told it was not a one-off.
type retriedError struct {
	attempts int
	err      error
}

func (e *retriedError) Error() string {
	return fmt.Sprintf("%v (after %d attempts)", e.err, e.attempts)
}
func (e *retriedError) Unwrap() error { return e.err }

// UserMessage turns any error from a Completer into one or two short
// sentences fit to show a chat user: what went wrong and, where there is one,
// what to check. It never includes the API key (errors from this package
// cannot contain it). It returns "" for a nil error.
func UserMessage(err error) string {
	if err == nil {
		return ""
	}
	var (
		timeout  *TimeoutError
		apiErr   *APIError
		protoErr *ProtocolError
		retried  *retriedError
		dnsErr   *net.DNSError
	)
	even := ""
	if errors.As(err, &retried) && retried.attempts > 1 {
		even = fmt.Sprintf(", even after %d attempts", retried.attempts)
	}
	var unavailable *UnavailableError
	switch {
	case errors.As(err, &unavailable):
		return "The model is unavailable after repeated failures; hermesd will try it again shortly."
	case errors.As(err, &timeout):
		return fmt.Sprintf("The model did not answer within %s.", formatDuration(timeout.After))
	case errors.Is(err, context.Canceled):
		return "The request to the model was cancelled."
	case errors.Is(err, context.DeadlineExceeded):
		return "The model did not answer in time."
	case errors.As(err, &apiErr):
		return apiErr.userMessage(even)
	case errors.As(err, &protoErr):
		if protoErr.Problem == problemHTML {
			return "The model endpoint answered with a web page instead of a chat completion. Check OPENAI_BASE_URL (it usually ends in /v1)."
		}
		return fmt.Sprintf("The model endpoint sent a reply hermesd could not read (%s).", protoErr.Problem)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("Could not find the model endpoint's host %q. Check OPENAI_BASE_URL.", dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "Could not reach the model endpoint: the connection was refused" + even + ". Is the server running, and is OPENAI_BASE_URL right?"
	case isTLSError(err):
		return "Could not establish a secure connection to the model endpoint (TLS certificate problem)."
	case errors.As(err, new(*transportError)):
		return fmt.Sprintf("Could not reach the model endpoint (%s)%s.", clip(innermost(err), 120), even)
	default:
		return fmt.Sprintf("The model call failed: %s.", clip(strings.TrimSuffix(err.Error(), "."), 200))
	}
}

// userMessage words an HTTP failure for a chat user; even is a suffix
// reporting retries.
func (e *APIError) userMessage(even string) string {
	msg := strings.TrimSuffix(clip(e.Message, 200), ".")
	detail := msg
	if detail == "" {
		detail = http.StatusText(e.Status)
	}
	switch {
	case e.Status == http.StatusUnauthorized:
		return "The model endpoint refused the API key (401). Check OPENAI_API_KEY."
	case e.Status == http.StatusForbidden:
		return fmt.Sprintf("The model endpoint denied access (403: %s).", detail)
	case e.Status == http.StatusNotFound:
		return fmt.Sprintf("The model endpoint answered 404 (%s). Check OPENAI_BASE_URL (it usually ends in /v1) and HERMES_MODEL.", detail)
	case e.Status == http.StatusTooManyRequests:
		wait := "Please try again shortly."
		if e.RetryAfter > 0 {
			wait = fmt.Sprintf("Please try again in %s.", formatDuration(e.RetryAfter))
		}
		return fmt.Sprintf("The model endpoint is rate limiting requests (429: %s)%s. %s", detail, even, wait)
	case e.Status == http.StatusBadRequest && isContextLengthMessage(msg):
		return fmt.Sprintf("The conversation is too long for the model (400: %s). Start a new conversation.", detail)
	case e.Status >= 500:
		return fmt.Sprintf("The model endpoint answered %d (%s)%s.", e.Status, detail, even)
	default:
		return fmt.Sprintf("The model endpoint rejected the request (%d: %s).", e.Status, detail)
	}
}

// problemHTML is the ProtocolError.Problem of an HTML answer, which nearly
// always means the base URL points at a web page rather than the API.
const problemHTML = "an HTML page instead of JSON"

// isContextLengthMessage recognises the servers' ways of saying the prompt
// is longer than the model's context window.
func isContextLengthMessage(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "context length") || strings.Contains(m, "context_length") ||
		strings.Contains(m, "context window") || strings.Contains(m, "too many tokens")
}

func isTLSError(err error) bool {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		header  tls.RecordHeaderError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) ||
		errors.As(err, &invalid) || errors.As(err, &header)
}

// innermost returns the cause of a transport failure without the request
// line (url.Error repeats the method and URL) and without the operation
// prefix net.OpError adds.
func innermost(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	return err.Error()
}

// formatDuration prints a duration the way people say it: "60s", "90s",
// "5m", "2h", "250ms".
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 2*time.Minute || d%time.Minute != 0:
		if d < 2*time.Minute {
			return fmt.Sprintf("%ds", int(math.Round(d.Seconds())))
		}
		return d.Round(time.Second).String()
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
}

// clip makes s one line of at most n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
