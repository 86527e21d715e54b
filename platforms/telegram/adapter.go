// Package telegram connects hermesd to Telegram through the Bot API, using
// github.com/go-telegram/bot for outgoing calls and its own getUpdates loop
// and webhook handler for incoming ones (see poll.go for why).
//
// Inbound, every update is checked by the Gate, deduplicated by update id
// through the Store, put back into per-session order and handed to
// platforms.Inbound; the polling offset only moves past updates that were
// accepted, so a restart — kill -9 included — neither loses nor repeats one
// (see poll.go for the one window that remains and how it fails safe).
// Outbound, replies are rendered from Markdown to Telegram HTML, chunked at
// 4096 UTF-16 units, paced to Telegram's limits, retried on 429, 5xx and
// network errors, and voice notes fall back to audio, file and text.
// Streamed replies show as drafts (draft.go): sendMessageDraft previews in
// private chats, one edited message elsewhere.
//
// Library types (models.Update, models.Message) never leave this package.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/retry"
)

var (
	_ platforms.Adapter        = (*Adapter)(nil)
	_ platforms.Indicator      = (*Adapter)(nil)
	_ platforms.HealthReporter = (*Adapter)(nil)
)

// Telegram's documented limits.
const (
	// TextLimit is the longest message text, in UTF-16 units after entity parsing.
	TextLimit = 4096
	// CaptionLimit is the longest media caption, in UTF-16 units.
	CaptionLimit = 1024
	// MaxVoiceBytes is the largest voice note sent as a voice bubble: above it
	// Telegram shows no waveform, so the audio goes out as an audio file.
	MaxVoiceBytes = 1 << 20
	// DefaultAPIURL is where the Bot API lives unless Config.APIURL says otherwise.
	DefaultAPIURL = "https://api.telegram.org"
)

// Defaults for the tunables of Config.
const (
	DefaultPollTimeout     = 30 * time.Second
	DefaultRequestTimeout  = 30 * time.Second
	DefaultMaxInboundBytes = 20 << 20 // Telegram's getFile download limit
)

// Errors a caller may want to tell apart. Each is wrapped with the session key.
var (
	// ErrBlocked means the user blocked the bot (403). It is not retried: the
	// user has to unblock the bot first.
	ErrBlocked = errors.New("telegram: bot was blocked by the user")
	// ErrForbidden is any other 403: the bot was removed from the group, or
	// may not write to this user first. Not retried.
	ErrForbidden = errors.New("telegram: forbidden")
	// ErrUncertain means a call timed out after it was sent: Telegram may
	// have delivered the message, so it is not retried blindly.
	ErrUncertain = errors.New("telegram: call timed out; the message may have been delivered")
	// ErrRateLimited means Telegram kept answering 429 after the bounded retries.
	ErrRateLimited = errors.New("telegram: rate limited")
)

// Config is the Telegram adapter's configuration. Start from DefaultConfig:
// the zero value has pacing and the group mention rule switched off.
type Config struct {
	// Token is the bot token from @BotFather ("123456:ABC…"). Required; it is
	// never logged.
	Token string
	// APIURL replaces https://api.telegram.org for every Bot API call and
	// every file download: a local Bot API server, or a fake in tests.
	APIURL string

	// WebhookURL switches inbound from long polling to a webhook: the public
	// URL Telegram posts updates to. Its path is the one served.
	WebhookURL string
	// WebhookSecret is what Telegram sends in X-Telegram-Bot-Api-Secret-Token;
	// required with a webhook (1–256 of A–Z a–z 0–9 _ -), because the webhook
	// listener faces the internet and a forged update would carry any user id.
	WebhookSecret string
	// WebhookListen is the webhook's own listener address (e.g. ":8443"),
	// never the admin listener.
	WebhookListen string

	// RateLimit paces outgoing messages to what Telegram documents (about one
	// message a second per chat, 20 a minute per group, 30 a second overall)
	// instead of provoking 429s. Off only for a local Bot API server or load
	// tests; 429 retry_after is honoured either way.
	RateLimit bool
	// RequireMentionInGroups makes the bot answer in groups only when
	// mentioned (@botname), replied to, or sent a command.
	RequireMentionInGroups bool
	// FreeResponseChats are group chat ids where the bot answers every
	// message even when RequireMentionInGroups is on.
	FreeResponseChats []int64
	// SharedGroupSessions gives a group one conversation for everyone instead
	// of one per user. Forum topics are always shared.
	SharedGroupSessions bool

	// PollTimeout is the long-poll wait of getUpdates; Telegram caps it at 50 s.
	PollTimeout time.Duration
	// RequestTimeout bounds each Bot API call but the long poll. A send that
	// times out is reported as ErrUncertain, never retried.
	RequestTimeout time.Duration
	// MaxInboundBytes is the largest inbound payload taken in: a voice note to
	// download and transcribe, or a text with its merged continuations.
	MaxInboundBytes int64
}

