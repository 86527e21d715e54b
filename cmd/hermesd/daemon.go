package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/daemon"
)

// runDaemon runs hermesd until ctx ends (SIGINT/SIGTERM), then shuts down
// cleanly and returns nil.
func runDaemon(ctx context.Context, args []string, stderr io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "validate the configuration and exit")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if *check {
		fmt.Fprintln(stderr, "configuration ok")
		return nil
	}
	log := newLogger(stderr, cfg.LogLevel)
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on HERMES_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	d, err := daemon.New(ctx, cfg, log, daemon.Options{})
	if err != nil {
		ln.Close()
		return err
	}
	log.Info("hermesd started", "version", versionString(), "home", cfg.Home, "model", modelLabel(cfg),
		"telegram", cfg.TelegramToken != "", "discord", cfg.DiscordToken != "", "tts", cfg.TTSProvider, "stt", cfg.STTProvider)
	stopHUP := reloadOnHUP(ctx, d, log)
	defer stopHUP()
	return d.Serve(ctx, ln)
}

func modelLabel(cfg config.Config) string {
	if cfg.Offline() {
		return "offline assistant"
	}
	return cfg.Model
}

// newLogger logs one line per event to w, as text.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// reloadOnHUP re-reads the MCP server list on SIGHUP until ctx ends or the
// returned function is called.
func reloadOnHUP(ctx context.Context, d *daemon.Daemon, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if err := d.ReloadMCP(); err != nil {
					log.Error("SIGHUP: reload MCP servers", "err", err)
				}
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
