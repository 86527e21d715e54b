package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// daemonRun is a `hermesd run` in the background of a test.
type daemonRun struct {
	addr   string
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// startDaemon runs `hermesd run` with env (whose HERMES_HTTP_ADDR must be
// set) until the test ends, and waits until /healthz answers.
func startDaemon(t *testing.T, env func(string) (string, bool)) *daemonRun {
	t.Helper()
	addr, _ := env("HERMES_HTTP_ADDR")
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemonRun{addr: addr, stderr: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() { d.done <- run(ctx, []string{"run"}, strings.NewReader(""), &syncBuffer{}, d.stderr, env) }()
	t.Cleanup(func() { d.stop(t) })
	client := &http.Client{Timeout: 2 * time.Second}
	checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("run returned before it was up: %v\n%s", err, d.stderr.String())
		default:
		}
		res, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	})
	return d
}

// stop ends the daemon (as SIGTERM does) and waits for it.
func (d *daemonRun) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("run: %v\n%s", err, d.stderr.String())
		}
		d.done <- nil
	case <-time.After(20 * time.Second):
		t.Errorf("run did not stop within 20s\n%s", d.stderr.String())
	}
}

// runWithInput calls run with stdin.
func runWithInput(t *testing.T, env func(string) (string, bool), stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	err := run(ctx, args, strings.NewReader(stdin), &out, &errOut, env)
	return out.String(), err
}

// TestSetup_WizardWritesAConfigTheNextRunUses is issue 15's "done when":
// setup against the fake model and fake Telegram writes a config that the
// next run uses — the model, the token and the allowlist.
func TestSetup_WizardWritesAConfigTheNextRunUses(t *testing.T) {
	m := modeltest.NewServer(t, modeltest.WithAPIKey("sk-test"))
	tg := telegramtest.NewServer(t)
	home, env := testEnv(t, map[string]string{
		// The API URL is where "Telegram" is; the token is what setup asks.
		"TELEGRAM_API_URL": tg.URL(), "TELEGRAM_RATE_LIMIT": "off", "HERMES_HTTP_ADDR": freeAddr(t),
	})
	answers := strings.Join([]string{
		m.URL(),        // endpoint
		"sk-test",      // key
		"",             // model: Enter takes the first listed (modeltest)
		"999:wrong",    // a token Telegram rejects: asked again
		tg.Token(),     // the right one
		"not-a-number", // a bad user id: asked again
		"4242",         // the owner's id
		"",             // no Discord
	}, "\n") + "\n"
	out, err := runWithInput(t, env, answers, "setup")
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	for _, want := range []string{
		"✓ " + m.URL() + " answers; models: modeltest",
		"✗ Telegram rejected the token (create a token with @BotFather",
		"✓ the token works: this is @" + tg.BotUsername(),
		`✗ "not-a-number" is not a user id`,
		"✓ allowlist: 4242",
		"• Discord off",
		"✓ saved: " + filepath.Join(home, "config.yaml") + " (settings), " + filepath.Join(home, ".env") + " (secrets, mode 0600)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("setup output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, tg.Token()) || strings.Contains(out, "sk-test\n") {
		t.Errorf("setup echoed a secret back:\n%s", out)
	}
	envFile := filepath.Join(home, ".env")
	fi, err := os.Stat(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf(".env has mode %v, want 0600", fi.Mode().Perm())
	}
	yaml, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	if strings.Contains(string(yaml), tg.Token()) || strings.Contains(string(yaml), "sk-test") {
		t.Errorf("config.yaml holds a secret:\n%s", yaml)
	}

	// The next run uses it: a message from the allowlisted owner reaches the
	// fake model with the key, and its answer comes back on Telegram.
	startDaemon(t, env)
	tg.SendText(4242, 4242, "hello from setup")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
		for _, c := range calls {
			if c.Method == "sendMessage" && c.ChatID == 4242 && strings.Contains(c.Fields["text"], "echo: hello from setup") {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no echo from the configured model on Telegram: %v; sent: %+v", err, tg.SentTo(4242))
	}
	if got := m.LastRequest(t).Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("model request Authorization %q, want the key setup wrote", got)
	}
	// Someone not on the allowlist is not served.
	tg.SendText(777, 777, "let me in")
	if err := tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
		for _, c := range calls {
			if c.ChatID == 777 && c.Method == "sendMessage" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range tg.SentTo(777) {
		if strings.Contains(c.Fields["text"], "echo:") {
			t.Fatalf("a user not on the allowlist reached the model: %q", c.Fields["text"])
		}
	}
}

func TestSetup_NonInteractiveRefusesBadAnswers(t *testing.T) {
	m := modeltest.NewServer(t)
	tg := telegramtest.NewServer(t)
	home, env := testEnv(t, map[string]string{"TELEGRAM_API_URL": tg.URL()})
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"DeadEndpoint", []string{"-model-url", "http://" + freeAddr(t) + "/v1"}, "model endpoint"},
		{"UnknownModel", []string{"-model-url", m.URL(), "-model", "gpt-nope"}, `model "gpt-nope" is not listed`},
		{"RejectedToken", []string{"-telegram-token", "1:bad"}, "@BotFather"},
		{"BadUserID", []string{"-telegram-token", tg.Token(), "-telegram-user", "@me"}, "not a user id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runWithInput(t, env, "", append([]string{"setup", "-non-interactive"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing written") {
				t.Fatalf("setup %v: err %v, want %q and nothing written\n%s", c.args, err, c.want, out)
			}
			for _, f := range []string{"config.yaml", ".env"} {
				if _, err := os.Stat(filepath.Join(home, f)); err == nil {
					t.Errorf("%s was written after a failed check", f)
				}
			}
		})
	}
	t.Run("Flags", func(t *testing.T) {
		out, err := runWithInput(t, env, "", "setup", "-non-interactive", "-model-url", m.URL(), "-model", "modeltest",
			"-telegram-token", tg.Token(), "-telegram-user", "11")
		if err != nil {
			t.Fatalf("setup: %v\n%s", err, out)
		}
		got, err := runWithInput(t, env, "", "config", "get", "telegram_allowed_users")
		if err != nil || strings.TrimSpace(got) != "11" {
			t.Fatalf("config get after setup: %q %v", got, err)
		}
	})
	t.Run("InputEnds", func(t *testing.T) {
		_, env := testEnv(t, nil)
		_, err := runWithInput(t, env, m.URL()+"\n", "setup")
		if err == nil || !strings.Contains(err.Error(), "nothing written") {
			t.Fatalf("setup with input that ends: %v", err)
		}
	})
}

