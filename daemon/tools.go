package daemon

import (
	"fmt"
	"path/filepath"

	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/web"
	"github.com/hermesd/hermesd/tools/workspace"
)

// actingTools builds the tools that act on the world (web, workspace, MCP,
// terminal) from the configuration; each is offered only when configured.
func (d *Daemon) actingTools() ([]tools.Tool, error) {
	tc := d.cfg.Tools
	guard := web.Guard{AllowPrivate: tc.WebAllowPrivate, Allow: tc.WebAllow}
	ts := []tools.Tool{web.Fetch(web.FetchOptions{
		Client:   web.ClientOptions{Guard: guard, Timeout: tc.FetchTimeout},
		MaxBytes: tc.FetchMaxBytes,
	})}
	if tc.SearchProvider != "" && tc.SearchProvider != "none" {
		key := tc.BraveKey
		if tc.SearchProvider == "tavily" {
			key = tc.TavilyKey
		}
		b, err := web.NewBackend(tc.SearchProvider, web.SearchOptions{BaseURL: tc.SearchURL, APIKey: key})
		if err != nil {
			return nil, fmt.Errorf("web search: %w", err)
		}
		ts = append(ts, web.Search(b))
	}
	if tc.Workspace {
		ts = append(ts, d.workspaces().Tools()...)
	}
	return ts, nil
}

// workspaces are the per-conversation directories under HERMES_HOME.
func (d *Daemon) workspaces() *workspace.Workspaces {
	return workspace.New(filepath.Join(d.cfg.Home, "workspaces"))
}
