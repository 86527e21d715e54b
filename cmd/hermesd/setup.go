package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermesd/hermesd/config"
)

const setupUsage = `Usage: hermesd setup [flags]

Asks for the model endpoint, the Telegram and Discord bot tokens and your own
user id on each (for the allowlist), checks each against its service, and
writes HERMES_HOME/config.yaml and HERMES_HOME/.env (secrets, mode 0600).
Press Enter to keep the value shown in [brackets]; "-" clears it.

With -non-interactive it asks nothing and takes the flags (for scripts);
settings without a flag keep their current value.

Flags:
  -model-url url        OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1
                        ("-" for the built-in offline assistant)
  -model-key key        its API key
  -model name           the model to use (checked against GET /models)
  -telegram-token t     bot token from @BotFather
  -telegram-user id     your numeric Telegram user id, added to the allowlist
  -discord-token t      bot token from the Discord developer portal
  -discord-user id      your Discord user id, added to the allowlist
  -non-interactive      ask nothing; use the flags
  -skip-checks          write without probing (for a machine without network)
  -timeout d            how long one check may take (default 10s)

Examples:
  hermesd setup
  hermesd setup -non-interactive -model-url http://127.0.0.1:11434/v1 -model llama3.1 \
      -telegram-token "$TOKEN" -telegram-user 12345678
`

// setupAnswers are the wizard's inputs, from flags or prompts.
type setupAnswers struct {
	modelURL, modelKey, model   string
	telegramToken, telegramUser string
	discordToken, discordUser   string
	nonInteractive, skipChecks  bool
	timeout                     time.Duration
	flagsSet                    map[string]bool
}

// setup is the configuration wizard: it asks (or takes flags), checks each
// answer against the service it names, and writes config.yaml and .env only
// once everything checked out.
func setup(ctx context.Context, args []string, stdin io.Reader, w io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprint(fs.Output(), setupUsage) }
	var a setupAnswers
	fs.StringVar(&a.modelURL, "model-url", "", "")
	fs.StringVar(&a.modelKey, "model-key", "", "")
	fs.StringVar(&a.model, "model", "", "")
	fs.StringVar(&a.telegramToken, "telegram-token", "", "")
	fs.StringVar(&a.telegramUser, "telegram-user", "", "")
	fs.StringVar(&a.discordToken, "discord-token", "", "")
	fs.StringVar(&a.discordUser, "discord-user", "", "")
	fs.BoolVar(&a.nonInteractive, "non-interactive", false, "")
	fs.BoolVar(&a.skipChecks, "skip-checks", false, "")
	fs.DurationVar(&a.timeout, "timeout", probeTimeout, "")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("setup takes no arguments, got %q", fs.Args())}
	}
	a.flagsSet = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { a.flagsSet[f.Name] = true })

	home, err := config.Home(env)
	if err != nil {
		return err
	}
	cur, err := config.Load(env)
	if err != nil {
		// A broken file must not stop the tool meant to fix it: start from
		// the defaults and say so.
		fmt.Fprintf(w, "! the current configuration does not load (%v); starting from the defaults\n", err)
		cur, err = config.Load(func(k string) (string, bool) {
			if k == "HERMES_HOME" {
				return home, true
			}
			return "", false
		})
		if err != nil {
			cur = config.Config{Home: home, TelegramAPIURL: "https://api.telegram.org", DiscordAPIURL: "https://discord.com"}
		}
	}
	s := &setupRun{a: a, w: w, in: bufio.NewScanner(stdin), p: newProber(a.timeout), ctx: ctx, cur: cur, set: map[string]string{}}
	fmt.Fprintf(w, "hermesd setup: writing to %s\n", home)
	if err := s.model(); err != nil {
		return err
	}
	if err := s.telegram(); err != nil {
		return err
	}
	if err := s.discord(); err != nil {
		return err
	}
	if _, err := config.LoadWith(env, s.set); err != nil {
		return fmt.Errorf("the answers do not make a valid configuration, nothing written: %w", err)
	}
	if err := config.Update(home, s.set); err != nil {
		return err
	}
	var files []string
	for _, f := range []struct{ name, what string }{{config.ConfigFile, "settings"}, {config.EnvFile, "secrets, mode 0600"}} {
		if p := filepath.Join(home, f.name); fileExists(p) {
			files = append(files, p+" ("+f.what+")")
		}
	}
	if len(files) == 0 {
		fmt.Fprintln(w, "• nothing to write: every setting is at its default (web chat, offline assistant)")
	} else {
		fmt.Fprintf(w, "✓ saved: %s\n", strings.Join(files, ", "))
	}
	for _, k := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "TELEGRAM_BOT_TOKEN", "TELEGRAM_ALLOWED_USERS", "DISCORD_BOT_TOKEN", "DISCORD_ALLOWED_USERS"} {
		if _, inEnv := env(k); inEnv {
			fmt.Fprintf(w, "! %s is also set in the environment, which wins over the files\n", k)
		}
	}
	fmt.Fprintln(w, "Next: hermesd doctor, then hermesd run (or hermesd service install).")
	return nil
}