// DefaultConfig returns the configuration users expect: pacing on, groups
// answered only when addressed, one session per user in groups.
func DefaultConfig() Config {
	return Config{
		APIURL:                 DefaultAPIURL,
		RateLimit:              true,
		RequireMentionInGroups: true,
		PollTimeout:            DefaultPollTimeout,
		RequestTimeout:         DefaultRequestTimeout,
		MaxInboundBytes:        DefaultMaxInboundBytes,
	}
}

// Validate reports the first problem with c, without the token's value.
func (c Config) Validate() error {
	id, secret, ok := strings.Cut(c.Token, ":")
	if n, err := strconv.ParseInt(id, 10, 64); !ok || err != nil || n <= 0 || secret == "" {
		return errors.New("telegram: token must look like <bot id>:<secret>")
	}
	if c.APIURL != "" {
		if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("telegram: API URL %q is not an http(s) URL", c.APIURL)
		}
	}
	if c.WebhookURL != "" {
		if u, err := url.Parse(c.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("telegram: webhook URL %q is not an http(s) URL", c.WebhookURL)
		}
		if !validSecret(c.WebhookSecret) {
			return errors.New("telegram: a webhook needs a secret of 1-256 characters from A-Z a-z 0-9 _ -")
		}
		if c.WebhookListen == "" {
			return errors.New("telegram: a webhook needs its own listen address")
		}
	}
	if c.PollTimeout < 0 || c.PollTimeout > 50*time.Second {
		return fmt.Errorf("telegram: poll timeout %v outside 0-50s", c.PollTimeout)
	}
	return nil
}

func validSecret(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// withDefaults fills the zero durations and sizes.
func (c Config) withDefaults() Config {
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	switch {
	case c.PollTimeout == 0:
		c.PollTimeout = DefaultPollTimeout
	case c.PollTimeout > 0 && c.PollTimeout < time.Second:
		c.PollTimeout = time.Second // Telegram counts whole seconds; 0 would spin
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxInboundBytes <= 0 {
		c.MaxInboundBytes = DefaultMaxInboundBytes
	}
	return c
}

// Store is the persistence the adapter needs: a named cursor (the polling
// offset) and a seen-set for deduplication. hermesd's *store.Store
// satisfies it.
type Store interface {
	// Cursor returns the value saved under name, or "" if none.
	Cursor(ctx context.Context, name string) (string, error)
	// SetCursor saves value under name, durably, before returning.
	SetCursor(ctx context.Context, name, value string) error
	// MarkSeen records id for platform and reports whether this was the first
	// time, atomically and durably. Marks must outlive Telegram's own
	// retention of unconfirmed updates (24 hours).
	MarkSeen(ctx context.Context, p messages.Platform, id string) (first bool, err error)
	// Seen reports whether id was marked for platform, without marking it.
	Seen(ctx context.Context, p messages.Platform, id string) (bool, error)
}

// Transcriber turns speech into text. filename tells the provider the
// container ("voice.ogg").
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, filename string) (string, error)
}

