package daemon_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// readyz returns /readyz's status and error message.
func (r *running) readyz(t testing.TB) (int, string) {
	t.Helper()
	res, err := http.Get(r.srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body.Error.Code + ": " + body.Error.Message
}

// waitReadyz polls /readyz until it answers want.
func (r *running) waitReadyz(t testing.TB, want int) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, msg := r.readyz(t)
		if code == want {
			return msg
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz is %d (%s), want %d", code, msg, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReadyz_TelegramRejectsTheToken(t *testing.T) {
	tg := telegramtest.NewServer(t)
	cfg := testConfig(t, t.TempDir(), map[string]string{
		"TELEGRAM_BOT_TOKEN": "999:revoked", "TELEGRAM_API_URL": tg.URL(), "TELEGRAM_RATE_LIMIT": "off",
	})
	r := start(t, cfg, daemon.Options{})
	msg := r.waitReadyzMessage(t, "rejected")
	for _, want := range []string{"platform_down", "telegram", "@BotFather", "TELEGRAM_BOT_TOKEN"} {
		if !strings.Contains(msg, want) {
			t.Errorf("/readyz says %q, want it to mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "revoked") {
		t.Errorf("/readyz shows the token: %q", msg)
	}
	// /api/status keeps the error for `hermesd status`.
	res, err := http.Get(r.srv.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		Platforms []struct {
			Platform  string `json:"platform"`
			Connected bool   `json:"connected"`
			LastError string `json:"last_error"`
		} `json:"platforms"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range st.Platforms {
		if p.Platform == "telegram" {
			found = true
			if p.Connected || !strings.Contains(p.LastError, "@BotFather") {
				t.Errorf("telegram status %+v, want disconnected with the rejection", p)
			}
		}
	}
	if !found {
		t.Errorf("no telegram in /api/status: %+v", st)
	}
}

// waitReadyzMessage polls until /readyz is 503 with a message containing sub.
func (r *running) waitReadyzMessage(t testing.TB, sub string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, msg := r.readyz(t)
		if code == http.StatusServiceUnavailable && strings.Contains(msg, sub) {
			return msg
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz is %d (%s), want 503 mentioning %q", code, msg, sub)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReadyz_ReadyOnceTelegramPolls(t *testing.T) {
	tg := telegramtest.NewServer(t)
	cfg := testConfig(t, t.TempDir(), map[string]string{
		"TELEGRAM_BOT_TOKEN": tg.Token(), "TELEGRAM_API_URL": tg.URL(), "TELEGRAM_RATE_LIMIT": "off",
	})
	r := start(t, cfg, daemon.Options{})
	r.waitReadyz(t, http.StatusOK)
	if n := len(tg.CallsTo("getUpdates")); n == 0 {
		t.Fatal("ready before Telegram was polled")
	}
}

func TestReadyz_StoreCannotWrite(t *testing.T) {
	r := start(t, testConfig(t, t.TempDir(), nil), daemon.Options{})
	r.waitReadyz(t, http.StatusOK)
	if err := r.d.Store().Close(); err != nil {
		t.Fatal(err)
	}
	code, msg := r.readyz(t)
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(msg, "store: the store cannot write") {
		t.Fatalf("/readyz with a closed store: %d %s", code, msg)
	}
}