// setupRun holds one run of the wizard.
type setupRun struct {
	a   setupAnswers
	w   io.Writer
	in  *bufio.Scanner
	p   *prober
	ctx context.Context
	cur config.Config
	set map[string]string
}

// errNoInput ends an interactive setup whose input ran out mid-question.
var errNoInput = errors.New("setup: input ended before every question was answered; nothing written")

// ask prints question with its current value and returns the answer: the
// current value on an empty line, "" for "-". In -non-interactive mode the
// flag's value (or the current one) is taken without asking.
func (s *setupRun) ask(flagName, question, current string, secret bool) (string, error) {
	if s.a.flagsSet[flagName] {
		return clearDash(s.flagValue(flagName)), nil
	}
	if s.a.nonInteractive {
		return current, nil
	}
	shown := current
	if secret && current != "" {
		shown = "set, hidden"
	}
	if shown != "" {
		fmt.Fprintf(s.w, "%s [%s]: ", question, shown)
	} else {
		fmt.Fprintf(s.w, "%s: ", question)
	}
	if !s.in.Scan() {
		fmt.Fprintln(s.w)
		if err := s.in.Err(); err != nil {
			return "", fmt.Errorf("setup: read answer: %w", err)
		}
		return "", errNoInput
	}
	ans := strings.TrimSpace(s.in.Text())
	if ans == "" {
		return current, nil
	}
	return clearDash(ans), nil
}

func clearDash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func (s *setupRun) flagValue(name string) string {
	switch name {
	case "model-url":
		return s.a.modelURL
	case "model-key":
		return s.a.modelKey
	case "model":
		return s.a.model
	case "telegram-token":
		return s.a.telegramToken
	case "telegram-user":
		return s.a.telegramUser
	case "discord-token":
		return s.a.discordToken
	case "discord-user":
		return s.a.discordUser
	}
	return ""
}

// retry reports whether to ask again after a failed check: only when a
// person is answering and the value did not come from a flag.
func (s *setupRun) retry(flagName string) bool {
	return !s.a.nonInteractive && !s.a.flagsSet[flagName]
}

// model asks for the endpoint and key, lists the endpoint's models and
// asks which one to use.
func (s *setupRun) model() error {
	fmt.Fprintln(s.w, "\n— Model: an OpenAI-compatible endpoint (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama); empty for the built-in offline assistant")
	for {
		u, err := s.ask("model-url", "Endpoint base URL", s.cur.ModelBaseURL, false)
		if err != nil {
			return err
		}
		if u == "" {
			fmt.Fprintln(s.w, "• no endpoint: hermesd answers with the offline assistant")
			s.set["OPENAI_BASE_URL"], s.set["OPENAI_API_KEY"], s.set["HERMES_MODEL"] = "", "", ""
			return nil
		}
		key, err := s.ask("model-key", "API key (empty if it needs none)", s.cur.ModelAPIKey, true)
		if err != nil {
			return err
		}
		var models []string
		if !s.a.skipChecks {
			models, err = s.p.Models(s.ctx, u, key)
			if err != nil {
				fmt.Fprintf(s.w, "✗ %s: %v\n", u, err)
				if s.retry("model-url") || s.retry("model-key") {
					continue
				}
				return fmt.Errorf("model endpoint %s: %w; nothing written", u, err)
			}
			fmt.Fprintf(s.w, "✓ %s answers; models: %s\n", u, orNone(listSome(models, 20)))
		}
		def := s.cur.Model
		if s.cur.ModelBaseURL != u || def == "" || len(models) > 0 && !slices.Contains(models, def) {
			def = ""
			if len(models) > 0 {
				def = models[0]
			}
		}
		for {
			m, err := s.ask("model", "Model", def, false)
			if err != nil {
				return err
			}
			if m != "" && len(models) > 0 && !slices.Contains(models, m) {
				fmt.Fprintf(s.w, "✗ the endpoint lists no model %q\n", m)
				if s.retry("model") {
					continue
				}
				return fmt.Errorf("model %q is not listed by %s; nothing written", m, u)
			}
			s.set["OPENAI_BASE_URL"], s.set["OPENAI_API_KEY"], s.set["HERMES_MODEL"] = u, key, m
			return nil
		}
	}
}

