// Package config reads hermesd's configuration: the environment contract
// (docs/configuration.md) plus an optional config.yaml in HERMES_HOME, the
// environment winning. Only this package reads the environment, and only
// through the lookup function it is given. Every bad value is an error that
// names its key; secrets are never printed (see Redacted).
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is hermesd's whole configuration.
type Config struct {
	Home     string
	HTTPAddr string
	APIToken string
	// AllowedHosts are host names, besides localhost and IP literals, that
	// may appear in a request's Host header (a reverse proxy's public name):
	// anything else is refused, so a DNS-rebinding page cannot reach the
	// listener through a name of its own.
	AllowedHosts []string
	// AdminUsers are platform-qualified users ("telegram:123") whose
	// skills are shared with every chat.
	AdminUsers []string
	LogLevel   string
	// LogFormat is "text" or "json".
	LogFormat string

	ModelBaseURL string
	ModelAPIKey  string
	Model        string
	ModelTimeout time.Duration

	TelegramToken         string
	TelegramAPIURL        string
	TelegramAllowed       []string
	TelegramWebhookURL    string
	TelegramWebhookSecret string
	TelegramWebhookListen string
	TelegramRateLimit     bool
	// TelegramRequireMention: in groups, answer only messages that mention
	// the bot, reply to it or are commands; TelegramFreeResponseChats are
	// group chat ids answered without that.
	TelegramRequireMention    bool
	TelegramFreeResponseChats []string
	// TelegramGroupSessionsPerUser gives each member of a group their own
	// conversation; off, the whole group shares one.
	TelegramGroupSessionsPerUser bool

	DiscordToken   string
	DiscordAPIURL  string
	DiscordAllowed []string
	// DiscordRequireMention: in guild channels, answer only messages that
	// mention the bot or reply to it (and threads the bot started);
	// DiscordFreeResponseChannels are channel ids answered without that.
	DiscordRequireMention       bool
	DiscordFreeResponseChannels []string
	// DiscordAutoThread answers an addressed guild message in a new thread
	// started from it, except in DiscordNoThreadChannels.
	DiscordAutoThread           bool
	DiscordNoThreadChannels     []string
	DiscordGroupSessionsPerUser bool

	TTSProvider   string
	TTSBaseURL    string
	TTSVoice      string
	ElevenLabsKey string

	STTProvider string
	STTBaseURL  string
	STTModel    string

	IdleTimeout   time.Duration
	BusyPolicy    string
	SystemPrompt  string
	HistoryLimit  int
	MaxToolRounds int
	TurnTimeout   time.Duration
	ShutdownGrace time.Duration
	// ReviewEvery and SweepEvery run a skill review / memory sweep after
	// that many turns of a conversation; 0 turns them off.
	ReviewEvery int
	SweepEvery  int
	// ContextTokens is the model's context window, for the token budget
	// that triggers compression; ToolResultLimit caps (in bytes) a tool
	// result as the model sees it, 0 for no cap.
	ContextTokens   int
	ToolResultLimit int

	// Tools are the settings of the tools that act (config/tools.go).
	Tools Tools

	// DatabaseURL is a PostgreSQL URL (postgres://…) to keep state in
	// instead of HERMES_HOME/hermesd.db; see Database.
	DatabaseURL string

	// Cluster are the settings of cluster mode (config/cluster.go).
	Cluster Cluster
	// Models is the model catalog (config/models.go): config.yaml's
	// `models:` list, else one entry from OPENAI_BASE_URL, OPENAI_API_KEY
	// and HERMES_MODEL, else empty (the offline assistant). DefaultModel is
	// `default_model:`, "" for the first entry.
	Models       []ModelEntry
	DefaultModel string
	// Media are the settings of inbound images and documents (config/media.go).
	Media Media
}