func TestConfig_GetSetValidate(t *testing.T) {
	home, env := testEnv(t, map[string]string{"HERMES_BUSY_POLICY": "steer"})
	if out, err := runWithInput(t, env, "", "config", "set", "hermes_model", "llama3.1"); err != nil || !strings.Contains(out, "config.yaml") {
		t.Fatalf("config set: %q %v", out, err)
	}
	if out, err := runWithInput(t, env, "", "config", "set", "OPENAI_API_KEY", "sk-hidden"); err != nil || !strings.Contains(out, ".env") {
		t.Fatalf("config set secret: %q %v", out, err)
	}
	if out, _ := runWithInput(t, env, "", "config", "get", "hermes_model"); strings.TrimSpace(out) != "llama3.1" {
		t.Errorf("config get hermes_model = %q", out)
	}
	if out, _ := runWithInput(t, env, "", "config", "get", "OPENAI_API_KEY"); strings.TrimSpace(out) != "(set, hidden)" {
		t.Errorf("config get OPENAI_API_KEY = %q, want it hidden", out)
	}
	if out, _ := runWithInput(t, env, "", "config", "get", "-reveal", "OPENAI_API_KEY"); strings.TrimSpace(out) != "sk-hidden" {
		t.Errorf("config get -reveal = %q", out)
	}
	all, _ := runWithInput(t, env, "", "config", "get")
	for _, want := range []string{"HERMES_MODEL", "llama3.1", "config.yaml", "HERMES_BUSY_POLICY", "steer", "environment", "OPENAI_API_KEY", ".env", "HERMES_IDLE_TIMEOUT", "default"} {
		if !strings.Contains(all, want) {
			t.Errorf("config get lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "sk-hidden") {
		t.Errorf("config get printed a secret:\n%s", all)
	}
	// A bad value is refused and not written.
	before, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	if _, err := runWithInput(t, env, "", "config", "set", "HERMES_IDLE_TIMEOUT", "forever"); err == nil || !strings.Contains(err.Error(), "HERMES_IDLE_TIMEOUT") {
		t.Errorf("config set a bad duration: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	if string(before) != string(after) {
		t.Errorf("a refused value changed config.yaml:\n%s", after)
	}
	if _, err := runWithInput(t, env, "", "config", "set", "NO_SUCH_KEY", "1"); err == nil {
		t.Error("config set accepted an unknown key")
	}
	if out, err := runWithInput(t, env, "", "config", "validate"); err != nil || !strings.Contains(out, "configuration ok") {
		t.Errorf("config validate: %q %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("hermes_history_limit: lots\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runWithInput(t, env, "", "config", "validate"); err == nil || !strings.Contains(err.Error(), "HERMES_HISTORY_LIMIT") {
		t.Errorf("config validate on a bad file: %v", err)
	}
}
