package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hermesd/hermesd/config"
)

// apiGet fetches path from a running daemon's API into v.
func apiGet(ctx context.Context, env func(string) (string, bool), path string, v any) error {
	cfg, err := config.Load(env)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return apiCall(ctx, cfg, http.MethodGet, path, v)
}

// apiCall sends method path to the running daemon cfg describes, with its
// API token if one is set, and decodes the JSON answer into v.
func apiCall(ctx context.Context, cfg config.Config, method, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	base, err := daemonURL(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return err
	}
	if cfg.APIToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIToken)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is hermesd running on %s? %w", cfg.HTTPAddr, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return fmt.Errorf("%s %s: %s: %s", method, path, res.Status, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(io.LimitReader(res.Body, 16<<20)).Decode(v)
}

type sessionsPage struct {
	Total    int `json:"total"`
	Sessions []struct {
		Key        string    `json:"key"`
		Platform   string    `json:"platform"`
		LastActive time.Time `json:"last_active"`
	} `json:"sessions"`
}

func sessions(ctx context.Context, args []string, w io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	fs.SetOutput(w)
	search := fs.String("search", "", "only sessions whose key contains this")
	limit := fs.Int("limit", 50, "how many to show")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	var page sessionsPage
	q := url.Values{"search": {*search}, "limit": {fmt.Sprint(*limit)}}
	if err := apiGet(ctx, env, "/api/sessions?"+q.Encode(), &page); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tPLATFORM\tLAST ACTIVE")
	for _, s := range page.Sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s ago\n", s.Key, s.Platform, time.Since(s.LastActive).Round(time.Second))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d live sessions\n", page.Total)
	return nil
}