// keys lists every setting: its environment name (also its config.yaml key),
// default and whether it is a secret.
// The tools' settings (toolKeys, config/tools.go) follow the core ones.
var keys = append([]struct {
	name, def string
	secret    bool
}{
	{"HERMES_HOME", "", false},
	{"HERMES_HTTP_ADDR", "127.0.0.1:7600", false},
	{"HERMES_API_TOKEN", "", true},
	{"HERMES_ALLOWED_HOSTS", "", false},
	{"HERMES_ADMIN_USERS", "", false},
	{"HERMES_LOG_LEVEL", "info", false},
	{"HERMES_LOG_FORMAT", "text", false},
	{"OPENAI_BASE_URL", "", false},
	{"OPENAI_API_KEY", "", true},
	{"HERMES_MODEL", "", false},
	{"HERMES_MODEL_TIMEOUT", "120s", false},
	{"TELEGRAM_BOT_TOKEN", "", true},
	{"TELEGRAM_API_URL", "https://api.telegram.org", false},
	{"TELEGRAM_ALLOWED_USERS", "", false},
	{"TELEGRAM_WEBHOOK_URL", "", false},
	{"TELEGRAM_WEBHOOK_SECRET", "", true},
	{"TELEGRAM_WEBHOOK_LISTEN", "", false},
	{"TELEGRAM_RATE_LIMIT", "on", false},
	{"TELEGRAM_REQUIRE_MENTION", "on", false},
	{"TELEGRAM_FREE_RESPONSE_CHATS", "", false},
	{"TELEGRAM_GROUP_SESSIONS_PER_USER", "on", false},
	{"DISCORD_BOT_TOKEN", "", true},
	{"DISCORD_API_URL", "https://discord.com", false},
	{"DISCORD_ALLOWED_USERS", "", false},
	{"DISCORD_REQUIRE_MENTION", "on", false},
	{"DISCORD_FREE_RESPONSE_CHANNELS", "", false},
	{"DISCORD_AUTO_THREAD", "off", false},
	{"DISCORD_NO_THREAD_CHANNELS", "", false},
	{"DISCORD_GROUP_SESSIONS_PER_USER", "on", false},
	{"HERMES_TTS_PROVIDER", "espeak", false},
	{"HERMES_TTS_BASE_URL", "", false},
	{"HERMES_TTS_VOICE", "", false},
	{"ELEVENLABS_API_KEY", "", true},
	{"HERMES_STT_PROVIDER", "none", false},
	{"HERMES_STT_BASE_URL", "", false},
	{"HERMES_STT_MODEL", "whisper-1", false},
	{"HERMES_IDLE_TIMEOUT", "30m", false},
	{"HERMES_BUSY_POLICY", "interrupt", false},
	{"HERMES_SYSTEM_PROMPT", "", false},
	{"HERMES_HISTORY_LIMIT", "1000", false},
	{"HERMES_MAX_TOOL_ROUNDS", "8", false},
	{"HERMES_TURN_TIMEOUT", "10m", false},
	{"HERMES_SHUTDOWN_GRACE", "10s", false},
	{"HERMES_REVIEW_EVERY", "10", false},
	{"HERMES_SWEEP_EVERY", "5", false},
	{"HERMES_DATABASE_URL", "", true},
	{"HERMES_CONTEXT_TOKENS", "32768", false},
	{"HERMES_TOOL_RESULT_LIMIT", "16384", false},
}, append(append(toolKeys, mediaKeys...), clusterKeys...)...)

// Load reads the configuration: defaults, then HERMES_HOME/config.yaml, then
// HERMES_HOME/.env, then the environment through lookup (os.LookupEnv in the
// daemon), each later source winning.
func Load(lookup func(string) (string, bool)) (Config, error) {
	settings, err := Resolve(lookup)
	if err != nil {
		return Config{}, err
	}
	vals := make(map[string]string, len(settings))
	for _, s := range settings {
		vals[s.Name] = s.Value
	}
	c, err := parse(vals)
	mcp, merr := ReadMCP(filepath.Join(vals["HERMES_HOME"], ConfigFile))
	c.Tools.MCPServers = mcp
	c.Tools.ChildEnv = childEnv(lookup)
	models, def, cerr := readModels(filepath.Join(vals["HERMES_HOME"], ConfigFile), lookup)
	c.catalog(models)
	c.DefaultModel = def
	return c, errors.Join(err, merr, cerr)
}

// Home returns HERMES_HOME as lookup gives it, or ~/.hermesd.
func Home(lookup func(string) (string, bool)) (string, error) {
	home, ok := lookup("HERMES_HOME")
	if ok && home != "" {
		return home, nil
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("HERMES_HOME is unset and the home directory is unknown: %w", err)
	}
	return filepath.Join(dir, ".hermesd"), nil
}

