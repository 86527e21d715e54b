package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/store"
)

// doctor reports what is installed and configured, and what to do about
// anything missing. It fails only when the daemon could not start.
func doctor(ctx context.Context, w io.Writer, env func(string) (string, bool)) error {
	fmt.Fprintln(w, versionString())
	cfg, err := config.Load(env)
	if err != nil {
		fmt.Fprintf(w, "✗ configuration: %v\n", err)
		return fmt.Errorf("configuration is invalid")
	}
	fmt.Fprintln(w, "✓ configuration is valid:")
	for _, l := range cfg.Redacted() {
		fmt.Fprintln(w, "    "+l)
	}
	failed := false
	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		fmt.Fprintf(w, "✗ HERMES_HOME %s: %v\n", cfg.Home, err)
		failed = true
	} else {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := store.Open(sctx, filepath.Join(cfg.Home, "hermesd.db"))
		cancel()
		if err != nil {
			fmt.Fprintf(w, "✗ store: %v\n", err)
			failed = true
		} else {
			fmt.Fprintf(w, "✓ store %s opens (schema v%d)\n", filepath.Join(cfg.Home, "hermesd.db"), store.SchemaVersion())
			st.Close()
		}
	}
	for _, t := range []struct{ bin, pkg, why string }{
		{"espeak-ng", "espeak-ng", "offline speech (HERMES_TTS_PROVIDER=espeak)"},
		{"lame", "lame", "MP3 voice replies for the web chat"},
		{"opusinfo", "opus-tools", "optional: only the tests use it"},
	} {
		if p, err := exec.LookPath(t.bin); err == nil {
			fmt.Fprintf(w, "✓ %s (%s) for %s\n", t.bin, p, t.why)
		} else {
			fmt.Fprintf(w, "✗ %s is missing, needed for %s: apt-get install %s\n", t.bin, t.why, t.pkg)
		}
	}
	if cfg.Offline() {
		fmt.Fprintln(w, "• model: the offline assistant (set OPENAI_BASE_URL, OPENAI_API_KEY, HERMES_MODEL for a real model)")
	} else {
		fmt.Fprintf(w, "• model: %s at %s\n", cfg.Model, cfg.ModelBaseURL)
	}
	for _, p := range []struct {
		name, token string
		allowed     []string
	}{{"telegram", cfg.TelegramToken, cfg.TelegramAllowed}, {"discord", cfg.DiscordToken, cfg.DiscordAllowed}} {
		if p.token == "" {
			fmt.Fprintf(w, "• %s: not configured (token unset)\n", p.name)
			continue
		}
		who := "pairing only"
		if len(p.allowed) > 0 {
			who = "allowed: " + strings.Join(p.allowed, ",")
		}
		fmt.Fprintf(w, "✓ %s: configured (%s)\n", p.name, who)
	}
	fmt.Fprintf(w, "• web chat: http://%s/\n", cfg.HTTPAddr)
	if failed {
		return fmt.Errorf("hermesd cannot start; see the ✗ lines")
	}
	return nil
}