func (s *setupRun) telegram() error {
	fmt.Fprintln(s.w, "\n— Telegram: a bot token from @BotFather (/newbot); empty to leave Telegram off")
	for {
		tok, err := s.ask("telegram-token", "Telegram bot token", s.cur.TelegramToken, true)
		if err != nil {
			return err
		}
		if tok == "" {
			s.set["TELEGRAM_BOT_TOKEN"] = ""
			fmt.Fprintln(s.w, "• Telegram off")
			return nil
		}
		if !s.a.skipChecks {
			name, err := s.p.TelegramBot(s.ctx, s.cur.TelegramAPIURL, tok)
			if err != nil {
				fmt.Fprintf(s.w, "✗ %v\n", err)
				if s.retry("telegram-token") {
					continue
				}
				return fmt.Errorf("telegram: %w; nothing written", err)
			}
			fmt.Fprintf(s.w, "✓ the token works: this is @%s\n", name)
		}
		s.set["TELEGRAM_BOT_TOKEN"] = tok
		break
	}
	allowed, err := s.user("telegram-user", "Your Telegram user id (a number; @userinfobot tells you), added to the allowlist", s.cur.TelegramAllowed)
	if err != nil {
		return err
	}
	s.set["TELEGRAM_ALLOWED_USERS"] = allowed
	return nil
}

func (s *setupRun) discord() error {
	fmt.Fprintln(s.w, "\n— Discord: a bot token from the developer portal (Applications → Bot → Reset Token); empty to leave Discord off")
	for {
		tok, err := s.ask("discord-token", "Discord bot token", s.cur.DiscordToken, true)
		if err != nil {
			return err
		}
		if tok == "" {
			s.set["DISCORD_BOT_TOKEN"] = ""
			fmt.Fprintln(s.w, "• Discord off")
			return nil
		}
		if !s.a.skipChecks {
			name, err := s.p.DiscordBot(s.ctx, s.cur.DiscordAPIURL, tok)
			if err != nil {
				fmt.Fprintf(s.w, "✗ %v\n", err)
				if s.retry("discord-token") {
					continue
				}
				return fmt.Errorf("discord: %w; nothing written", err)
			}
			fmt.Fprintf(s.w, "✓ the token works: this is %s\n", name)
		}
		s.set["DISCORD_BOT_TOKEN"] = tok
		break
	}
	allowed, err := s.user("discord-user", "Your Discord user id (Developer Mode → right-click yourself → Copy User ID), added to the allowlist", s.cur.DiscordAllowed)
	if err != nil {
		return err
	}
	s.set["DISCORD_ALLOWED_USERS"] = allowed
	return nil
}

// user asks for the owner's id on a platform and returns the allowlist with
// it added (ids are numbers on both platforms).
func (s *setupRun) user(flagName, question string, current []string) (string, error) {
	for {
		id, err := s.ask(flagName, question+" (empty to skip)", "", false)
		if err != nil {
			return "", err
		}
		if id == "" {
			return strings.Join(current, ","), nil
		}
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			fmt.Fprintf(s.w, "✗ %q is not a user id (a number)\n", id)
			if s.retry(flagName) {
				continue
			}
			return "", fmt.Errorf("%s: %q is not a user id; nothing written", flagName, id)
		}
		if !slices.Contains(current, id) {
			current = append(slices.Clone(current), id)
		}
		fmt.Fprintf(s.w, "✓ allowlist: %s\n", strings.Join(current, ","))
		return strings.Join(current, ","), nil
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none listed)"
	}
	return s
}
