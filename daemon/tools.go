package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/tools/mcp"
	"github.com/hermesd/hermesd/tools/terminal"

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
	if tc.Terminal {
		t, err := d.terminalTool()
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	servers, err := d.mcpServers()
	if err != nil {
		return nil, err
	}
	d.mcp = servers
	return ts, nil
}

// workspaces are the per-conversation directories under HERMES_HOME.
func (d *Daemon) workspaces() *workspace.Workspaces {
	return workspace.New(filepath.Join(d.cfg.Home, "workspaces"))
}

// mcpServers builds the configured MCP servers, not yet connected. A stdio
// server's environment is the scrubbed base plus its entry's env.
func (d *Daemon) mcpServers() ([]*mcp.Server, error) {
	tc := d.cfg.Tools
	var out []*mcp.Server
	for _, e := range tc.MCPServers {
		env := append([]string(nil), tc.ChildEnv...)
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+e.Env[k])
		}
		timeout := e.Timeout
		if timeout <= 0 {
			timeout = tc.MCPTimeout
		}
		sc := mcp.ServerConfig{Name: e.Name, Command: e.Command, Args: e.Args, Env: env, URL: e.URL, Headers: e.Headers, CallTimeout: timeout}
		if err := sc.Validate(); err != nil {
			return nil, err
		}
		out = append(out, mcp.NewServer(sc))
	}
	return out, nil
}

// startMCP spawns one supervisor actor per MCP server; each connects in the
// background and registers its tools in reg once it has listed them. The
// servers are closed after the runtime stopped (turns in their grace
// period may still call them).
func (d *Daemon) startMCP(reg *tools.Registry) error {
	root := d.rt.System().Root
	for _, srv := range d.mcp {
		props := mcp.SupervisorProps(srv, reg, d.log, mcp.DefaultBackoff)
		if _, err := root.SpawnNamed(props, "mcp-"+srv.Name()); err != nil {
			return fmt.Errorf("start mcp server %s: %w", srv.Name(), err)
		}
		d.closers = append(d.closers, func() { _ = srv.Close() })
	}
	return nil
}

// MCPStatus returns the health of every configured MCP server.
func (d *Daemon) MCPStatus() []mcp.Status {
	out := make([]mcp.Status, 0, len(d.mcp))
	for _, s := range d.mcp {
		out = append(out, s.Status())
	}
	return out
}

// toolMetrics labels every MCP call by its server (mcp_<server>): the
// metrics' tool label is fixed at start, and an MCP server's tools are
// known only once it is connected.
type toolMetrics struct {
	actors.Observer
	servers []string
}

// ToolCall implements actors.Observer.
func (o toolMetrics) ToolCall(tool, outcome string, d time.Duration) {
	for _, s := range o.servers {
		if p := "mcp_" + s + "_"; strings.HasPrefix(tool, p) {
			tool = "mcp_" + s
			break
		}
	}
	o.Observer.ToolCall(tool, outcome, d)
}

// handleMCP serves GET /api/mcp: each MCP server's transport, health,
// restarts and tools.
func (d *Daemon) handleMCP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"servers": d.MCPStatus()})
}

// terminalTool builds the terminal tool: commands run in the chat's
// workspace, inside bwrap when the sandbox setting allows, with
// HERMES_HOME (the database, other chats' workspaces) hidden.
func (d *Daemon) terminalTool() (tools.Tool, error) {
	tc := d.cfg.Tools
	var bwrap string
	switch tc.TerminalSandbox {
	case "auto":
		bwrap = terminal.FindBwrap()
		if bwrap == "" {
			d.log.Warn("terminal: bwrap is not installed; commands run without a sandbox (install bubblewrap)")
		}
	case "bwrap":
		if bwrap = terminal.FindBwrap(); bwrap == "" {
			return tools.Tool{}, fmt.Errorf("HERMES_TERMINAL_SANDBOX=bwrap but bwrap is not installed (apt-get install bubblewrap)")
		}
	}
	return terminal.Tool(terminal.Options{
		Dir:             d.workspaces().Dir,
		Hide:            []string{d.cfg.Home},
		Env:             tc.ChildEnv,
		Timeout:         tc.TerminalTimeout,
		Allow:           tc.TerminalAllow,
		ApprovalTimeout: tc.ApprovalTimeout,
		Bwrap:           bwrap,
		Network:         tc.TerminalNetwork,
	}), nil
}
