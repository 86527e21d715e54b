package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, home, yaml string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoad_ModelCatalog(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `
hermes_model_timeout: 45s
default_model: big
models:
  - name: big
    base_url: https://api.example.com/v1/
    api_key_env: BIG_KEY
    model: gpt-big-2
    context_tokens: 128000
    vision: true
    price_in: 2.5
    price_out: 10
    fallback: [local]
    timeout: 90s
  - name: local
    base_url: http://127.0.0.1:11434/v1
    context_tokens: 8192
`)
	c, err := Load(lookup(map[string]string{"HERMES_HOME": home, "BIG_KEY": "sk-from-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Offline() || c.DefaultModel != "big" || len(c.Models) != 2 {
		t.Fatalf("offline=%v default=%q models=%+v", c.Offline(), c.DefaultModel, c.Models)
	}
	big, local := c.Models[0], c.Models[1]
	if big.Name != "big" || big.BaseURL != "https://api.example.com/v1" || big.APIKey != "sk-from-env" || big.Model != "gpt-big-2" ||
		big.ContextTokens != 128000 || !big.Vision || big.PriceIn != 2.5 || big.PriceOut != 10 ||
		strings.Join(big.Fallback, ",") != "local" || big.Timeout != 90*time.Second {
		t.Errorf("big = %+v", big)
	}
	if local.Model != "local" || local.Timeout != 45*time.Second || local.APIKey != "" || local.Vision {
		t.Errorf("local = %+v: want name as model id and the global timeout", local)
	}
}

func TestLoad_SingleModelKeysAreAOneEntryCatalog(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(),
		"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_API_KEY": "sk-x", "HERMES_MODEL": "qwen"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != 1 || c.Models[0].Name != "qwen" || c.Models[0].Model != "qwen" || c.Models[0].APIKey != "sk-x" ||
		c.Models[0].BaseURL != "http://127.0.0.1:8080/v1" || c.Models[0].Timeout != 120*time.Second {
		t.Errorf("catalog = %+v", c.Models)
	}
	c, err = Load(lookup(map[string]string{"HERMES_HOME": t.TempDir()}))
	if err != nil || len(c.Models) != 0 || !c.Offline() {
		t.Errorf("no model configured: %+v %v", c.Models, err)
	}
}

func TestLoad_BadModelCatalogs(t *testing.T) {
	for want, yaml := range map[string]string{
		"name is required":       "models:\n  - base_url: http://127.0.0.1:1/v1\n",
		"used twice":             "models:\n  - {name: a, base_url: http://127.0.0.1:1/v1}\n  - {name: a, base_url: http://127.0.0.1:1/v1}\n",
		"base_url":               "models:\n  - {name: a, base_url: ftp://x}\n",
		`no model is called "b"`: "models:\n  - {name: a, base_url: http://127.0.0.1:1/v1, fallback: [b]}\n",
		"default_model":          "default_model: zz\nmodels:\n  - {name: a, base_url: http://127.0.0.1:1/v1}\n",
		"NOPE_KEY is not set":    "models:\n  - {name: a, base_url: http://127.0.0.1:1/v1, api_key_env: NOPE_KEY}\n",
		"not both":               "models:\n  - {name: a, base_url: http://127.0.0.1:1/v1, api_key: k, api_key_env: HOME}\n",
		"timeout":                "models:\n  - {name: a, base_url: http://127.0.0.1:1/v1, timeout: soon}\n",
		"no spaces":              "models:\n  - {name: a b, base_url: http://127.0.0.1:1/v1}\n",
		"want a list":            "models: {a: 1}\n",
		"cannot be negative":     "models:\n  - {name: a, base_url: http://127.0.0.1:1/v1, price_in: -1}\n",
	} {
		home := t.TempDir()
		writeConfig(t, home, yaml)
		_, err := Load(lookup(map[string]string{"HERMES_HOME": home, "HOME": "/root"}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to say %q", yaml, err, want)
		}
	}
}