// Deps are the adapter's collaborators.
type Deps struct {
	// Gate decides who may reach the model. Required: unknown users are
	// refused by default, never silently served.
	Gate platforms.Gate
	// Log receives one line per event, with the session key where there is one.
	Log *slog.Logger
	// Store persists the offset and the seen-set. nil keeps both in memory,
	// which protects against duplicates only for the life of the process.
	Store Store
	// Transcriber transcribes inbound voice notes; nil means not configured:
	// voice notes arrive as an attachment with no text.
	Transcriber Transcriber
	// OnAPIError and OnRateLimited, if set, are told about every failed Bot
	// API call (status 0: network error or timeout) and every 429 (the
	// metrics hooks).
	OnAPIError    func(status int)
	OnRateLimited func(retryAfter time.Duration)
	// HTTPClient carries every call; nil uses a client of the adapter's own.
	// Its Timeout should be zero: the adapter bounds each call itself.
	HTTPClient *http.Client
	// Media, if set, downloads photos and documents (within its cap) and
	// stores and reads them at accept time; nil only describes them.
	Media *media.Ingester
}

// Adapter is the Telegram platform adapter. Create it with New; it is safe
// for concurrent use, and Run may be called once at a time.
type Adapter struct {
	cfg   Config
	deps  Deps // the metrics hooks, read by observe
	gate  platforms.Gate
	log   *slog.Logger
	store Store
	stt   Transcriber

	bot   *bot.Bot
	api   *apiDoer
	botID int64

	out *outbox
	// drafts are the open drafts of streamed replies (draft.go).
	drafts drafts
	// free holds cfg.FreeResponseChats for the per-message check.
	free map[int64]bool

	running   atomic.Bool
	me        atomic.Pointer[botAccount]
	readyMu   sync.Mutex
	ready     chan struct{}
	hookAddr  atomic.Pointer[string]
	healthMu  sync.Mutex
	connected bool
	lastErr   string
}

// botAccount is the bot's own Telegram account, learned from getMe (not to
// be confused with hermesd's identity: the Session bound to an actor).
type botAccount struct {
	id       int64
	username string
}

// New checks cfg and deps and builds an adapter. It makes no network call:
// Run learns the bot's name, Send works right away.
func New(cfg Config, deps Deps) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Gate == nil {
		return nil, errors.New("telegram: a Gate is required")
	}
	a := &Adapter{
		cfg:   cfg,
		deps:  deps,
		gate:  deps.Gate,
		log:   deps.Log,
		store: deps.Store,
		stt:   deps.Transcriber,
		ready: make(chan struct{}),
		free:  make(map[int64]bool, len(cfg.FreeResponseChats)),
	}
	for _, id := range cfg.FreeResponseChats {
		a.free[id] = true
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("platform", string(messages.Telegram))
	if a.store == nil {
		a.store = newMemStore()
	}
	hc := deps.HTTPClient
	if hc == nil {
		tr := &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			tr = dt.Clone()
		}
		tr.MaxIdleConnsPerHost = 64 // many chats send at once
		tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		hc = &http.Client{Transport: tr}
	}
	idPart, _, _ := strings.Cut(cfg.Token, ":")
	a.botID, _ = strconv.ParseInt(idPart, 10, 64)
	a.api = &apiDoer{hc: hc, token: cfg.Token, base: cfg.APIURL}
	b, err := bot.New(cfg.Token,
		bot.WithSkipGetMe(),
		bot.WithServerURL(cfg.APIURL),
		bot.WithHTTPClient(cfg.PollTimeout, a.api),
		bot.WithErrorsHandler(func(err error) { a.log.Warn("telegram library error", "err", err) }),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: create client: %w", err)
	}
	a.bot = b
	a.out = newOutbox(cfg.RateLimit)
	return a, nil
}

