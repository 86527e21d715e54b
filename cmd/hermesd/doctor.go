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
	doctorTools(w, cfg.Tools)
	if failed {
		return fmt.Errorf("hermesd cannot start; see the ✗ lines")
	}
	return nil
}

// doctorTools reports the tools that act: search, terminal and its
// sandbox, and the configured MCP servers (their health is on a running
// daemon's GET /api/mcp).
func doctorTools(w io.Writer, t config.Tools) {
	if t.SearchProvider == "none" {
		fmt.Fprintln(w, "• web_search: off (set HERMES_WEB_SEARCH_PROVIDER)")
	} else {
		fmt.Fprintf(w, "✓ web_search: %s\n", t.SearchProvider)
	}
	switch {
	case !t.Terminal:
		fmt.Fprintln(w, "• terminal: off (HERMES_TERMINAL=on enables it)")
	case t.TerminalSandbox == "off":
		fmt.Fprintln(w, "• terminal: on, without a sandbox (HERMES_TERMINAL_SANDBOX=off)")
	default:
		if p, err := exec.LookPath("bwrap"); err == nil {
			fmt.Fprintf(w, "✓ terminal: on, sandboxed by %s\n", p)
		} else if t.TerminalSandbox == "bwrap" {
			fmt.Fprintln(w, "✗ terminal: HERMES_TERMINAL_SANDBOX=bwrap but bwrap is missing: apt-get install bubblewrap")
		} else {
			fmt.Fprintln(w, "• terminal: on, without a sandbox: apt-get install bubblewrap")
		}
	}
	if len(t.MCPServers) == 0 {
		fmt.Fprintln(w, "• MCP servers: none (mcp_servers: in config.yaml)")
		return
	}
	for _, s := range t.MCPServers {
		what := s.URL
		if s.Command != "" {
			what = "stdio: " + s.Command
			if _, err := exec.LookPath(s.Command); err != nil {
				fmt.Fprintf(w, "✗ MCP server %s: command %q not found on PATH\n", s.Name, s.Command)
				continue
			}
		}
		fmt.Fprintf(w, "✓ MCP server %s (%s); its health: GET /api/mcp on the running daemon\n", s.Name, what)
	}
}
