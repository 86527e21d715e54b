package telegram_test

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// freeAddr finds a free port on 127.0.0.1, for a webhook URL that must be
// known before the listener exists.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestWebhook_SecretIsEnforcedAndUpdatesFlow(t *testing.T) {
	srv := telegramtest.NewServer(t)
	addr := freeAddr(t)
	a := setup(t, srv, func(c *telegram.Config, _ *telegram.Deps) {
		c.WebhookURL = "http://" + addr + "/tg/hook"
		c.WebhookSecret = "s3cret-Token_1"
		c.WebhookListen = addr
	})
	box := newInbox()
	run(t, a, box.Inbound)

	if url, secret := srv.Webhook(); url != "http://"+addr+"/tg/hook" || secret != "s3cret-Token_1" {
		t.Fatalf("setWebhook url=%q secret=%q", url, secret)
	}
	body := `{"update_id":900,"message":{"message_id":1,"date":1,"chat":{"id":5,"type":"private"},"from":{"id":5,"is_bot":false,"first_name":"Eve"},"text":"forged"}}`
	post := func(secret string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+a.WebhookAddr()+"/tg/hook", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		drain(resp)
		return resp.StatusCode
	}
	if got := post(""); got != http.StatusUnauthorized {
		t.Errorf("no secret: %d, want 401", got)
	}
	if got := post("wrong"); got != http.StatusForbidden {
		t.Errorf("wrong secret: %d, want 403", got)
	}
	if n := len(box.all()); n != 0 {
		t.Fatalf("%d forged updates reached hermesd", n)
	}
	if got := post("s3cret-Token_1"); got != http.StatusOK {
		t.Errorf("right secret: %d, want 200", got)
	}
	if m := box.wait(t, 1)[0]; m.Text != "forged" || m.SessionKey != "telegram:dm:5" {
		t.Errorf("got %+v", m)
	}

	// Updates Telegram pushes arrive too, in order per chat.
	srv.SendText(42, 42, "one")
	srv.SendText(42, 42, "two")
	got := box.wait(t, 3)
	if got[1].Text != "one" || got[2].Text != "two" {
		t.Errorf("pushed updates arrived as %q, %q", got[1].Text, got[2].Text)
	}
	if n := len(srv.CallsTo("getUpdates")); n != 0 {
		t.Errorf("polled %d times in webhook mode", n)
	}
}

func TestWebhook_ConfigNeedsASecret(t *testing.T) {
	cfg := telegram.DefaultConfig()
	cfg.Token = telegramtest.DefaultToken
	cfg.WebhookURL = "https://bot.example/hook"
	cfg.WebhookListen = ":8443"
	if _, err := telegram.New(cfg, telegram.Deps{Gate: &gate{all: true}}); err == nil {
		t.Error("a webhook without a secret was accepted")
	}
}
