// Command hermesd runs the hermesd daemon and inspects a running one.
//
//	hermesd                 run the daemon (same as "hermesd run")
//	hermesd version         print the version
//	hermesd doctor          check the installation and configuration
//	hermesd status|sessions|tree   inspect a running daemon
//	hermesd pairing ...     approve or revoke users of Telegram and Discord
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "hermesd:", err)
		}
		os.Exit(exitCode(err))
	}
}

// usageError is a mistake in the command line; it exits with 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (try: hermesd help)" }

// flagError makes a flag-parsing failure a usage error (exit 2); -h stays
// flag.ErrHelp. The flag package has already printed what was wrong.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err.Error()}
}

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

const usage = `hermesd — an actor-model runtime for AI chat agents

Usage:
  hermesd [run]                  run the daemon (web chat on HERMES_HTTP_ADDR, default 127.0.0.1:7600)
  hermesd version                print the version
  hermesd setup                  ask for the model, Telegram and Discord, check them, write the config
  hermesd config get|set|validate   read, change or check single settings
  hermesd doctor [-offline]      check what is installed and configured, probing endpoints and tokens
  hermesd status                 summary of a running daemon
  hermesd sessions [-search s]   live sessions of a running daemon
  hermesd tree [session key]     the live actor tree
  hermesd pairing list|approve|revoke <platform> [code|user]
  hermesd health [-ready]        exit 0 when a running daemon answers /healthz (/readyz)
  hermesd service install|uninstall   a systemd user unit for this binary
  hermesd reload                 re-read config.yaml and .env in a running daemon (as SIGHUP does)
  hermesd backup FILE            a consistent copy of the database, skills and config.yaml (while running)
  hermesd restore FILE           restore a backup into HERMES_HOME (hermesd stopped)
  hermesd export [-format jsonl|md] SESSION   a conversation's messages

Configuration is the environment (see docs/configuration.md) plus the optional
$HERMES_HOME/config.yaml and $HERMES_HOME/.env; the environment wins.
`

// run dispatches a subcommand. Everything it needs from the process comes
// in as arguments, so tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	cmd := "run"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runDaemon(ctx, args, stderr, env)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionString())
		return nil
	case "doctor":
		return doctor(ctx, args, stdout, env)
	case "status":
		return status(ctx, args, stdout, env)
	case "sessions":
		return sessions(ctx, args, stdout, env)
	case "tree":
		return tree(ctx, args, stdout, env)
	case "pairing":
		return pairing(ctx, args, stdout, env)
	case "setup":
		return setup(ctx, args, stdin, stdout, env)
	case "config":
		return configCmd(ctx, args, stdout, env)
	case "health":
		return health(ctx, args, stdout, env)
	case "service":
		return service(args, stdout, env)
	case "reload":
		return reload(ctx, args, stdout, env)
	case "backup":
		return backup(ctx, args, stdout, env)
	case "restore":
		return restore(ctx, args, stdout, env)
	case "export":
		return export(ctx, args, stdout, env)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}