// Resolve returns every setting's raw value and where it came from, in the
// order of Keys, without validating values (Load does).
func Resolve(lookup func(string) (string, bool)) ([]Setting, error) {
	home, err := Home(lookup)
	if err != nil {
		return nil, err
	}
	vals := make(map[string]string, len(keys))
	src := make(map[string]Source, len(keys))
	for _, k := range keys {
		vals[k.name], src[k.name] = k.def, FromDefault
	}
	yamlVals := make(map[string]string)
	if err := readYAML(filepath.Join(home, ConfigFile), yamlVals); err != nil {
		return nil, err
	}
	for k, v := range yamlVals {
		vals[k], src[k] = v, FromYAML
	}
	envFile, err := readDotEnv(filepath.Join(home, EnvFile))
	if err != nil {
		return nil, err
	}
	for k, v := range envFile {
		vals[k], src[k] = v, FromEnvFile
	}
	for _, k := range keys {
		if v, ok := lookup(k.name); ok {
			vals[k.name], src[k.name] = v, FromEnvironment
		}
	}
	vals["HERMES_HOME"] = home
	out := make([]Setting, 0, len(keys))
	for _, k := range keys {
		out = append(out, Setting{Name: k.name, Value: vals[k.name], Source: src[k.name], Secret: k.secret})
	}
	return out, nil
}

// readYAML reads a flat config.yaml whose keys are the environment names
// (either case) into vals. A missing file is fine; an unknown key is an error.
func readYAML(path string, vals map[string]string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for k, v := range raw {
		name := strings.ToUpper(k)
		if mcpKeys[name] {
			continue // a nested list, read by ReadMCP
		}
		if modelKeys[name] {
			continue // the model catalog, read by readModels
		}
		if !Known(name) || name == "HERMES_HOME" {
			return fmt.Errorf("%s: unknown key %q (see docs/configuration.md)", path, k)
		}
		switch v := v.(type) {
		case string:
			vals[name] = v
		case int, float64, bool:
			vals[name] = fmt.Sprint(v)
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			vals[name] = strings.Join(parts, ",")
		case nil:
			vals[name] = ""
		default:
			return fmt.Errorf("%s: key %q: want a string, number or list", path, k)
		}
	}
	return nil
}

