package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hermesd/hermesd/config"
)

const configUsage = `Usage:
  hermesd config get [-reveal] [KEY]   the effective value of KEY (all keys, with
                                       where each comes from, without KEY)
  hermesd config set KEY VALUE         write KEY to HERMES_HOME (secrets to .env,
                                       the rest to config.yaml); "" removes it
  hermesd config validate              load the configuration and report errors

KEY is an environment name (docs/configuration.md), in either case. Secrets
are shown as (set, hidden) unless -reveal is given. A running daemon picks up
what can change live on SIGHUP or 'hermesd reload'.

Examples:
  hermesd config get hermes_model
  hermesd config set TELEGRAM_ALLOWED_USERS 12345678,23456789
  hermesd config validate
`

func configCmd(_ context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	if len(args) == 0 {
		return usageError{"config needs get, set or validate\n" + configUsage}
	}
	switch verb, args := args[0], args[1:]; verb {
	case "get":
		return configGet(args, w, env)
	case "set":
		if len(args) != 2 {
			return usageError{"config set needs KEY and VALUE\n" + configUsage}
		}
		return configSet(strings.ToUpper(args[0]), args[1], w, env)
	case "validate":
		if len(args) != 0 {
			return usageError{"config validate takes no arguments"}
		}
		if _, err := config.Load(env); err != nil {
			return fmt.Errorf("configuration is invalid:\n%w", err)
		}
		fmt.Fprintln(w, "configuration ok")
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(w, configUsage)
		return nil
	default:
		return usageError{fmt.Sprintf("unknown config command %q\n%s", verb, configUsage)}
	}
}

func configGet(args []string, w io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("config get", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprint(fs.Output(), configUsage) }
	reveal := fs.Bool("reveal", false, "print secrets")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 1 {
		return usageError{"config get takes at most one KEY"}
	}
	settings, err := config.Resolve(env)
	if err != nil {
		return err
	}
	show := func(s config.Setting) string {
		if s.Secret && s.Value != "" && !*reveal {
			return "(set, hidden)"
		}
		return s.Value
	}
	if fs.NArg() == 1 {
		name := strings.ToUpper(fs.Arg(0))
		if !config.Known(name) {
			return usageError{fmt.Sprintf("unknown key %q (see docs/configuration.md)", fs.Arg(0))}
		}
		for _, s := range settings {
			if s.Name == name {
				fmt.Fprintln(w, show(s))
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tFROM")
	for _, s := range settings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, show(s), s.Source)
	}
	return tw.Flush()
}

func configSet(name, value string, w io.Writer, env func(string) (string, bool)) error {
	if !config.Known(name) || name == "HERMES_HOME" {
		return usageError{fmt.Sprintf("unknown key %q (HERMES_HOME comes only from the environment; see docs/configuration.md)", name)}
	}
	// Check first: a value that would stop the daemon is never written.
	if _, err := config.LoadWith(env, map[string]string{name: value}); err != nil {
		return fmt.Errorf("not written: %w", err)
	}
	home, err := config.Home(env)
	if err != nil {
		return err
	}
	if err := config.Update(home, map[string]string{name: value}); err != nil {
		return err
	}
	file := config.ConfigFile
	if config.IsSecret(name) {
		file = config.EnvFile
	}
	if value == "" {
		fmt.Fprintf(w, "removed %s from %s\n", name, home)
	} else {
		fmt.Fprintf(w, "set %s in %s/%s\n", name, home, file)
	}
	if _, inEnv := env(name); inEnv {
		fmt.Fprintf(w, "note: %s is also set in the environment, which wins over the files\n", name)
	}
	return nil
}
