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

// TestExample_CoversEveryKey keeps config.example.yaml in step with the
// contract: every key has a commented example line, and the file names no
// key that does not exist. Uncommented, its lines are valid values.
func TestExample_CoversEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "# ")
		if !ok {
			continue
		}
		name, val, ok := strings.Cut(rest, ":")
		if !ok || strings.ContainsAny(name, " -") || name != strings.ToLower(name) {
			continue // prose, not a key line
		}
		if !Known(strings.ToUpper(name)) {
			t.Errorf("config.example.yaml names %q, which is not a setting", name)
		}
		if i := strings.Index(val, " #"); i >= 0 {
			val = val[:i]
		}
		seen[strings.ToUpper(name)] = strings.TrimSpace(val)
	}
	for _, k := range Keys() {
		if _, ok := seen[k.Name]; !ok {
			t.Errorf("config.example.yaml has no line \"# %s: …\"; add one for the new key", strings.ToLower(k.Name))
		}
	}
	// Each example value (but HERMES_HOME's, which is prose) is accepted by
	// Load: the example does not teach a wrong format.
	for name, val := range seen {
		if name == "HERMES_HOME" || val == `""` {
			continue
		}
		home := t.TempDir()
		line := strings.ToLower(name) + ": " + val + "\n"
		if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"HERMES_HOME": home}
		switch name { // keys whose example needs its companions
		case "TELEGRAM_WEBHOOK_URL":
			env["TELEGRAM_WEBHOOK_LISTEN"], env["TELEGRAM_WEBHOOK_SECRET"] = "127.0.0.1:8443", "s"
		}
		if _, err := Load(lookup(env)); err != nil {
			t.Errorf("example %q does not load: %v", strings.TrimSpace(line), err)
		}
	}
}

func TestLoad_DotEnv(t *testing.T) {
	home := t.TempDir()
	yaml := "hermes_model: from-yaml\nhermes_busy_policy: queue\n"
	env := "# secrets\nexport OPENAI_API_KEY='sk-from-file'\nHERMES_MODEL=\"from \\\"env\\\" file\"\nOPENAI_BASE_URL=http://127.0.0.1:9/v1 # local\nHERMES_SYSTEM_PROMPT=\n"
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, EnvFile), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.ModelAPIKey, "sk-from-file"; got != want {
		t.Errorf("OPENAI_API_KEY = %q, want %q (from .env)", got, want)
	}
	if got, want := c.Model, `from "env" file`; got != want {
		t.Errorf("HERMES_MODEL = %q, want %q (.env wins over config.yaml)", got, want)
	}
	if got, want := c.ModelBaseURL, "http://127.0.0.1:9/v1"; got != want {
		t.Errorf("OPENAI_BASE_URL = %q, want %q (comment stripped)", got, want)
	}
	if c.BusyPolicy != "queue" {
		t.Errorf("busy policy %q, want queue from config.yaml", c.BusyPolicy)
	}
	// The real environment wins over .env.
	c, err = Load(lookup(map[string]string{"HERMES_HOME": home, "OPENAI_API_KEY": "sk-real-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelAPIKey != "sk-real-env" {
		t.Errorf("OPENAI_API_KEY = %q, want the environment's", c.ModelAPIKey)
	}
}

func TestLoad_DotEnvErrorsNameTheLine(t *testing.T) {
	for _, body := range []string{"NOT_A_SETTING=1\n", "\nHERMES_MODEL\n", "OPENAI_API_KEY='open\n", "HERMES_HOME=/elsewhere\n"} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, EnvFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(lookup(map[string]string{"HERMES_HOME": home}))
		if err == nil || !strings.Contains(err.Error(), ".env") || !strings.Contains(err.Error(), "line ") {
			t.Errorf(".env %q: err %v, want one naming the file and line", body, err)
		}
	}
}

func TestUpdate_SecretsGoToDotEnv(t *testing.T) {
	home := t.TempDir()
	existing := "# my settings\nhermes_busy_policy: queue # keep\nHERMES_MODEL: old\n"
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(existing), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, EnvFile), []byte("# tokens\nHERMES_MODEL=shadow\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Update(home, map[string]string{
		"HERMES_MODEL": "new-model", "TELEGRAM_BOT_TOKEN": "123:secret value", "TELEGRAM_ALLOWED_USERS": "42,43",
	})
	if err != nil {
		t.Fatal(err)
	}
	y, _ := os.ReadFile(filepath.Join(home, ConfigFile))
	e, _ := os.ReadFile(filepath.Join(home, EnvFile))
	if strings.Contains(string(y), "secret") {
		t.Errorf("config.yaml holds a secret:\n%s", y)
	}
	for _, want := range []string{"# my settings", "# keep", "hermes_busy_policy: queue"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("config.yaml lost %q:\n%s", want, y)
		}
	}
	if !strings.Contains(string(e), "# tokens") || strings.Contains(string(e), "shadow") {
		t.Errorf(".env should keep its comment and drop the HERMES_MODEL that would shadow config.yaml:\n%s", e)
	}
	for _, f := range []string{ConfigFile, EnvFile} {
		fi, err := os.Stat(filepath.Join(home, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "new-model" || c.TelegramToken != "123:secret value" || strings.Join(c.TelegramAllowed, ",") != "42,43" || c.BusyPolicy != "queue" {
		t.Errorf("after Update: model %q token %q allowed %v busy %q", c.Model, c.TelegramToken, c.TelegramAllowed, c.BusyPolicy)
	}
	// An empty value removes the key.
	if err := Update(home, map[string]string{"TELEGRAM_BOT_TOKEN": ""}); err != nil {
		t.Fatal(err)
	}
	if c, _ := Load(lookup(map[string]string{"HERMES_HOME": home})); c.TelegramToken != "" {
		t.Errorf("token %q after removing it", c.TelegramToken)
	}
	if err := Update(home, map[string]string{"NO_SUCH": "x"}); err == nil {
		t.Error("Update accepted an unknown key")
	}
}

func TestLoad_AdminUsersArePlatformUsers(t *testing.T) {
	home := t.TempDir()
	for _, bad := range []string{"web:alice", "123", "telegram:", "slack:1"} {
		if _, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_ADMIN_USERS": bad})); err == nil || !strings.Contains(err.Error(), "HERMES_ADMIN_USERS") {
			t.Errorf("HERMES_ADMIN_USERS=%q: err = %v", bad, err)
		}
	}
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_ADMIN_USERS": "telegram:1, discord:2"}))
	if err != nil || len(c.AdminUsers) != 2 || c.AdminUsers[1] != "discord:2" {
		t.Fatalf("%+v %v", c.AdminUsers, err)
	}
}

func TestLoad_AllowedHosts(t *testing.T) {
	home := t.TempDir()
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_ALLOWED_HOSTS": "Chat.Example.org., other"}))
	if err != nil || strings.Join(c.AllowedHosts, ",") != "chat.example.org,other" {
		t.Fatalf("%q %v", c.AllowedHosts, err)
	}
	if _, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HERMES_ALLOWED_HOSTS": "http://x.example:80"})); err == nil {
		t.Fatal("a URL in HERMES_ALLOWED_HOSTS was accepted")
	}
}
