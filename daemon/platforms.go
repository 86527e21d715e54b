package daemon

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/stt"
)

// platformAdapters builds the Telegram and Discord adapters whose tokens
// are set; a platform without a token is simply not started. Both share one
// gate (allowlists and pairing) and one transcriber.
func (d *Daemon) platformAdapters() ([]platforms.Adapter, error) {
	cfg := d.cfg
	gate := &liveGate{} // a reload swaps the allowlists behind it
	gate.g.Store(d.newGate(cfg))
	d.reload.gate = gate
	var tr *stt.Client
	if cfg.STTProvider == "openai" {
		tr = &stt.Client{BaseURL: cfg.STTBaseURL, APIKey: cfg.ModelAPIKey, Model: cfg.STTModel}
	}
	var out []platforms.Adapter
	if cfg.TelegramToken != "" {
		tc := telegram.DefaultConfig()
		tc.Token = cfg.TelegramToken
		tc.APIURL = cfg.TelegramAPIURL
		tc.WebhookURL, tc.WebhookSecret, tc.WebhookListen = cfg.TelegramWebhookURL, cfg.TelegramWebhookSecret, cfg.TelegramWebhookListen
		tc.RateLimit = cfg.TelegramRateLimit
		tc.RequireMentionInGroups = cfg.TelegramRequireMention
		tc.SharedGroupSessions = !cfg.TelegramGroupSessionsPerUser
		for _, id := range cfg.TelegramFreeResponseChats {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("telegram: free-response chat %q: %w", id, err)
			}
			tc.FreeResponseChats = append(tc.FreeResponseChats, n)
		}
		// The adapter adds platform=telegram to its logger itself.
		deps := telegram.Deps{Gate: gate, Log: d.log, Store: inboxDedup{d.store}, Media: d.media}
		deps.OnAPIError, deps.OnRateLimited = d.apiHooks(messages.Telegram)
		if tr != nil {
			deps.Transcriber = tr
		}
		a, err := telegram.New(tc, deps)
		if err != nil {
			return nil, fmt.Errorf("telegram: %w", err)
		}
		d.telegram = a
		if cfg.Cluster.On && cfg.TelegramWebhookURL == "" {
			// Long polling in a cluster: one member polls (daemon/poller.go).
			out = append(out, newElectedTelegram(a, d.store, d.log))
		} else {
			out = append(out, a)
		}
	}
	ds, err := d.discordAdapter(gate, tr)
	if err != nil {
		return nil, err
	}
	return append(out, ds...), nil
}

// apiHooks are an adapter's metrics hooks for failed API calls and 429s;
// the metrics are built after the adapters, so they are looked up per call.
func (d *Daemon) apiHooks(p messages.Platform) (func(int), func(time.Duration)) {
	return func(status int) {
			if m := d.Metrics(); m != nil {
				m.PlatformAPIError(string(p), status)
			}
		}, func(wait time.Duration) {
			if m := d.Metrics(); m != nil {
				m.RateLimited(string(p), wait)
			}
		}
}
