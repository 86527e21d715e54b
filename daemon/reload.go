package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermesd/hermesd/access"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/web"
	"github.com/hermesd/hermesd/tts"
)

// liveKeys are the settings a reload applies to the running daemon; every
// other change is named in the log as needing a restart.
var liveKeys = []string{
	"TELEGRAM_ALLOWED_USERS", "DISCORD_ALLOWED_USERS",
	"HERMES_TTS_PROVIDER", "HERMES_TTS_BASE_URL", "HERMES_TTS_VOICE", "ELEVENLABS_API_KEY",
	"HERMES_LOG_LEVEL",
}

// liveGate is the platforms.Gate the adapters hold: a reload swaps the
// access.Gate behind it (allowlists), while pairing state stays in the
// store and so survives the swap.
type liveGate struct {
	g atomic.Pointer[access.Gate]
}

var _ platforms.Gate = (*liveGate)(nil)

func (l *liveGate) Admit(ctx context.Context, p messages.Platform, userID, userName string, direct bool) (bool, string) {
	return l.g.Load().Admit(ctx, p, userID, userName, direct)
}

// liveProvider is the TTS provider the TTS actor holds: a reload swaps the
// provider behind it (provider, voice, keys). Requests already speaking
// finish with the provider they started with.
type liveProvider struct {
	p atomic.Pointer[tts.Provider]
}

var _ tts.Provider = (*liveProvider)(nil)

func (l *liveProvider) Name() string   { return (*l.p.Load()).Name() }
func (l *liveProvider) TextLimit() int { return (*l.p.Load()).TextLimit() }
func (l *liveProvider) Synthesize(ctx context.Context, text, voice string, want messages.AudioFormat) (tts.Clip, error) {
	return (*l.p.Load()).Synthesize(ctx, text, voice, want)
}

// reloadState is what Reload compares against and swaps.
type reloadState struct {
	mu      sync.Mutex
	applied config.Config
	gate    *liveGate
	speaker *liveProvider // nil when the daemon started without TTS
}

