// Package discord connects hermesd to Discord: the gateway brings messages in
// (DMs, guild channels, threads, voice messages), the REST API takes replies
// out (text chunked at 2000 characters, TTS replies as real Discord voice
// messages with a waveform, falling back to an audio file and then to text).
//
// It is built on github.com/bwmarrin/discordgo; none of its types leave this
// package. Tests run it against discordtest, a fake Discord on 127.0.0.1.
//
// Goroutines (who owns what):
//   - discordgo's gateway reader calls onMessageCreate synchronously
//     (SyncEvents), so events arrive in gateway order; the handler only
//     filters and queues, it never blocks.
//   - one worker per channel with pending messages (a keyed.Queue) admits,
//     transcribes and hands them to Inbound in order; it exits when the
//     channel's queue is empty. Channels never wait for each other.
//   - the health watcher (health.go) notices a gateway that stopped
//     acknowledging heartbeats.
//
// Run owns all three: when its context ends it closes the gateway and waits
// for the workers.
package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/hermesd/hermesd/keyed"
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

// Discord's limits, declared once in Capabilities.
const (
	// TextLimit is the longest message content, in characters.
	TextLimit = 2000
	// MaxVoiceBytes is the largest audio sent as a voice message or file:
	// Discord's default upload limit (boosted guilds allow more, but a bot
	// cannot know in advance; a 413/40005 is handled anyway).
	MaxVoiceBytes = 10 << 20
)

// Defaults for the Config fields left zero.
const (
	DefaultMaxInboundBytes  = 25 << 20
	DefaultHTTPTimeout      = 2 * time.Minute
	DefaultMaxRetryWait     = 30 * time.Second
	DefaultMaxAttempts      = 5
	DefaultHeartbeatTimeout = 2 * time.Minute
	// DefaultChannelBacklog bounds the messages queued for one channel
	// while its worker is busy; beyond it new messages are dropped (and
	// logged) rather than growing memory without bound.
	DefaultChannelBacklog = 256
)

// Config is the adapter's configuration; zero fields take the defaults above.
type Config struct {
	// Token is the bot token, with or without the "Bot " prefix. Required.
	Token string
	// APIURL replaces https://discord.com for REST calls (a proxy or the
	// discordtest fake); the gateway URL is then whatever that API returns.
	// Empty means Discord itself.
	APIURL string
	// RequireMention makes the bot answer in guild channels only when
	// mentioned (or replied to), except in FreeResponseChannels and threads
	// it started. nil means true: a bot that answers every message in a busy
	// guild is never what anyone wants by accident. DMs never need a mention.
	RequireMention *bool
	// FreeResponseChannels are guild channel ids where the bot answers
	// every message; a thread inherits its parent's setting.
	FreeResponseChannels []string
	// AutoThread starts a thread from each addressed message in a plain
	// guild channel and answers there, so a conversation does not flood the
	// channel. The session is then the thread's.
	AutoThread bool
	// NoThreadChannels are guild channel ids where AutoThread does not
	// apply: the bot answers in the channel itself.
	NoThreadChannels []string
	// SharedChannelSessions makes one session per guild channel instead of
	// one per user in it. Threads are always shared.
	SharedChannelSessions bool
	// AllowBots lets messages from other bots through; off by default so two
	// bots never answer each other forever. The bot's own messages are
	// always ignored.
	AllowBots bool
	// MaxInboundBytes bounds an attachment download (a voice message to
	// transcribe); larger ones are described but not fetched.
	MaxInboundBytes int64
	// HTTPTimeout bounds one REST request or download, uploads included.
	HTTPTimeout time.Duration
	// MaxRetryWait is the longest rate-limit wait Send accepts before it
	// gives up with an error; the caller's context can end it sooner.
	MaxRetryWait time.Duration
	// MaxAttempts bounds the tries of one REST call across 429s, 5xx and
	// network errors.
	MaxAttempts int
	// HeartbeatTimeout is how long without a heartbeat ACK before the
	// gateway is reported unhealthy (discordgo itself reconnects later).
	HeartbeatTimeout time.Duration
	// ChannelBacklog bounds the messages queued per channel.
	ChannelBacklog int
}

// Transcriber turns inbound voice into text (the STT actor behind an
// interface so this package does not depend on it). Optional.
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, filename string) (string, error)
}

// Dedup remembers which platform message ids were handled, so a message
// replayed after a gateway resume is never answered twice. hermesd's store
// (*store.Store) implements it persistently; without one the adapter keeps
// a bounded in-memory set (lost on restart).
type Dedup interface {
	// MarkSeen records id and reports whether this is its first sighting.
	MarkSeen(ctx context.Context, p messages.Platform, id string) (first bool, err error)
}

