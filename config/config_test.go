package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestLoad_Defaults(t *testing.T) {
	home := t.TempDir()
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:7600" || !c.Loopback() || !c.Offline() || c.TTSProvider != "espeak" || c.STTProvider != "none" || c.BusyPolicy != "interrupt" || !c.TelegramRateLimit {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestLoad_EnvironmentWinsOverYAML(t *testing.T) {
	home := t.TempDir()
	yaml := "hermes_busy_policy: queue\nTELEGRAM_ALLOWED_USERS: [1, 2]\nhermes_model: from-yaml\nopenai_base_url: http://127.0.0.1:9/v1\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_MODEL": "from-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.BusyPolicy != "queue" || strings.Join(c.TelegramAllowed, ",") != "1,2" || c.Model != "from-env" {
		t.Fatalf("merged: busy %q allowed %v model %q", c.BusyPolicy, c.TelegramAllowed, c.Model)
	}
}

func TestLoad_BadValuesNameTheirKey(t *testing.T) {
	for key, val := range map[string]string{
		"HERMES_BUSY_POLICY":   "sometimes",
		"HERMES_IDLE_TIMEOUT":  "soon",
		"OPENAI_BASE_URL":      "ftp://x",
		"HERMES_HTTP_ADDR":     "nowhere",
		"HERMES_HISTORY_LIMIT": "-3",
		"TELEGRAM_RATE_LIMIT":  "maybe",
		"HERMES_REVIEW_EVERY":  "x",
		// Group switches: a typo in an id list would otherwise be a switch
		// that silently never matches.
		"DISCORD_REQUIRE_MENTION":          "sometimes",
		"TELEGRAM_GROUP_SESSIONS_PER_USER": "2",
		"TELEGRAM_FREE_RESPONSE_CHATS":     "-1001,@mygroup",
		"DISCORD_FREE_RESPONSE_CHANNELS":   "#general",
		"DISCORD_NO_THREAD_CHANNELS":       "1x",
	} {
		_, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), key: val}))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: err %v does not name the key", key, val, err)
		}
	}
	home := t.TempDir()
	_ = os.WriteFile(filepath.Join(home, "config.yaml"), []byte("no_such_key: 1\n"), 0o600)
	if _, err := Load(lookup(map[string]string{"HERMES_HOME": home})); err == nil || !strings.Contains(err.Error(), "no_such_key") {
		t.Errorf("unknown yaml key: %v", err)
	}
}

// TestLoad_GroupSwitches: the group and channel switches default to what a
// busy group wants (mention required, one session per member, no
// auto-thread) and take YAML booleans and lists as well as on/off and
// comma-separated ids. (Bad values: TestLoad_BadValuesNameTheirKey.)
func TestLoad_GroupSwitches(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.TelegramRequireMention || !c.TelegramGroupSessionsPerUser || !c.DiscordRequireMention || !c.DiscordGroupSessionsPerUser || c.DiscordAutoThread ||
		len(c.TelegramFreeResponseChats)+len(c.DiscordFreeResponseChannels)+len(c.DiscordNoThreadChannels) != 0 {
		t.Fatalf("defaults: %+v", c)
	}

	home := t.TempDir()
	yaml := "telegram_require_mention: false\ntelegram_free_response_chats: [-1001, -1002]\ntelegram_group_sessions_per_user: false\n" +
		"discord_auto_thread: true\ndiscord_no_thread_channels: [\"55\"]\ndiscord_free_response_channels: 77,78\ndiscord_group_sessions_per_user: off\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(lookup(map[string]string{"HERMES_HOME": home, "DISCORD_REQUIRE_MENTION": "false"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.TelegramRequireMention || c.TelegramGroupSessionsPerUser || strings.Join(c.TelegramFreeResponseChats, ",") != "-1001,-1002" ||
		c.DiscordRequireMention || !c.DiscordAutoThread || c.DiscordGroupSessionsPerUser ||
		strings.Join(c.DiscordNoThreadChannels, ",") != "55" || strings.Join(c.DiscordFreeResponseChannels, ",") != "77,78" {
		t.Fatalf("from yaml and env: %+v", c)
	}
	// doctor shows the effective switches.
	shown := strings.Join(c.Redacted(), "\n")
	for _, line := range []string{"TELEGRAM_REQUIRE_MENTION=off", "TELEGRAM_FREE_RESPONSE_CHATS=-1001,-1002", "DISCORD_AUTO_THREAD=on", "DISCORD_GROUP_SESSIONS_PER_USER=off"} {
		if !strings.Contains(shown, line) {
			t.Errorf("Redacted lacks %s:\n%s", line, shown)
		}
	}
}

func TestLoad_NonLoopbackNeedsToken(t *testing.T) {
	_, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_HTTP_ADDR": "0.0.0.0:7600"}))
	if err == nil || !strings.Contains(err.Error(), "HERMES_API_TOKEN") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_HTTP_ADDR": "0.0.0.0:7600", "HERMES_API_TOKEN": "s3cret"})); err != nil {
		t.Fatal(err)
	}
}

func TestLoad_WebhookNeedsItsOwnListenerAndSecret(t *testing.T) {
	_, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "TELEGRAM_WEBHOOK_URL": "https://bot.example/hook"}))
	if err == nil || !strings.Contains(err.Error(), "TELEGRAM_WEBHOOK_LISTEN") || !strings.Contains(err.Error(), "TELEGRAM_WEBHOOK_SECRET") {
		t.Fatalf("err = %v", err)
	}
}

func TestRedacted_HidesSecrets(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "OPENAI_API_KEY": "sk-verysecret", "TELEGRAM_BOT_TOKEN": "123:ABC"}))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(c.Redacted(), "\n")
	if strings.Contains(all, "sk-verysecret") || strings.Contains(all, "123:ABC") || !strings.Contains(all, "OPENAI_API_KEY=(set, hidden)") {
		t.Fatalf("redacted:\n%s", all)
	}
}

// TestDocs_ListEveryKey pins docs/configuration.md's claim to be the
// complete list: every setting Load accepts has a row there.
func TestDocs_ListEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "`"+k.name+"`") {
			t.Errorf("%s is not documented in docs/configuration.md", k.name)
		}
	}
}