// Reload applies cfg to the running daemon without dropping sessions: the
// allowlists, the TTS provider and voice, and the log level change live.
// Every other changed setting is named in the log as needing a restart. It
// returns the keys applied and the keys that need a restart.
func (d *Daemon) Reload(cfg config.Config) (applied, restart []string, err error) {
	r := &d.reload
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.applied
	changed := changedKeys(old, cfg)
	for _, k := range changed {
		if !slices.Contains(liveKeys, k) {
			restart = append(restart, k)
		}
	}
	ttsChanged := slices.ContainsFunc(changed, func(k string) bool {
		return k == "HERMES_TTS_PROVIDER" || k == "HERMES_TTS_BASE_URL" || k == "HERMES_TTS_VOICE" || k == "ELEVENLABS_API_KEY"
	})
	if ttsChanged {
		switch {
		case r.speaker == nil || cfg.TTSProvider == "none":
			// Starting or stopping the TTS actor is not live.
			for _, k := range []string{"HERMES_TTS_PROVIDER", "HERMES_TTS_BASE_URL", "HERMES_TTS_VOICE", "ELEVENLABS_API_KEY"} {
				if slices.Contains(changed, k) {
					restart = append(restart, k)
				}
			}
			cfg.TTSProvider, cfg.TTSBaseURL, cfg.TTSVoice, cfg.ElevenLabsKey = old.TTSProvider, old.TTSBaseURL, old.TTSVoice, old.ElevenLabsKey
		default:
			p, err := ttsProvider(cfg)
			if err != nil {
				return nil, nil, fmt.Errorf("reload: %w", err)
			}
			r.speaker.p.Store(&p)
		}
	}
	if slices.Contains(changed, "TELEGRAM_ALLOWED_USERS") || slices.Contains(changed, "DISCORD_ALLOWED_USERS") {
		r.gate.g.Store(d.newGate(cfg))
	}
	if slices.Contains(changed, "HERMES_LOG_LEVEL") && d.opts.LogLevel != nil {
		d.opts.LogLevel.Set(ParseLevel(cfg.LogLevel))
	}
	// What needs a restart keeps its old value in applied, so the next
	// reload names it again until the restart.
	next := old
	next.TelegramAllowed, next.DiscordAllowed = cfg.TelegramAllowed, cfg.DiscordAllowed
	next.TTSProvider, next.TTSBaseURL, next.TTSVoice, next.ElevenLabsKey = cfg.TTSProvider, cfg.TTSBaseURL, cfg.TTSVoice, cfg.ElevenLabsKey
	if d.opts.LogLevel != nil {
		next.LogLevel = cfg.LogLevel
	} else if slices.Contains(changed, "HERMES_LOG_LEVEL") {
		restart = append(restart, "HERMES_LOG_LEVEL")
	}
	r.applied = next
	applied = slices.DeleteFunc(slices.Clone(changed), func(k string) bool { return slices.Contains(restart, k) })
	// MCP servers start and stop live (daemon/mcp.go).
	if mcpChanged, err := d.applyMCP(cfg.Tools.MCPServers); err != nil {
		d.log.Error("reload: mcp_servers", "err", err)
		restart = append(restart, "mcp_servers")
	} else if mcpChanged {
		applied = append(applied, "mcp_servers")
	}
	// The model catalog is built once, at start (daemon/models.go).
	if !reflect.DeepEqual(old.Models, cfg.Models) || old.DefaultModel != cfg.DefaultModel {
		restart = append(restart, "models")
	}
	slices.Sort(restart)
	restart = slices.Compact(restart)
	if len(restart) > 0 {
		d.log.Warn("configuration reloaded; some changes need a restart", "applied", strings.Join(applied, ","), "restart_needed", strings.Join(restart, ","))
	} else {
		d.log.Info("configuration reloaded", "applied", strings.Join(applied, ","))
	}
	return applied, restart, nil
}

// newGate builds the access gate for cfg's allowlists.
func (d *Daemon) newGate(cfg config.Config) *access.Gate {
	g := access.New(d.store, map[messages.Platform][]string{
		messages.Telegram: cfg.TelegramAllowed,
		messages.Discord:  cfg.DiscordAllowed,
	})
	g.Log = d.log
	return g
}