// Deps are the adapter's collaborators.
type Deps struct {
	// Gate admits users; required, because unknown users are refused by
	// default and never silently served.
	Gate platforms.Gate
	// Log receives one line per event; nil discards.
	Log *slog.Logger
	// Transcriber is optional: without it a voice message arrives as a
	// voice Attachment with empty text.
	Transcriber Transcriber
	// Dedup is optional; see Dedup.
	Dedup Dedup
	// OnAPIError and OnRateLimited, if set, are told about every failed REST
	// call (status 0: network error) and every 429 (the metrics hooks).
	OnAPIError    func(status int)
	OnRateLimited func(retryAfter time.Duration)
	// Media, if set, downloads image and document attachments (within its
	// cap) and stores and reads them at accept time; nil only describes them.
	Media *media.Ingester
	// Drafts, if set, records the message id of each session's streamed
	// draft durably, so that a reply resent after a crash edits the draft
	// instead of posting a second copy; nil keeps it in memory (draft.go).
	Drafts DraftStore
}

// Adapter is the Discord platform adapter. It is safe for concurrent use;
// Send and Indicate work whether or not Run is running.
type Adapter struct {
	cfg            Config
	deps           Deps // the metrics hooks, read by observe
	requireMention bool
	free           map[string]bool
	noThread       map[string]bool // cfg.NoThreadChannels

	gate  platforms.Gate
	log   *slog.Logger
	stt   Transcriber
	dedup Dedup

	dg    *discordgo.Session
	http  *http.Client
	locks channelLocks
	chans channelCache
	// drafts are the streamed drafts and their pacing (draft.go).
	drafts drafts

	botID   atomic.Pointer[string]
	running atomic.Bool
	closing atomic.Bool
	run     atomic.Pointer[runState]
	health  healthState
}

// runState is what the gateway handlers need while Run runs.
type runState struct {
	queue *keyed.Queue[string, *discordgo.Message]
}

// New validates cfg and prepares an adapter; it does not connect (Run does).
func New(cfg Config, deps Deps) (*Adapter, error) {
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot "))
	if token == "" {
		return nil, errors.New("discord: no bot token")
	}
	if deps.Gate == nil {
		return nil, errors.New("discord: no gate: unknown users must be refused, not served")
	}
	cfg.Token = token
	if cfg.MaxInboundBytes <= 0 {
		cfg.MaxInboundBytes = DefaultMaxInboundBytes
	}
	if cfg.HTTPTimeout <= 0 {
		cfg.HTTPTimeout = DefaultHTTPTimeout
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = DefaultMaxRetryWait
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if cfg.ChannelBacklog <= 0 {
		cfg.ChannelBacklog = DefaultChannelBacklog
	}
	client, err := newHTTPClient(cfg.APIURL, cfg.HTTPTimeout)
	if err != nil {
		return nil, err
	}
	dg, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("discord: new session: %w", err)
	}
	dg.Client = client
	dg.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 15 * time.Second}
	// Events in gateway order, on the reader goroutine: the handler only
	// queues, so per-channel order is kept without blocking the reader.
	dg.SyncEvents = true
	// Rate limits and 5xx are retried here, with waits that honour the
	// caller's context; discordgo's own sleeps do not.
	dg.ShouldRetryOnRateLimit = false
	dg.MaxRestRetries = 0
	dg.Identify.Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
		discordgo.IntentsDirectMessages | discordgo.IntentMessageContent
	// The state cache is only used for channel types (threads); members,
	// presences and messages would just cost memory.
	dg.State.TrackMembers = false
	dg.State.TrackPresences = false
	dg.State.TrackRoles = false
	dg.State.TrackEmojis = false
	dg.State.TrackVoice = false
	dg.State.MaxMessageCount = 0

	log := deps.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &Adapter{
		cfg:            cfg,
		deps:           deps,
		requireMention: cfg.RequireMention == nil || *cfg.RequireMention,
		free:           make(map[string]bool, len(cfg.FreeResponseChannels)),
		noThread:       make(map[string]bool, len(cfg.NoThreadChannels)),
		gate:           deps.Gate,
		log:            log.With("platform", string(messages.Discord)),
		stt:            deps.Transcriber,
		dedup:          deps.Dedup,
		dg:             dg,
		http:           client,
	}
	if a.dedup == nil {
		a.dedup = newMemoryDedup(10_000)
	}
	for _, id := range cfg.FreeResponseChannels {
		a.free[strings.TrimSpace(id)] = true
	}
	for _, id := range cfg.NoThreadChannels {
		a.noThread[strings.TrimSpace(id)] = true
	}
	dg.AddHandler(a.onReady)
	dg.AddHandler(a.onResumed)
	dg.AddHandler(a.onConnect)
	dg.AddHandler(a.onDisconnect)
	dg.AddHandler(a.onMessageCreate)
	return a, nil
}

// Capabilities declares Discord's voice format and limits.
func (a *Adapter) Capabilities() messages.Capabilities {
	return messages.Capabilities{
		Platform:    messages.Discord,
		VoiceFormat: messages.FormatOggOpus,
		VoiceNotes:  true,
		TextLimit:   TextLimit,
		// A voice message cannot carry text at all; any text is sent as a
		// separate message, so there is no caption limit to declare.
		CaptionLimit:  0,
		MaxVoiceBytes: MaxVoiceBytes,
	}
}

