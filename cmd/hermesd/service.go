package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermesd/hermesd/config"
)

const serviceUsage = `Usage:
  hermesd service install [-binary path]   write a systemd user unit that runs hermesd
  hermesd service uninstall                remove it

The unit is $XDG_CONFIG_HOME/systemd/user/hermesd.service (default
~/.config/systemd/user). It runs this binary (or -binary) with this
HERMES_HOME; everything else comes from HERMES_HOME/config.yaml and .env, so
no secret is written into the unit. install prints the systemctl and
loginctl commands to start it and keep it running after you log out.
`

const unitName = "hermesd.service"

func service(args []string, w io.Writer, env func(string) (string, bool)) error {
	if len(args) == 0 {
		return usageError{"service needs install or uninstall\n" + serviceUsage}
	}
	dir, err := unitDir(env)
	if err != nil {
		return err
	}
	unit := filepath.Join(dir, unitName)
	switch args[0] {
	case "install":
		fl := flag.NewFlagSet("service install", flag.ContinueOnError)
		fl.SetOutput(w)
		fl.Usage = func() { fmt.Fprint(fl.Output(), serviceUsage) }
		binary := fl.String("binary", "", "the hermesd binary the unit runs (default: this one)")
		if err := fl.Parse(args[1:]); err != nil {
			return flagError(err)
		}
		return installUnit(unit, *binary, w, env)
	case "uninstall":
		if len(args) != 1 {
			return usageError{"service uninstall takes no arguments"}
		}
		if err := os.Remove(unit); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no unit at %s: nothing to uninstall", unit)
		} else if err != nil {
			return fmt.Errorf("remove %s: %w", unit, err)
		}
		fmt.Fprintf(w, "removed %s\n", unit)
		fmt.Fprintln(w, "if it was running, stop it and let systemd forget it:")
		fmt.Fprintln(w, "  systemctl --user disable --now hermesd")
		fmt.Fprintln(w, "  systemctl --user daemon-reload")
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(w, serviceUsage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown service command %q\n%s", args[0], serviceUsage)}
}

// unitDir is where systemd looks for the user's own units.
func unitDir(env func(string) (string, bool)) (string, error) {
	if x, ok := env("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		return filepath.Join(x, "systemd", "user"), nil
	}
	home, ok := env("HOME")
	if !ok || home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("where do user units go? neither XDG_CONFIG_HOME nor HOME is set: %w", err)
		}
	}
	return filepath.Join(home, ".config", "systemd", "user"), nil
}

func installUnit(unit, binary string, w io.Writer, env func(string) (string, bool)) error {
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w (fix it first: the service would not start)", err)
	}
	if binary == "" {
		if binary, err = os.Executable(); err != nil {
			return fmt.Errorf("find this binary: %w (give -binary)", err)
		}
	}
	if binary, err = filepath.Abs(binary); err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(binary); err == nil {
		binary = resolved
	}
	if fi, err := os.Stat(binary); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", binary)
	}
	if strings.Contains(binary, string(filepath.Separator)+"go-build") {
		fmt.Fprintf(w, "! %s is a temporary 'go run' binary; build one that stays (scripts/run.sh writes bin/hermesd) and give -binary\n", binary)
	}
	home, err := filepath.Abs(cfg.Home)
	if err != nil {
		return err
	}
	text := unitText(binary, home, cfg.ShutdownGrace.Seconds()+20)
	if err := os.MkdirAll(filepath.Dir(unit), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(unit), err)
	}
	if err := os.WriteFile(unit, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", unit, err)
	}
	user, _ := env("USER")
	if user == "" {
		user = "$USER"
	}
	fmt.Fprintf(w, "wrote %s (runs %s with HERMES_HOME=%s)\n\n", unit, binary, home)
	fmt.Fprintln(w, "start it now and at every login:")
	fmt.Fprintln(w, "  systemctl --user daemon-reload")
	fmt.Fprintln(w, "  systemctl --user enable --now hermesd")
	fmt.Fprintln(w, "keep it running after you log out, and start it at boot (lingering):")
	fmt.Fprintf(w, "  sudo loginctl enable-linger %s\n", user)
	fmt.Fprintln(w, "then:")
	fmt.Fprintln(w, "  journalctl --user -u hermesd -f       # its log")
	fmt.Fprintln(w, "  systemctl --user reload hermesd       # re-read config.yaml and .env (SIGHUP)")
	return nil
}

// unitText is the systemd user unit for binary with HERMES_HOME=home.
func unitText(binary, home string, stopSeconds float64) string {
	return fmt.Sprintf(`# Written by 'hermesd service install'; 'hermesd service uninstall' removes it.
[Unit]
Description=hermesd: AI chat agents behind Telegram, Discord and a web chat
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=%s run
ExecReload=/bin/kill -HUP $MAINPID
Environment=%s
Restart=on-failure
RestartSec=5s
TimeoutStopSec=%.0fs

[Install]
WantedBy=default.target
`, systemdQuote(binary), systemdQuote("HERMES_HOME="+home), stopSeconds)
}

// systemdQuote writes s as one systemd word: '%' doubled (specifiers), and
// double-quoted with \ and " escaped when it holds spaces or quotes.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