func parse(v map[string]string) (Config, error) {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	dur := func(key string) time.Duration {
		d, err := time.ParseDuration(v[key])
		if err != nil || d <= 0 {
			bad(key, "want a positive duration such as 30s or 10m, got %q", v[key])
		}
		return d
	}
	num := func(key string) int {
		n, err := strconv.Atoi(v[key])
		if err != nil || n <= 0 {
			bad(key, "want a positive integer, got %q", v[key])
		}
		return n
	}
	count := func(key string) int {
		n, err := strconv.Atoi(v[key])
		if err != nil || n < 0 {
			bad(key, "want 0 (off) or a positive integer, got %q", v[key])
		}
		return n
	}
	// flag reads a switch: on/off as the contract spells it, and the
	// true/false a YAML boolean or a Hermes-style variable gives.
	flag := func(key string) bool {
		switch strings.ToLower(strings.TrimSpace(v[key])) {
		case "on", "true", "yes", "1":
			return true
		case "off", "false", "no", "0":
			return false
		}
		bad(key, "want on or off, got %q", v[key])
		return false
	}
	// ids reads a list of numeric chat or channel ids (Telegram group ids
	// are negative), so a typo is an error rather than a switch that
	// silently never matches.
	ids := func(key string) []string {
		out := list(v[key])
		for _, id := range out {
			if _, err := strconv.ParseInt(id, 10, 64); err != nil {
				bad(key, "want a comma-separated list of numeric ids, got %q", id)
			}
		}
		return out
	}
	urlOf := func(key string) string {
		s := strings.TrimRight(v[key], "/")
		if s == "" {
			return ""
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(key, "want an http(s) URL, got %q", v[key])
		}
		return s
	}
	hostList := func(key string) []string {
		var out []string
		for _, h := range list(v[key]) {
			h = strings.ToLower(strings.TrimSuffix(h, "."))
			if strings.ContainsAny(h, "/:@ ") {
				bad(key, "want host names without scheme or port, got %q", h)
				continue
			}
			out = append(out, h)
		}
		return out
	}
	oneOf := func(key string, allowed ...string) string {
		s := strings.ToLower(strings.TrimSpace(v[key]))
		for _, a := range allowed {
			if s == a {
				return s
			}
		}
		bad(key, "want one of %s, got %q", strings.Join(allowed, ", "), v[key])
		return ""
	}
	c := Config{
		Home:         v["HERMES_HOME"],
		HTTPAddr:     v["HERMES_HTTP_ADDR"],
		APIToken:     v["HERMES_API_TOKEN"],
		AllowedHosts: hostList("HERMES_ALLOWED_HOSTS"),
		AdminUsers:   list(v["HERMES_ADMIN_USERS"]),
		LogLevel:     oneOf("HERMES_LOG_LEVEL", "debug", "info", "warn", "error"),
		LogFormat:    oneOf("HERMES_LOG_FORMAT", "text", "json"),

		ModelBaseURL: urlOf("OPENAI_BASE_URL"),
		ModelAPIKey:  v["OPENAI_API_KEY"],
		Model:        v["HERMES_MODEL"],
		ModelTimeout: dur("HERMES_MODEL_TIMEOUT"),

		TelegramToken:         v["TELEGRAM_BOT_TOKEN"],
		TelegramAPIURL:        urlOf("TELEGRAM_API_URL"),
		TelegramAllowed:       list(v["TELEGRAM_ALLOWED_USERS"]),
		TelegramWebhookURL:    urlOf("TELEGRAM_WEBHOOK_URL"),
		TelegramWebhookSecret: v["TELEGRAM_WEBHOOK_SECRET"],
		TelegramWebhookListen: v["TELEGRAM_WEBHOOK_LISTEN"],
		TelegramRateLimit:     oneOf("TELEGRAM_RATE_LIMIT", "on", "off") != "off",

		TelegramRequireMention:       flag("TELEGRAM_REQUIRE_MENTION"),
		TelegramFreeResponseChats:    ids("TELEGRAM_FREE_RESPONSE_CHATS"),
		TelegramGroupSessionsPerUser: flag("TELEGRAM_GROUP_SESSIONS_PER_USER"),

		DiscordToken:   v["DISCORD_BOT_TOKEN"],
		DiscordAPIURL:  urlOf("DISCORD_API_URL"),
		DiscordAllowed: list(v["DISCORD_ALLOWED_USERS"]),

		DiscordRequireMention:       flag("DISCORD_REQUIRE_MENTION"),
		DiscordFreeResponseChannels: ids("DISCORD_FREE_RESPONSE_CHANNELS"),
		DiscordAutoThread:           flag("DISCORD_AUTO_THREAD"),
		DiscordNoThreadChannels:     ids("DISCORD_NO_THREAD_CHANNELS"),
		DiscordGroupSessionsPerUser: flag("DISCORD_GROUP_SESSIONS_PER_USER"),

		TTSProvider:   oneOf("HERMES_TTS_PROVIDER", "espeak", "openai", "elevenlabs", "none"),
		TTSBaseURL:    urlOf("HERMES_TTS_BASE_URL"),
		TTSVoice:      v["HERMES_TTS_VOICE"],
		ElevenLabsKey: v["ELEVENLABS_API_KEY"],

		STTProvider: oneOf("HERMES_STT_PROVIDER", "openai", "none"),
		STTBaseURL:  urlOf("HERMES_STT_BASE_URL"),
		STTModel:    v["HERMES_STT_MODEL"],

		IdleTimeout:   dur("HERMES_IDLE_TIMEOUT"),
		BusyPolicy:    oneOf("HERMES_BUSY_POLICY", "interrupt", "queue", "steer"),
		SystemPrompt:  v["HERMES_SYSTEM_PROMPT"],
		HistoryLimit:  num("HERMES_HISTORY_LIMIT"),
		MaxToolRounds: num("HERMES_MAX_TOOL_ROUNDS"),
		TurnTimeout:   dur("HERMES_TURN_TIMEOUT"),
		ShutdownGrace: dur("HERMES_SHUTDOWN_GRACE"),
		ReviewEvery:   count("HERMES_REVIEW_EVERY"),
		SweepEvery:    count("HERMES_SWEEP_EVERY"),
		DatabaseURL:   strings.TrimSpace(v["HERMES_DATABASE_URL"]),
	}
	if msg := checkDatabaseURL(c.DatabaseURL); msg != "" {
		bad("HERMES_DATABASE_URL", "%s", msg)
	}
	c.ContextTokens = num("HERMES_CONTEXT_TOKENS")
	c.ToolResultLimit = count("HERMES_TOOL_RESULT_LIMIT")
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		bad("HERMES_HTTP_ADDR", "want host:port, got %q", c.HTTPAddr)
	}
	if c.TelegramWebhookURL != "" {
		if c.TelegramWebhookListen == "" {
			bad("TELEGRAM_WEBHOOK_LISTEN", "required when TELEGRAM_WEBHOOK_URL is set (the webhook gets its own listener)")
		} else if c.TelegramWebhookListen == c.HTTPAddr {
			bad("TELEGRAM_WEBHOOK_LISTEN", "must differ from HERMES_HTTP_ADDR: the admin listener never faces the internet")
		}
		if c.TelegramWebhookSecret == "" {
			bad("TELEGRAM_WEBHOOK_SECRET", "required when TELEGRAM_WEBHOOK_URL is set")
		}
	}
	if c.TTSProvider == "elevenlabs" && c.ElevenLabsKey == "" {
		bad("ELEVENLABS_API_KEY", "required when HERMES_TTS_PROVIDER=elevenlabs")
	}
	if c.TTSProvider == "openai" && c.TTSBaseURL == "" {
		c.TTSBaseURL = c.ModelBaseURL
		if c.TTSBaseURL == "" {
			bad("HERMES_TTS_BASE_URL", "required when HERMES_TTS_PROVIDER=openai and OPENAI_BASE_URL is unset")
		}
	}
	if c.STTProvider == "openai" && c.STTBaseURL == "" {
		c.STTBaseURL = c.ModelBaseURL
		if c.STTBaseURL == "" {
			bad("HERMES_STT_BASE_URL", "required when HERMES_STT_PROVIDER=openai and OPENAI_BASE_URL is unset")
		}
	}
	for _, u := range c.AdminUsers {
		// Only a platform vouches for who a user is: a web chat id is
		// whatever the browser says, so it cannot be an admin.
		p, id, ok := strings.Cut(u, ":")
		if !ok || (p != "telegram" && p != "discord") || id == "" || strings.ContainsAny(id, ": ") {
			bad("HERMES_ADMIN_USERS", "want telegram:<user id> or discord:<user id>, got %q", u)
		}
	}
	if !c.Loopback() && c.APIToken == "" {
		bad("HERMES_API_TOKEN", "required when HERMES_HTTP_ADDR (%s) is not a loopback address", c.HTTPAddr)
	}
	c.Tools = parseTools(v, bad)
	c.Cluster = parseCluster(v, bad)
	checkCluster(c, bad)
	c.Media = parseMedia(v, bad)
	if c.ModelBaseURL != "" && c.Model == "" {
		c.Model = "gpt-4o-mini"
	}
	return c, errors.Join(errs...)
}

