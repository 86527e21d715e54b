package model

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults for the zero fields of Config. They are exported so that the
// configuration layer and `hermesd doctor` can show them.
const (
	// DefaultBaseURL is OpenAI's endpoint, for when only an API key is set.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultTimeout bounds one Complete call, retries included. It is
	// generous because local models on a CPU are slow; a user waiting longer
	// than this is better served by an error that says so.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxRetries is how often a failed attempt (network error, 408,
	// 429, 5xx) is retried.
	DefaultMaxRetries = 2
	// DefaultRetryBackoff is the first backoff; it doubles on each retry and
	// is jittered, unless the server sent Retry-After.
	DefaultRetryBackoff = 500 * time.Millisecond
	// DefaultMaxRetryWait is the longest Retry-After the client waits out; a
	// longer one is returned to the caller at once (the user can retry later,
	// a turn should not hang for minutes).
	DefaultMaxRetryWait = 30 * time.Second
)

// maxResponseBytes caps how much of a response body is read: a completion is
// kilobytes, and a misconfigured URL must not make hermesd buffer a video.
const maxResponseBytes = 16 << 20

// Config configures a Client. Zero fields take the Default values; only
// BaseURL is required. It is filled by the configuration layer from
// OPENAI_BASE_URL, OPENAI_API_KEY and HERMES_MODEL; this package never reads
// the environment.
type Config struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1,
	// https://openrouter.ai/api/v1, http://127.0.0.1:11434/v1 (Ollama) or
	// http://127.0.0.1:8080/v1 (llama.cpp). A trailing /chat/completions is
	// accepted and ignored.
	BaseURL string
	// APIKey is sent as a bearer token when set. It is never logged, never
	// part of an error, and scrubbed from anything the server echoes back.
	APIKey string
	// Model is the model name sent with every request. llama.cpp ignores it;
	// every other server needs it.
	Model string
	// Timeout bounds one Complete call, all attempts and waits included, so
	// that "did not answer within" is what the user actually waited.
	Timeout time.Duration
	// MaxRetries is how many times a retryable failure is retried: 0 means
	// DefaultMaxRetries, a negative value means never.
	MaxRetries int
	// RetryBackoff is the first backoff between attempts.
	RetryBackoff time.Duration
	// MaxRetryWait is the longest Retry-After worth waiting for.
	MaxRetryWait time.Duration
	// HTTPClient, when set, replaces the client's own transport (for proxies
	// or custom TLS). Its Timeout should be zero: Timeout above is the limit.
	HTTPClient *http.Client
	// Logger receives one debug line per call and a warning per retry; nil
	// discards them.
	Logger *slog.Logger
}

// LogValue logs the configuration without the API key, so that a Config can
// be passed to slog as it is.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", redactURL(c.BaseURL)),
		slog.String("model", c.Model),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Duration("timeout", c.Timeout),
	)
}

// String prints the configuration without the API key, so that %v cannot
// leak it.
func (c Config) String() string {
	return fmt.Sprintf("model.Config{BaseURL: %q, Model: %q, APIKey set: %t, Timeout: %s}",
		redactURL(c.BaseURL), c.Model, c.APIKey != "", c.Timeout)
}

// GoString is String, for %#v.
func (c Config) GoString() string { return c.String() }

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = DefaultMaxRetryWait
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// completionsURL turns a base URL into the chat-completions endpoint.
func completionsURL(base string) (string, error) {
	base = strings.TrimSpace(base)
	if base == "" {
		return "", fmt.Errorf("no base URL (set OPENAI_BASE_URL, e.g. %s)", DefaultBaseURL)
	}
	u, err := url.Parse(base)
	if err != nil {
		// url.Error quotes the whole URL, password included: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("base URL is not a valid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("base URL %q: scheme must be http or https", redactURL(base))
	}
	if u.Host == "" {
		return "", fmt.Errorf("base URL %q: no host", redactURL(base))
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions") + "/chat/completions"
	u.RawPath = ""
	return u.String(), nil
}

// redactURL hides a password that a user may have put in the base URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