// ParseLevel turns HERMES_LOG_LEVEL into a slog level (info when unknown:
// config has validated it).
func ParseLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// changedKeys names the settings that differ between a and b.
func changedKeys(a, b config.Config) []string {
	va, vb := settingsOf(a), settingsOf(b)
	var out []string
	for k, v := range va {
		if vb[k] != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// settingsOf is c as key → value, for comparing two configurations.
func settingsOf(c config.Config) map[string]string {
	d := func(x time.Duration) string { return x.String() }
	m := map[string]string{
		"HERMES_HOME": c.Home, "HERMES_HTTP_ADDR": c.HTTPAddr, "HERMES_API_TOKEN": c.APIToken,
		"HERMES_LOG_LEVEL": c.LogLevel, "HERMES_LOG_FORMAT": c.LogFormat,
		"HERMES_ALLOWED_HOSTS": strings.Join(c.AllowedHosts, ","), "HERMES_ADMIN_USERS": strings.Join(c.AdminUsers, ","),
		"OPENAI_BASE_URL": c.ModelBaseURL, "OPENAI_API_KEY": c.ModelAPIKey, "HERMES_MODEL": c.Model,
		"HERMES_MODEL_TIMEOUT": d(c.ModelTimeout),
		"TELEGRAM_BOT_TOKEN":   c.TelegramToken, "TELEGRAM_API_URL": c.TelegramAPIURL,
		"TELEGRAM_ALLOWED_USERS": strings.Join(c.TelegramAllowed, ","),
		"TELEGRAM_WEBHOOK_URL":   c.TelegramWebhookURL, "TELEGRAM_WEBHOOK_SECRET": c.TelegramWebhookSecret,
		"TELEGRAM_WEBHOOK_LISTEN": c.TelegramWebhookListen, "TELEGRAM_RATE_LIMIT": strconv.FormatBool(c.TelegramRateLimit),
		"DISCORD_BOT_TOKEN": c.DiscordToken, "DISCORD_API_URL": c.DiscordAPIURL,
		"DISCORD_ALLOWED_USERS": strings.Join(c.DiscordAllowed, ","),
		"HERMES_TTS_PROVIDER":   c.TTSProvider, "HERMES_TTS_BASE_URL": c.TTSBaseURL, "HERMES_TTS_VOICE": c.TTSVoice,
		"ELEVENLABS_API_KEY":  c.ElevenLabsKey,
		"HERMES_STT_PROVIDER": c.STTProvider, "HERMES_STT_BASE_URL": c.STTBaseURL, "HERMES_STT_MODEL": c.STTModel,
		"HERMES_IDLE_TIMEOUT": d(c.IdleTimeout), "HERMES_BUSY_POLICY": c.BusyPolicy, "HERMES_SYSTEM_PROMPT": c.SystemPrompt,
		"HERMES_HISTORY_LIMIT": strconv.Itoa(c.HistoryLimit), "HERMES_MAX_TOOL_ROUNDS": strconv.Itoa(c.MaxToolRounds),
		"HERMES_TURN_TIMEOUT": d(c.TurnTimeout), "HERMES_SHUTDOWN_GRACE": d(c.ShutdownGrace),
		"HERMES_REVIEW_EVERY": strconv.Itoa(c.ReviewEvery), "HERMES_SWEEP_EVERY": strconv.Itoa(c.SweepEvery),
		"HERMES_CONTEXT_TOKENS": strconv.Itoa(c.ContextTokens), "HERMES_TOOL_RESULT_LIMIT": strconv.Itoa(c.ToolResultLimit),
		"TELEGRAM_REQUIRE_MENTION":         strconv.FormatBool(c.TelegramRequireMention),
		"TELEGRAM_FREE_RESPONSE_CHATS":     strings.Join(c.TelegramFreeResponseChats, ","),
		"TELEGRAM_GROUP_SESSIONS_PER_USER": strconv.FormatBool(c.TelegramGroupSessionsPerUser),
		"DISCORD_REQUIRE_MENTION":          strconv.FormatBool(c.DiscordRequireMention),
		"DISCORD_FREE_RESPONSE_CHANNELS":   strings.Join(c.DiscordFreeResponseChannels, ","),
		"DISCORD_AUTO_THREAD":              strconv.FormatBool(c.DiscordAutoThread),
		"DISCORD_NO_THREAD_CHANNELS":       strings.Join(c.DiscordNoThreadChannels, ","),
		"DISCORD_GROUP_SESSIONS_PER_USER":  strconv.FormatBool(c.DiscordGroupSessionsPerUser),
	}
	for k, v := range toolSettings(c.Tools) {
		m[k] = v
	}
	return m
}

// handleReload is POST /api/reload: re-read the configuration (files and
// environment) and apply it. On a listener that is not loopback it needs
// HERMES_API_TOKEN, like the rest of the API.
func (d *Daemon) handleReload(w http.ResponseWriter, r *http.Request) {
	if d.opts.Load == nil {
		web.WriteError(w, http.StatusNotImplemented, "no_reload", "this daemon was started without a configuration loader")
		return
	}
	cfg, err := d.opts.Load()
	if err != nil {
		d.log.Error("reload: the configuration does not load; keeping the running one", "err", err)
		web.WriteError(w, http.StatusUnprocessableEntity, "bad_config", err.Error())
		return
	}
	applied, restart, err := d.Reload(cfg)
	if err != nil {
		web.WriteError(w, http.StatusInternalServerError, "reload", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string][]string{"applied": nonNil(applied), "restart_needed": nonNil(restart)})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
