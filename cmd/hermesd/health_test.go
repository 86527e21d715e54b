package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

func TestHealth(t *testing.T) {
	_, env := testEnv(t, map[string]string{"HERMES_HTTP_ADDR": freeAddr(t)})
	if _, _, err := runCmd(t, env, "health"); err == nil || !strings.Contains(err.Error(), "is hermesd running") {
		t.Fatalf("health with no daemon: %v", err)
	}
	startDaemon(t, env)
	if out, _, err := runCmd(t, env, "health"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Errorf("health: %q %v", out, err)
	}
	checkFor(t, 10e9, 10e6, func() error {
		_, _, err := runCmd(t, env, "health", "-ready")
		return err
	})
	if _, _, err := runCmd(t, env, "health", "-bogus"); exitCode(err) != 2 {
		t.Errorf("health -bogus: %v, want a usage error", err)
	}
}

// TestStatus_ShowsWhyAPlatformIsDown is the report: after a 401
// from Telegram, `hermesd status` showed the platform disconnected with no
// error and /readyz still said ready.
func TestStatus_ShowsWhyAPlatformIsDown(t *testing.T) {
	tg := telegramtest.NewServer(t)
	_, env := testEnv(t, map[string]string{
		"HERMES_HTTP_ADDR": freeAddr(t), "TELEGRAM_BOT_TOKEN": "999:revoked-token", "TELEGRAM_API_URL": tg.URL(),
	})
	startDaemon(t, env)
	checkFor(t, 20e9, 10e6, func() error {
		_, _, err := runCmd(t, env, "health", "-ready")
		if err == nil || !strings.Contains(err.Error(), "platform_down") {
			return fmt.Errorf("health -ready: %v", err)
		}
		return nil
	})
	// Down is reported from the start (not connected yet); the reason comes
	// once the first getMe was refused.
	var out, line string
	checkFor(t, 20e9, 10e6, func() error {
		var err error
		if out, _, err = runCmd(t, env, "status"); err != nil {
			return err
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "telegram ") {
				line = l
			}
		}
		if !strings.Contains(line, "DISCONNECTED") || !strings.Contains(line, "create a token with @BotFather, set TELEGRAM_BOT_TOKEN") {
			return fmt.Errorf("status line for telegram %q, want DISCONNECTED with the fix:\n%s", line, out)
		}
		return nil
	})
	if strings.Contains(out, "revoked-token") {
		t.Errorf("status shows the token:\n%s", out)
	}
}
