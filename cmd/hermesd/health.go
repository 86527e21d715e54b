package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hermesd/hermesd/config"
)

// health checks a running daemon's /healthz (or /readyz with -ready) and
// fails unless it answers 200: a container HEALTHCHECK that needs no curl
// in the image.
func health(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	path := "/healthz"
	switch {
	case len(args) == 1 && (args[0] == "-ready" || args[0] == "--ready"):
		path = "/readyz"
	case len(args) > 0:
		return usageError{"usage: hermesd health [-ready]"}
	}
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	base, err := daemonURL(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is hermesd running on %s? %w", cfg.HTTPAddr, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, res.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprint(w, string(body))
	return nil
}

// daemonURL is the base URL the CLI reaches the running daemon at, from
// HERMES_HTTP_ADDR: a listener bound to every address (":7600",
// "0.0.0.0:7600") is asked on the local one.
func daemonURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("HERMES_HTTP_ADDR: %w", err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