// Run connects to the gateway and feeds inbound messages to in until ctx
// ends; reconnects and resumes are discordgo's. It returns nil on a clean
// shutdown and an error when the first connection is refused for good (a
// bad token). One Run at a time.
func (a *Adapter) Run(ctx context.Context, in platforms.Inbound) error {
	if in == nil {
		return errors.New("discord: run: nil Inbound")
	}
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("discord: run: already running")
	}
	defer a.running.Store(false)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One worker per channel with messages waiting restores gateway order
	// per channel while a slow channel holds up only itself; a panic in one
	// message loses neither the daemon nor the channel's later messages.
	q := keyed.New(runCtx, func(ctx context.Context, _ *keyed.Lane[string, *discordgo.Message], m *discordgo.Message) {
		a.handleMessage(ctx, in, m)
	}, keyed.Options[string, *discordgo.Message]{
		Limit: a.cfg.ChannelBacklog,
		Recover: func(channel string, m *discordgo.Message, r any) {
			a.log.Error("panic handling message", "channel", channel, "message_id", m.ID, "panic", r)
		},
	})
	a.run.Store(&runState{queue: q})
	defer a.run.Store(nil)

	a.closing.Store(false)
	a.reconnects(true)
	if err := a.open(runCtx); err != nil {
		q.Close()
		if runCtx.Err() != nil {
			return nil
		}
		return err
	}
	var watch sync.WaitGroup
	watch.Go(func() { a.watch(runCtx) })

	<-runCtx.Done()
	a.closing.Store(true)
	a.reconnects(false)
	a.log.Info("closing gateway")
	if err := a.dg.Close(); err != nil {
		a.log.Warn("close gateway", "err", err)
	}
	q.Close()
	watch.Wait()
	a.health.setConnected(false)
	return nil
}

// open makes the first gateway connection, retrying transient failures with
// backoff until ctx ends. discordgo's Open is not cancellable; each attempt
// is bounded by the dialer's and HTTP client's timeouts.
func (a *Adapter) open(ctx context.Context) error {
	back := retry.Backoff{First: time.Second, Max: time.Minute}
	for {
		err := a.dg.Open()
		if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			return nil
		}
		if refusal := gatewayRefusal(err); refusal != nil {
			a.health.lost(refusal)
			a.log.Error("gateway refused the bot", "err", refusal)
			return refusal
		}
		wrapped := sanitize("connect to gateway", err)
		a.health.lost(wrapped)
		var apiErr *APIError
		if errors.As(wrapped, &apiErr) && !apiErr.Temporary() {
			a.log.Error("gateway refused", "err", wrapped)
			return wrapped
		}
		wait := back.Next()
		a.log.Warn("gateway connect failed; retrying", "err", wrapped, "in", wait)
		if err := retry.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// reconnects turns discordgo's own reconnecting on or off. Off from
// shutdown on: its reconnect loop outlives Close (a read error just before
// Close starts one, and each error on the connection it opens starts
// another), and in a cluster the gateway now belongs to another member,
// whose connection each of these reopenings would cut (two members then
// took it from each other for seconds, in daemon's TestElectedDiscord). Set
// under the session's lock, which discordgo's reader takes (closing the
// connection) before it reads the flag.
func (a *Adapter) reconnects(on bool) {
	a.dg.Lock()
	a.dg.ShouldReconnectOnError = on
	a.dg.Unlock()
}

// gatewayRefusal turns the gateway's close codes that no retry can fix into
// an error that says what to do; other errors give nil.
func gatewayRefusal(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	hint := ""
	switch ce.Code {
	case 4004:
		hint = "the bot token is wrong (check DISCORD_BOT_TOKEN)"
	case 4013:
		hint = "invalid gateway intents"
	case 4014:
		hint = "enable the Message Content intent for the bot in the Discord developer portal"
	case 4010, 4011, 4012:
		hint = "the gateway refused the shard or API version"
	default:
		return nil
	}
	return fmt.Errorf("discord: gateway closed the connection with %d %q: %s", ce.Code, ce.Text, hint)
}

// onReady learns the bot's own user id (to ignore its own messages and find
// its mentions).
func (a *Adapter) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User != nil {
		id := r.User.ID
		a.botID.Store(&id)
	}
	a.health.setConnected(true)
	a.log.Info("gateway ready", "session_id", r.SessionID)
}

func (a *Adapter) onResumed(_ *discordgo.Session, _ *discordgo.Resumed) {
	a.health.setConnected(true)
	a.log.Info("gateway resumed")
}

// onConnect runs inside discordgo's Open, holding its lock: it must not call
// back into the session synchronously.
func (a *Adapter) onConnect(s *discordgo.Session, _ *discordgo.Connect) {
	a.health.setConnected(true)
	if a.closing.Load() {
		// A reconnect raced with shutdown and won: close again.
		go func() { _ = s.Close() }()
	}
}

func (a *Adapter) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	if a.closing.Load() {
		a.health.setConnected(false)
		return
	}
	a.health.lost(errors.New("discord: gateway disconnected"))
	a.log.Warn("gateway disconnected; discordgo reconnects and resumes")
}

// self returns the bot's user id, or "" before READY.
func (a *Adapter) self() string {
	if p := a.botID.Load(); p != nil {
		return *p
	}
	return ""
}
