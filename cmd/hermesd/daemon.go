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
	"strings"
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
	level := new(slog.LevelVar)
	level.Set(daemon.ParseLevel(cfg.LogLevel))
	log := newLogger(stderr, cfg, level)
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on HERMES_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	load := func() (config.Config, error) { return config.Load(env) }
	d, err := daemon.New(ctx, cfg, log, daemon.Options{Load: load, LogLevel: level})
	if err != nil {
		ln.Close()
		return err
	}
	log.Info("hermesd started", "version", versionString(), "home", cfg.Home, "model", modelLabel(cfg),
		"telegram", cfg.TelegramToken != "", "discord", cfg.DiscordToken != "", "tts", cfg.TTSProvider, "stt", cfg.STTProvider)

	// SIGHUP re-reads config.yaml, .env and the environment and applies
	// what can change live (as POST /api/reload does).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading the configuration")
				next, err := load()
				if err != nil {
					log.Error("reload: the configuration does not load; keeping the running one", "err", err)
					continue
				}
				if _, _, err := d.Reload(next); err != nil {
					log.Error("reload failed", "err", err)
				}
			}
		}
	}()
	return d.Serve(ctx, ln)
}

func modelLabel(cfg config.Config) string {
	if cfg.Offline() {
		return "offline assistant"
	}
	if len(cfg.Models) > 1 {
		names := make([]string, 0, len(cfg.Models))
		for _, m := range cfg.Models {
			names = append(names, m.Name)
		}
		return strings.Join(names, ", ")
	}
	return cfg.Model
}