// Capabilities declares Telegram's voice format and limits once, for the TTS
// actor and the outbox.
func (a *Adapter) Capabilities() messages.Capabilities {
	return messages.Capabilities{
		Platform:      messages.Telegram,
		VoiceFormat:   messages.FormatOggOpus,
		VoiceNotes:    true,
		TextLimit:     TextLimit,
		CaptionLimit:  CaptionLimit,
		MaxVoiceBytes: MaxVoiceBytes,
	}
}

// Health reports whether the last poll (or webhook registration) worked and
// the most recent failure talking to Telegram.
func (a *Adapter) Health() platforms.Health {
	a.healthMu.Lock()
	defer a.healthMu.Unlock()
	return platforms.Health{Connected: a.connected, LastError: a.lastErr}
}

func (a *Adapter) setConnected(ok bool) {
	a.healthMu.Lock()
	defer a.healthMu.Unlock()
	a.connected = ok
}

func (a *Adapter) noteError(err error) {
	a.healthMu.Lock()
	defer a.healthMu.Unlock()
	a.lastErr = err.Error()
}

// Ready is closed once Run is taking updates: polling started, or the
// webhook listening and registered. For readiness probes and tests.
func (a *Adapter) Ready() <-chan struct{} {
	a.readyMu.Lock()
	defer a.readyMu.Unlock()
	return a.ready
}

func (a *Adapter) markReady() {
	a.readyMu.Lock()
	defer a.readyMu.Unlock()
	select {
	case <-a.ready:
	default:
		close(a.ready)
	}
}

func (a *Adapter) resetReady() {
	a.readyMu.Lock()
	defer a.readyMu.Unlock()
	select {
	case <-a.ready:
		a.ready = make(chan struct{})
	default:
	}
}

// WebhookAddr is the address the webhook listener is bound to ("" before it
// listens): useful when WebhookListen asks for port 0.
func (a *Adapter) WebhookAddr() string {
	if p := a.hookAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Run takes updates from Telegram and feeds them to in until ctx ends: long
// polling by default, a webhook when Config.WebhookURL is set. It returns nil
// on a clean shutdown, after every update already handed to in was settled,
// and an error when Telegram rejects the token.
func (a *Adapter) Run(ctx context.Context, in platforms.Inbound) error {
	if in == nil {
		return errors.New("telegram: Run needs an Inbound")
	}
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("telegram: Run is already running")
	}
	defer a.running.Store(false)
	defer a.resetReady()
	defer a.setConnected(false)

	if err := a.identify(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	p := newPipeline(ctx, a, in)
	var err error
	if a.cfg.WebhookURL != "" {
		err = a.runWebhook(ctx, p)
	} else {
		err = a.runPolling(ctx, p)
	}
	p.stop()
	return err
}

// TokenHint says how to fix a token Telegram rejects; it is part of every
// rejection error, so the log, `hermesd status` and `hermesd doctor` say it.
const TokenHint = "create a token with @BotFather, set TELEGRAM_BOT_TOKEN"

// identify calls getMe until it works: mentions in groups need the bot's
// username. A rejected token ends Run.
func (a *Adapter) identify(ctx context.Context) error {
	backoff := retry.NewBackoff(500*time.Millisecond, 30*time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		u, err := a.bot.GetMe(cctx)
		cancel()
		if err == nil {
			a.me.Store(&botAccount{id: u.ID, username: u.Username})
			a.log.Info("telegram bot identified", "bot_id", u.ID, "username", u.Username)
			return nil
		}
		if errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) {
			err = fmt.Errorf("telegram: getMe: the token was rejected (%s): %w", TokenHint, err)
			a.noteError(err) // status and /readyz show why the platform is down
			return err
		}
		a.noteError(err)
		a.log.Warn("telegram getMe failed; retrying", "err", err)
		if err := backoff.Wait(ctx); err != nil {
			return err
		}
	}
}
