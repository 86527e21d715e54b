package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ModelEntry is one model of the catalog: config.yaml's `models:` list, or
// the one entry the single-model keys (OPENAI_BASE_URL, OPENAI_API_KEY,
// HERMES_MODEL) make when there is no list.
type ModelEntry struct {
	// Name is what users pick with /model.
	Name string
	// BaseURL is the OpenAI-compatible API root.
	BaseURL string
	// APIKey is the key itself (api_key) or read from the environment
	// variable api_key_env names.
	APIKey string
	// Model is the provider's id; Name when unset.
	Model string
	// ContextTokens is the context window; 0 when unknown.
	ContextTokens int
	// Vision says the model accepts images.
	Vision bool
	// PriceIn and PriceOut are prices per million prompt / completion tokens.
	PriceIn, PriceOut float64
	// Fallback names the models tried, in order, when this one fails.
	Fallback []string
	// Timeout bounds one call; HERMES_MODEL_TIMEOUT when unset.
	Timeout time.Duration
}

// modelKeys are the config.yaml keys of the model catalog, read by
// readModels rather than as flat settings.
var modelKeys = map[string]bool{"MODELS": true, "DEFAULT_MODEL": true}

// readModels reads `models:` and `default_model:` from a config.yaml. An
// api_key_env names a variable of the process environment, read through
// lookup (.env holds only hermesd's own keys). A missing file or list is an
// empty catalog.
func readModels(path string, lookup func(string) (string, bool)) ([]ModelEntry, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", path, err)
	}
	type entry struct {
		Name          string    `yaml:"name"`
		BaseURL       string    `yaml:"base_url"`
		APIKey        string    `yaml:"api_key"`
		APIKeyEnv     string    `yaml:"api_key_env"`
		Model         string    `yaml:"model"`
		ContextTokens int       `yaml:"context_tokens"`
		Vision        bool      `yaml:"vision"`
		PriceIn       float64   `yaml:"price_in"`
		PriceOut      float64   `yaml:"price_out"`
		Fallback      []string  `yaml:"fallback"`
		Timeout       yaml.Node `yaml:"timeout"`
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	var (
		out  []ModelEntry
		def  string
		errs []error
	)
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	for k, node := range raw {
		switch strings.ToUpper(k) {
		case "DEFAULT_MODEL":
			if err := node.Decode(&def); err != nil {
				bad("default_model: want a model name: %v", err)
			}
		case "MODELS":
			var entries []entry
			if err := node.Decode(&entries); err != nil {
				return nil, "", fmt.Errorf("%s: models: want a list of {name, base_url, api_key or api_key_env, model, context_tokens, vision, price_in, price_out, fallback, timeout}: %w", path, err)
			}
			seen := map[string]bool{}
			for i, e := range entries {
				m := ModelEntry{Name: strings.TrimSpace(e.Name), BaseURL: strings.TrimRight(strings.TrimSpace(e.BaseURL), "/"),
					APIKey: e.APIKey, Model: e.Model, ContextTokens: e.ContextTokens, Vision: e.Vision,
					PriceIn: e.PriceIn, PriceOut: e.PriceOut, Fallback: e.Fallback}
				where := fmt.Sprintf("models[%d]", i)
				if m.Name != "" {
					where = fmt.Sprintf("models.%s", m.Name)
				}
				switch {
				case m.Name == "":
					bad("%s: name is required", where)
				case strings.ContainsAny(m.Name, " \t\n"):
					bad("%s: a name has no spaces (users type it after /model)", where)
				case seen[m.Name]:
					bad("%s: the name is used twice", where)
				}
				seen[m.Name] = true
				if u, err := url.Parse(m.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					bad("%s: base_url: want an http(s) URL, got %q", where, e.BaseURL)
				}
				if e.APIKeyEnv != "" {
					if e.APIKey != "" {
						bad("%s: set api_key or api_key_env, not both", where)
					}
					v, ok := lookup(e.APIKeyEnv)
					if !ok || v == "" {
						bad("%s: api_key_env: %s is not set", where, e.APIKeyEnv)
					}
					m.APIKey = v
				}
				if m.Model == "" {
					m.Model = m.Name
				}
				if m.ContextTokens < 0 || m.PriceIn < 0 || m.PriceOut < 0 {
					bad("%s: context_tokens and prices cannot be negative", where)
				}
				if e.Timeout.Kind != 0 {
					d, err := parseTimeout(e.Timeout.Value)
					if err != nil {
						bad("%s.timeout: %v", where, err)
					}
					m.Timeout = d
				}
				out = append(out, m)
			}
		}
	}
	names := map[string]bool{}
	for _, m := range out {
		names[m.Name] = true
	}
	for _, m := range out {
		for _, fb := range m.Fallback {
			if !names[fb] {
				bad("models.%s.fallback: no model is called %q", m.Name, fb)
			}
		}
	}
	if def != "" && !names[def] {
		bad("default_model: no model is called %q", def)
	}
	return out, def, errors.Join(errs...)
}

// catalog fills c.Models: the configured list, or one entry from the
// single-model keys, and gives every entry without a timeout the global one.
func (c *Config) catalog(list []ModelEntry) {
	if len(list) == 0 && c.ModelBaseURL != "" {
		list = []ModelEntry{{Name: c.Model, BaseURL: c.ModelBaseURL, APIKey: c.ModelAPIKey, Model: c.Model}}
	}
	for i := range list {
		if list[i].Timeout <= 0 {
			list[i].Timeout = c.ModelTimeout
		}
	}
	c.Models = list
}
