package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/tts"
)

// probeTimeout bounds one probe by default: an endpoint that hangs fails
// the check instead of hanging doctor or setup.
const probeTimeout = 10 * time.Second

// discordTokenHint says how to fix a token Discord rejects.
const discordTokenHint = "reset the token in the Discord developer portal (Applications → your app → Bot → Reset Token), set DISCORD_BOT_TOKEN"

// prober checks the endpoints and tools a configuration names. Its errors
// never contain a secret: a Telegram token is part of the URL, so no error
// here quotes a URL with a token in it.
type prober struct {
	client  *http.Client
	timeout time.Duration
}

func newProber(timeout time.Duration) *prober {
	if timeout <= 0 {
		timeout = probeTimeout
	}
	return &prober{client: &http.Client{Timeout: timeout}, timeout: timeout}
}

// getJSON GETs url with header and decodes a 200 answer into v. shown is
// how errors name the URL (without secrets).
func (p *prober) getJSON(ctx context.Context, url, shown string, header http.Header, v any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %v", shown, redactURLError(err, url, shown))
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := p.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %v", shown, redactURLError(err, url, shown))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return res.StatusCode, fmt.Errorf("GET %s: read the answer: %v", shown, redactURLError(err, url, shown))
	}
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, fmt.Errorf("GET %s: %s: %s", shown, res.Status, clipText(string(body), 200))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return res.StatusCode, fmt.Errorf("GET %s: not the expected JSON: %v", shown, err)
	}
	return res.StatusCode, nil
}

// redactURLError replaces the real URL (which may hold a token) by shown.
func redactURLError(err error, url, shown string) string {
	return strings.ReplaceAll(err.Error(), url, shown)
}

// Models lists the models of an OpenAI-compatible endpoint (GET /models).
func (p *prober) Models(ctx context.Context, baseURL, apiKey string) ([]string, error) {
	base := strings.TrimRight(baseURL, "/")
	h := http.Header{}
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	status, err := p.getJSON(ctx, base+"/models", base+"/models", h, &list)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return nil, fmt.Errorf("the endpoint rejected the key (set OPENAI_API_KEY to a valid key): %w", err)
	case status == http.StatusNotFound:
		return nil, fmt.Errorf("no models list there (OPENAI_BASE_URL usually ends in /v1): %w", err)
	case err != nil:
		return nil, err
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// TelegramBot calls getMe and returns the bot's @username.
func (p *prober) TelegramBot(ctx context.Context, apiURL, token string) (string, error) {
	base := strings.TrimRight(apiURL, "/")
	var res struct {
		OK     bool `json:"ok"`
		Result struct {
			ID        int64  `json:"id"`
			FirstName string `json:"first_name"`
			Username  string `json:"username"`
		} `json:"result"`
		Description string `json:"description"`
	}
	shown := base + "/bot<TELEGRAM_BOT_TOKEN>/getMe"
	status, err := p.getJSON(ctx, base+"/bot"+token+"/getMe", shown, nil, &res)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusNotFound:
		return "", fmt.Errorf("Telegram rejected the token (%s)", telegram.TokenHint)
	case err != nil:
		return "", err
	case !res.OK:
		return "", fmt.Errorf("getMe: %s", res.Description)
	}
	return res.Result.Username, nil
}

// DiscordBot calls GET /users/@me (the API version hermesd's Discord
// library speaks) and returns the bot's user name.
func (p *prober) DiscordBot(ctx context.Context, apiURL, token string) (string, error) {
	base := strings.TrimRight(apiURL, "/")
	var me struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Bot      bool   `json:"bot"`
	}
	h := http.Header{"Authorization": {"Bot " + token}}
	status, err := p.getJSON(ctx, base+"/api/v9/users/@me", base+"/api/v9/users/@me", h, &me)
	switch {
	case status == http.StatusUnauthorized:
		return "", fmt.Errorf("Discord rejected the token (%s)", discordTokenHint)
	case err != nil:
		return "", err
	}
	return me.Username, nil
}

// Espeak speaks a word through the same provider the daemon uses, with the
// configured voice, and returns the PCM.
func (p *prober) Espeak(ctx context.Context, voice string) (audio.PCM, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	clip, err := (&tts.Espeak{Voice: voice}).Synthesize(ctx, "ready", "", messages.FormatMP3)
	if err != nil {
		return audio.PCM{}, err
	}
	return clip.PCM, nil
}

// Lame encodes pcm to MP3 through the daemon's encoder and checks that an
// MP3 came out.
func (p *prober) Lame(ctx context.Context, pcm audio.PCM) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	b, err := audio.EncodeMP3(ctx, pcm)
	if err != nil {
		return err
	}
	if _, err := audio.DecodeMP3(b); err != nil {
		return fmt.Errorf("lame wrote something that is not an MP3: %w", err)
	}
	return nil
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
