package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hermesd/hermesd/config"
)

const reloadUsage = `Usage: hermesd reload

Asks the running daemon (POST /api/reload on HERMES_HTTP_ADDR, with
HERMES_API_TOKEN if set) to re-read config.yaml, .env and its environment, as
SIGHUP does. Allowlists, the TTS provider and voice, and the log level change
live, without dropping sessions; other changes are listed as needing a
restart.
`

func reload(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
			fmt.Fprint(w, reloadUsage)
			return nil
		}
		return usageError{"reload takes no arguments"}
	}
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w (the daemon would refuse it too)", err)
	}
	var out struct {
		Applied       []string `json:"applied"`
		RestartNeeded []string `json:"restart_needed"`
	}
	if err := apiCall(ctx, cfg, http.MethodPost, "/api/reload", &out); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	switch {
	case len(out.Applied) == 0 && len(out.RestartNeeded) == 0:
		fmt.Fprintln(w, "reloaded: nothing changed")
	case len(out.Applied) > 0:
		fmt.Fprintf(w, "reloaded: applied %s\n", strings.Join(out.Applied, ", "))
	}
	if len(out.RestartNeeded) > 0 {
		fmt.Fprintf(w, "restart hermesd to apply: %s\n", strings.Join(out.RestartNeeded, ", "))
	}
	return nil
}
