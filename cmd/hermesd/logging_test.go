package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/model/modeltest"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// jsonKeys returns the top-level keys of one JSON log line, in order,
// duplicates included (encoding/json would silently keep the last).
func jsonKeys(line string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %q", line)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// logfmtKeys returns the keys of one text log line.
func logfmtKeys(line string) []string {
	var keys []string
	inQuote, start := false, 0
	for i := 0; i <= len(line); i++ {
		if i < len(line) {
			switch c := line[i]; {
			case c == '\\' && inQuote:
				i++
				continue
			case c == '"':
				inQuote = !inQuote
				continue
			case c != ' ' || inQuote:
				continue
			}
		}
		if k, _, ok := strings.Cut(line[start:i], "="); ok {
			keys = append(keys, k)
		}
		start = i + 1
	}
	return keys
}

func duplicates(keys []string) []string {
	seen := map[string]bool{}
	var dup []string
	for _, k := range keys {
		if seen[k] {
			dup = append(dup, k)
		}
		seen[k] = true
	}
	return dup
}

// TestLogs_FormatsFieldsAndSecrets runs the daemon with every platform and
// secrets set, makes the platforms fail (errors carry URLs, and a Telegram
// URL carries the token), and checks each log line: the chosen format, no
// field twice, no secret anywhere.
func TestLogs_FormatsFieldsAndSecrets(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			m := modeltest.NewServer(t, modeltest.WithAPIKey("sk-model-secret-key"))
			tg := telegramtest.NewServer(t)
			dc := discordtest.NewServer(t)
			tg.FailNext("getUpdates", 2, telegramtest.ServerError())
			_, env := testEnv(t, map[string]string{
				"HERMES_LOG_FORMAT": format, "HERMES_LOG_LEVEL": "debug", "HERMES_HTTP_ADDR": freeAddr(t),
				"OPENAI_BASE_URL": m.URL(), "OPENAI_API_KEY": "sk-model-secret-key",
				"TELEGRAM_BOT_TOKEN": tg.Token(), "TELEGRAM_API_URL": tg.URL(), "TELEGRAM_RATE_LIMIT": "off",
				"DISCORD_BOT_TOKEN": discordtest.Token + "-but-wrong", "DISCORD_API_URL": dc.URL,
			})
			d := startDaemon(t, env)
			webChat(t, d.addr, "logs", "hello")
			checkFor(t, 20e9, 10e6, func() error {
				if len(tg.CallsTo("getUpdates")) < 3 {
					return errors.New("telegram not polled past its failures yet")
				}
				return nil
			})
			d.stop(t)
			logs := d.stderr.String()
			for _, secret := range []string{"sk-model-secret-key", tg.Token(), discordtest.Token + "-but-wrong"} {
				if strings.Contains(logs, secret) {
					t.Errorf("the log holds the secret %q:\n%s", secret, logs)
				}
			}
			lines := strings.Split(strings.TrimSpace(logs), "\n")
			if len(lines) < 5 {
				t.Fatalf("only %d log lines:\n%s", len(lines), logs)
			}
			platformLines := 0
			for _, l := range lines {
				var keys []string
				if format == "json" {
					var err error
					if keys, err = jsonKeys(l); err != nil {
						t.Errorf("not a JSON line: %v", err)
						continue
					}
				} else {
					if strings.HasPrefix(l, "{") {
						t.Errorf("a JSON line in text format: %s", l)
					}
					keys = logfmtKeys(l)
				}
				if dup := duplicates(keys); len(dup) > 0 {
					t.Errorf("fields %v appear twice: %s", dup, l)
				}
				for _, k := range keys {
					if k == "platform" {
						platformLines++
					}
				}
			}
			if platformLines == 0 {
				t.Errorf("no line has a platform field; the check above checked nothing:\n%s", logs)
			}
		})
	}
}

func TestRedactor_CleansEveryKindOfValue(t *testing.T) {
	var buf bytes.Buffer
	cfg := config.Config{TelegramToken: "123456:telegram-secret", ModelAPIKey: "sk-abcdefgh", DiscordToken: "short"}
	log := newLogger(&buf, cfg, new(slog.LevelVar))
	log = log.With("url", "https://api.telegram.org/bot123456:telegram-secret/getMe")
	log.WithGroup("g").Info("calling with sk-abcdefgh",
		"err", fmt.Errorf("Post %q: dial: refused", "https://x/bot123456:telegram-secret/getUpdates"),
		"bytes", []byte("key=sk-abcdefgh"),
		slog.Group("nested", "k", "sk-abcdefgh"),
		"any", struct{ Key string }{"sk-abcdefgh"},
		"n", 42, "short", "short")
	out := buf.String()
	for _, secret := range []string{"telegram-secret", "sk-abcdefgh"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q in %s", secret, out)
		}
	}
	for _, want := range []string{"[redacted]", "n=42", "short=short"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing from %s", want, out)
		}
	}
}
