package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/hermesd/hermesd/audio"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/store"
)

const doctorUsage = `Usage: hermesd doctor [-offline] [-timeout d]

Checks the installation and the configuration, and probes what they name:
every configured model's endpoint (GET /models, and that it lists the
model), each configured platform's identity (Telegram getMe, Discord
/users/@me), the speech tools (espeak-ng speaks, lame encodes) and pdftotext
(PDFs sent in a chat). Every ✗ line says what to do. It exits 1 when a check
fails.

  -offline     skip the network probes (tools and the store are still checked)
  -timeout d   how long one probe may take (default 10s)

Examples:
  hermesd doctor
  hermesd doctor -offline
`

// doctor reports what is installed and configured, probes it, and says what
// to do about anything that fails. It fails when any check fails.
func doctor(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprint(fs.Output(), doctorUsage) }
	offline := fs.Bool("offline", false, "skip the network probes")
	timeout := fs.Duration("timeout", probeTimeout, "how long one probe may take")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("doctor takes no arguments, got %q", fs.Args())}
	}
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
	failed := 0
	fail := func(format string, args ...any) {
		failed++
		fmt.Fprintf(w, "✗ "+format+"\n", args...)
	}
	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		fail("HERMES_HOME %s: %v", cfg.Home, err)
	} else {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := store.Open(sctx, cfg.Database())
		cancel()
		if err != nil {
			fail("store: %v", err)
		} else {
			fmt.Fprintf(w, "✓ store %s opens (schema v%d)\n", st.Path(), st.SchemaVersion())
			st.Close()
		}
	}

	p := newProber(*timeout)
	failed += doctorSpeech(ctx, w, p, cfg)
	doctorMedia(w, cfg.Media)
	if _, err := exec.LookPath("opusinfo"); err == nil {
		fmt.Fprintln(w, "✓ opusinfo (opus-tools): only the tests use it")
	} else {
		fmt.Fprintln(w, "• opusinfo is missing: only the tests use it (apt-get install opus-tools)")
	}

	if *offline {
		fmt.Fprintln(w, "• network probes skipped (-offline)")
	}
	switch {
	case cfg.Offline():
		fmt.Fprintln(w, "• model: the offline assistant (set OPENAI_BASE_URL, OPENAI_API_KEY, HERMES_MODEL for a real model)")
	case *offline:
		for _, m := range cfg.Models {
			fmt.Fprintf(w, "• model: %s at %s (not probed)%s\n", m.Model, m.BaseURL, catalogName(m))
		}
	default:
		// Every model of the catalog: a fallback that does not answer is
		// found now, not during the primary's outage.
		for _, m := range cfg.Models {
			hint := "HERMES_MODEL"
			if m.Name != cfg.Model || len(cfg.Models) > 1 {
				hint = "models." + m.Name + ".model"
			}
			models, err := p.Models(ctx, m.BaseURL, m.APIKey)
			switch {
			case err != nil:
				fail("model endpoint %s: %v%s", m.BaseURL, err, catalogName(m))
			case len(models) > 0 && !slices.Contains(models, m.Model):
				fail("model endpoint %s answers, but has no model %q (%s); it has: %s", m.BaseURL, m.Model, hint, listSome(models, 10))
			default:
				fmt.Fprintf(w, "✓ model endpoint %s answers; model %s (%d models listed)%s\n", m.BaseURL, m.Model, len(models), catalogName(m))
			}
		}
	}

	type platformCheck struct {
		name, token string
		allowed     []string
		probe       func() (string, error)
	}
	for _, pc := range []platformCheck{
		{"telegram", cfg.TelegramToken, cfg.TelegramAllowed, func() (string, error) {
			n, err := p.TelegramBot(ctx, cfg.TelegramAPIURL, cfg.TelegramToken)
			return "@" + n, err
		}},
		{"discord", cfg.DiscordToken, cfg.DiscordAllowed, func() (string, error) {
			return p.DiscordBot(ctx, cfg.DiscordAPIURL, cfg.DiscordToken)
		}},
	} {
		if pc.token == "" {
			fmt.Fprintf(w, "• %s: not configured (token unset)\n", pc.name)
			continue
		}
		who := "pairing only"
		if len(pc.allowed) > 0 {
			who = "allowed: " + strings.Join(pc.allowed, ",")
		}
		if *offline {
			fmt.Fprintf(w, "• %s: configured (%s), token not probed\n", pc.name, who)
			continue
		}
		name, err := pc.probe()
		if err != nil {
			fail("%s: %v", pc.name, err)
			continue
		}
		fmt.Fprintf(w, "✓ %s: the token works: bot %s (%s)\n", pc.name, name, who)
	}
	fmt.Fprintf(w, "• web chat: http://%s/\n", cfg.HTTPAddr)
	doctorTools(w, cfg.Tools)
	if failed > 0 {
		return fmt.Errorf("%d check(s) failed; see the ✗ lines", failed)
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

// doctorSpeech checks espeak-ng (when it is the TTS provider) by speaking,
// and lame by encoding; it returns how many checks failed.
func doctorSpeech(ctx context.Context, w io.Writer, p *prober, cfg config.Config) int {
	failed := 0
	pcm := audio.PCM{Samples: make([]int16, 1600), Rate: 16000} // 0.1 s of silence

	if cfg.TTSProvider == "espeak" {
		if _, err := exec.LookPath("espeak-ng"); err != nil {
			fmt.Fprintln(w, "✗ espeak-ng is missing, needed for offline speech (HERMES_TTS_PROVIDER=espeak): apt-get install espeak-ng")
			failed++
		} else if out, err := p.Espeak(ctx, cfg.TTSVoice); err != nil {
			fmt.Fprintf(w, "✗ espeak-ng is installed but does not speak: %v\n", err)
			failed++
		} else {
			pcm = out
			fmt.Fprintln(w, "✓ espeak-ng speaks (offline speech, HERMES_TTS_PROVIDER=espeak)")
		}
	} else {
		fmt.Fprintf(w, "• espeak-ng not used (HERMES_TTS_PROVIDER=%s)\n", cfg.TTSProvider)
	}
	if cfg.TTSProvider == "none" {
		fmt.Fprintln(w, "• lame not used (HERMES_TTS_PROVIDER=none)")
		return failed
	}
	if _, err := exec.LookPath("lame"); err != nil {
		fmt.Fprintln(w, "✗ lame is missing, needed for MP3 voice replies in the web chat: apt-get install lame")
		return failed + 1
	}
	if err := p.Lame(ctx, pcm); err != nil {
		fmt.Fprintf(w, "✗ lame is installed but does not encode: %v\n", err)
		return failed + 1
	}
	fmt.Fprintln(w, "✓ lame encodes MP3 (voice replies in the web chat)")
	return failed
}

// listSome joins the first n of list, saying how many more there are.
func listSome(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:n], ", ") + fmt.Sprintf(" and %d more", len(list)-n)
}

// catalogName names a catalog entry whose name differs from its provider
// id, for doctor's lines.
func catalogName(m config.ModelEntry) string {
	if m.Name == m.Model {
		return ""
	}
	return fmt.Sprintf(" [%s]", m.Name)
}