// Loopback reports whether the HTTP listener binds to loopback only, where
// the local user is trusted.
func (c Config) Loopback() bool {
	host, _, err := net.SplitHostPort(c.HTTPAddr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Offline reports whether no model endpoint is configured.
func (c Config) Offline() bool { return c.ModelBaseURL == "" && len(c.Models) == 0 }

// Redacted returns the effective settings as sorted "KEY=value" lines with
// secrets masked, for `hermesd doctor` and start-up logs.
func (c Config) Redacted() []string {
	vals := map[string]string{
		"HERMES_HOME": c.Home, "HERMES_HTTP_ADDR": c.HTTPAddr, "HERMES_API_TOKEN": c.APIToken,
		"OPENAI_BASE_URL": c.ModelBaseURL, "OPENAI_API_KEY": c.ModelAPIKey, "HERMES_MODEL": c.Model,
		"TELEGRAM_BOT_TOKEN": c.TelegramToken, "TELEGRAM_API_URL": c.TelegramAPIURL,
		"TELEGRAM_WEBHOOK_URL": c.TelegramWebhookURL, "TELEGRAM_WEBHOOK_SECRET": c.TelegramWebhookSecret,
		"DISCORD_BOT_TOKEN": c.DiscordToken, "DISCORD_API_URL": c.DiscordAPIURL,
		"HERMES_TTS_PROVIDER": c.TTSProvider, "ELEVENLABS_API_KEY": c.ElevenLabsKey,
		"HERMES_STT_PROVIDER": c.STTProvider, "HERMES_BUSY_POLICY": c.BusyPolicy,
		// The group switches, so doctor shows why a group is (not) answered.
		"TELEGRAM_REQUIRE_MENTION":         onOff(c.TelegramRequireMention),
		"TELEGRAM_FREE_RESPONSE_CHATS":     strings.Join(c.TelegramFreeResponseChats, ","),
		"TELEGRAM_GROUP_SESSIONS_PER_USER": onOff(c.TelegramGroupSessionsPerUser),
		"DISCORD_REQUIRE_MENTION":          onOff(c.DiscordRequireMention),
		"DISCORD_FREE_RESPONSE_CHANNELS":   strings.Join(c.DiscordFreeResponseChannels, ","),
		"DISCORD_AUTO_THREAD":              onOff(c.DiscordAutoThread),
		"DISCORD_NO_THREAD_CHANNELS":       strings.Join(c.DiscordNoThreadChannels, ","),
		"DISCORD_GROUP_SESSIONS_PER_USER":  onOff(c.DiscordGroupSessionsPerUser),
	}
	secret := map[string]bool{}
	for _, k := range keys {
		secret[k.name] = k.secret
	}
	var out []string
	for k, v := range vals {
		if secret[k] && v != "" {
			v = "(set, hidden)"
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
