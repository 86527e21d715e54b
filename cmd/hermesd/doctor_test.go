package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

func TestDoctor_ProbesModelAndPlatforms(t *testing.T) {
	m := modeltest.NewServer(t, modeltest.WithAPIKey("sk-good"))
	tg := telegramtest.NewServer(t)
	dc := discordtest.NewServer(t)
	_, env := testEnv(t, map[string]string{
		"OPENAI_BASE_URL": m.URL(), "OPENAI_API_KEY": "sk-good", "HERMES_MODEL": "modeltest",
		"TELEGRAM_BOT_TOKEN": tg.Token(), "TELEGRAM_API_URL": tg.URL(), "TELEGRAM_ALLOWED_USERS": "42",
		"DISCORD_BOT_TOKEN": discordtest.Token, "DISCORD_API_URL": dc.URL,
	})
	out, _, err := runCmd(t, env, "doctor")
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	for _, want := range []string{
		"✓ model endpoint " + m.URL() + " answers; model modeltest",
		"✓ telegram: the token works: bot @" + tg.BotUsername() + " (allowed: 42)",
		"✓ discord: the token works: bot " + discordtest.BotName,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if n := len(tg.CallsTo("getMe")); n != 1 {
		t.Errorf("telegram getMe called %d times, want 1", n)
	}
	for _, secret := range []string{"sk-good", tg.Token(), discordtest.Token} {
		if strings.Contains(out, secret) {
			t.Errorf("doctor printed the secret %q:\n%s", secret, out)
		}
	}
}

func TestDoctor_CatchesDeadEndpointAndBadTokens(t *testing.T) {
	tg := telegramtest.NewServer(t)
	dc := discordtest.NewServer(t)
	const badTG, badDC = "999:rejected-token", "rejected-discord-token"
	_, env := testEnv(t, map[string]string{
		"OPENAI_BASE_URL":    "http://" + freeAddr(t) + "/v1", // nothing listens there
		"TELEGRAM_BOT_TOKEN": badTG, "TELEGRAM_API_URL": tg.URL(),
		"DISCORD_BOT_TOKEN": badDC, "DISCORD_API_URL": dc.URL,
	})
	out, _, err := runCmd(t, env, "doctor")
	if err == nil || !strings.Contains(err.Error(), "3 check(s) failed") {
		t.Fatalf("doctor: err %v, want 3 failed checks\n%s", err, out)
	}
	for _, want := range []string{
		"✗ model endpoint http://",
		"✗ telegram: Telegram rejected the token (create a token with @BotFather, set TELEGRAM_BOT_TOKEN)",
		"✗ discord: Discord rejected the token (reset the token in the Discord developer portal",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, badTG) || strings.Contains(out, badDC) {
		t.Errorf("doctor printed a rejected token:\n%s", out)
	}

	t.Run("Offline", func(t *testing.T) {
		out, _, err := runCmd(t, env, "doctor", "--offline", "-timeout", "1s")
		if err != nil && !strings.Contains(out, "espeak") && !strings.Contains(out, "lame") {
			t.Fatalf("doctor --offline failed on a network check: %v\n%s", err, out)
		}
		if strings.Contains(out, "✗ model") || strings.Contains(out, "✗ telegram") || !strings.Contains(out, "network probes skipped") {
			t.Errorf("doctor --offline probed the network:\n%s", out)
		}
	})
}

func TestDoctor_RejectedKeyAndHangingEndpoint(t *testing.T) {
	m := modeltest.NewServer(t, modeltest.WithAPIKey("sk-good"))
	_, env := testEnv(t, map[string]string{"OPENAI_BASE_URL": m.URL(), "OPENAI_API_KEY": "sk-wrong"})
	out, _, err := runCmd(t, env, "doctor")
	if err == nil || !strings.Contains(out, "rejected the key (set OPENAI_API_KEY") {
		t.Fatalf("doctor with a wrong key: %v\n%s", err, out)
	}

	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	_, env = testEnv(t, map[string]string{"OPENAI_BASE_URL": hang.URL + "/v1"})
	out, _, err = runCmd(t, env, "doctor", "-timeout", "300ms")
	if err == nil || !strings.Contains(out, "✗ model endpoint "+hang.URL) {
		t.Fatalf("doctor against a hanging endpoint: %v\n%s", err, out)
	}

	// The endpoint answers but lacks the configured model.
	_, env = testEnv(t, map[string]string{"OPENAI_BASE_URL": m.URL(), "OPENAI_API_KEY": "sk-good", "HERMES_MODEL": "gpt-nope"})
	out, _, err = runCmd(t, env, "doctor")
	if err == nil || !strings.Contains(out, `has no model "gpt-nope"`) || !strings.Contains(out, "modeltest") {
		t.Fatalf("doctor with an unknown model: %v\n%s", err, out)
	}
}

func TestDoctor_ProbesEveryCatalogModel(t *testing.T) {
	good := modeltest.NewServer(t, modeltest.WithAPIKey("sk-good"))
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	t.Cleanup(dead.Close)
	home, env := testEnv(t, map[string]string{"GOOD_KEY": "sk-good"})
	yaml := "models:\n" +
		"  - {name: main, base_url: " + good.URL() + ", api_key_env: GOOD_KEY, model: modeltest, fallback: [spare]}\n" +
		"  - {name: spare, base_url: " + dead.URL + "/v1, model: spare-id}\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, env, "doctor")
	if err == nil {
		t.Fatalf("doctor passed with a dead fallback:\n%s", out)
	}
	if !strings.Contains(out, "✓ model endpoint "+good.URL()+" answers; model modeltest") || !strings.Contains(out, "[main]") {
		t.Errorf("the primary's line is missing:\n%s", out)
	}
	if !strings.Contains(out, "✗ model endpoint "+dead.URL+"/v1") || !strings.Contains(out, "[spare]") {
		t.Errorf("the dead fallback is not reported:\n%s", out)
	}
}
