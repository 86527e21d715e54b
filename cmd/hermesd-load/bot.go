package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/daemon"
)

// botSpec tells a bot where the fakes of the driver listen.
type botSpec struct {
	platform, target string
	apiURL, token    string
	modelURL         string // …/v1
	pacing           bool
	logLevel         string
	cpuProfile       string // the child's -cpuprofile ("" for none)
	// env is hermesd settings on top of the ones runHermesd sets: the
	// HTTP address, the store, the webhook, the cluster.
	env map[string]string
}

// runBot runs the bot spec names until ctx ends, logging through log.
func runBot(ctx context.Context, spec botSpec, log *slog.Logger) error {
	switch {
	case spec.target == "hermesd":
		return runHermesd(ctx, spec, log)
	case spec.platform == "discord":
		return runDiscordEcho(ctx, spec, log)
	default:
		return runTelegramEcho(ctx, spec, log)
	}
}

// runHermesd builds and serves hermesd with daemon.New and Serve exactly as
// the binary does (its HTTP listener too: readiness, /api/cluster),
// configured through the environment contract (config.Load), with a
// temporary HERMES_HOME and spec.env on top, and runs it until ctx ends.
func runHermesd(ctx context.Context, spec botSpec, log *slog.Logger) error {
	home, err := os.MkdirTemp("", "hermesd-load-")
	if err != nil {
		return fmt.Errorf("create a temporary HERMES_HOME: %w", err)
	}
	defer os.RemoveAll(home)
	env := map[string]string{
		"HERMES_HOME":           home,
		"HERMES_LOG_LEVEL":      spec.logLevel,
		"HERMES_TTS_PROVIDER":   "none",
		"HERMES_SHUTDOWN_GRACE": "2s",
		"OPENAI_BASE_URL":       spec.modelURL,
		"HERMES_MODEL":          "load",
	}
	rate := "off"
	if spec.pacing {
		rate = "on"
	}
	if spec.platform == "discord" {
		env["DISCORD_BOT_TOKEN"], env["DISCORD_API_URL"], env["DISCORD_ALLOWED_USERS"] = spec.token, spec.apiURL, "*"
	} else {
		env["TELEGRAM_BOT_TOKEN"], env["TELEGRAM_API_URL"], env["TELEGRAM_ALLOWED_USERS"] = spec.token, spec.apiURL, "*"
		env["TELEGRAM_RATE_LIMIT"] = rate
	}
	maps.Copy(env, spec.env)
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return fmt.Errorf("hermesd configuration: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on HERMES_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	d, err := daemon.New(ctx, cfg, log, daemon.Options{})
	if err != nil {
		ln.Close()
		return fmt.Errorf("start hermesd: %w", err)
	}
	// Serve returns once ctx ends and hermesd closed (within its shutdown
	// grace), or when a cluster member must leave.
	if err := d.Serve(ctx, ln); err != nil {
		return fmt.Errorf("hermesd: %w", err)
	}
	return nil
}

// botLogger returns the logger a bot gets: slog text lines, as cmd/hermesd
// writes them, at level, to a temporary file (the cost of logging is part
// of the load), counted by counter. The returned func closes and removes
// the file.
func botLogger(level string, counter *logCounter) (*slog.Logger, func(), error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("log level %q: %w", level, err)
	}
	f, err := os.CreateTemp("", "hermesd-load-*.log")
	if err != nil {
		return nil, nil, fmt.Errorf("create the bot's log: %w", err)
	}
	h := slog.NewTextHandler(f, &slog.HandlerOptions{Level: l})
	done := func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	return slog.New(counter.wrap(h)), done, nil
}
