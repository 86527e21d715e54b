package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermesd/hermesd/config"
)

// FuzzConfigYAML loads arbitrary config.yaml files. Load never panics; a
// file it accepts gives a configuration that loads the same again, whose
// secrets never show in Redacted, and whose listener needs a token unless it
// is on loopback. Seeds: testdata/fuzz.
func FuzzConfigYAML(f *testing.F) {
	for _, seed := range []string{
		"openai_base_url: http://127.0.0.1:11434/v1\nhermes_model: llama3.1\n",
		"telegram_allowed_users: [1, 2, '*']\nhermes_busy_policy: queue\n",
		"HERMES_HTTP_ADDR: 0.0.0.0:7600\nHERMES_API_TOKEN: tok-secret-1\n",
		"hermes_allowed_hosts: chat.example.org, Other.Example.\nhermes_admin_users: [telegram:1]\n",
		"telegram_webhook_url: https://x.example/hook\ntelegram_webhook_listen: ':8443'\ntelegram_webhook_secret: s\n",
		"hermes_home: /etc\n", "unknown_key: 1\n", "{", "- a\n- b\n", "openai_api_key: {a: b}\n", "hermes_turn_timeout: -1s\n",
		"elevenlabs_api_key: el-secret-2\nhermes_tts_provider: elevenlabs\n", "hermes_http_addr: '[::1]:7600'\n", "~\n", "a: &x [*x]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, yaml string) {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		lookup := func(k string) (string, bool) {
			if k == "HERMES_HOME" {
				return home, true
			}
			return "", false
		}
		c, err := config.Load(lookup)
		if err != nil {
			return
		}
		again, err := config.Load(lookup)
		if err != nil {
			t.Fatalf("%q loaded once, then failed: %v", yaml, err)
		}
		if !slices.Equal(c.Redacted(), again.Redacted()) {
			t.Fatalf("%q loads differently twice", yaml)
		}
		if c.Home != home {
			t.Fatalf("config.yaml moved HERMES_HOME to %q", c.Home)
		}
		if !c.Loopback() && c.APIToken == "" {
			t.Fatalf("%q: a listener on %s without a token", yaml, c.HTTPAddr)
		}
		for _, line := range c.Redacted() {
			key, val, _ := strings.Cut(line, "=")
			secret := strings.HasSuffix(key, "_TOKEN") || strings.HasSuffix(key, "_KEY") || strings.HasSuffix(key, "_SECRET")
			if secret && val != "" && val != "(set, hidden)" {
				t.Fatalf("%q: Redacted shows a secret: %s", yaml, line)
			}
		}
	})
}
