package daemon

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/terminal"
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
	configs, err := d.mcpConfigs(tc.MCPServers)
	if err != nil {
		return nil, err
	}
	d.mcp = &mcpSet{log: d.log, initial: configs, running: map[string]*mcpRunning{}}
	return ts, nil
}

// workspaces are the per-conversation directories under HERMES_HOME.
func (d *Daemon) workspaces() *workspace.Workspaces {
	return workspace.New(filepath.Join(d.cfg.Home, "workspaces"))
}

// toolMetrics labels every MCP call by its server (mcp_<server>): the
// metrics' tool label is fixed at start, and an MCP server's tools are
// known only once it is connected. A server added by a reload is counted
// as "other".
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

// toolSettings are the tools' settings as key → value, so a reload names a
// changed one as needing a restart (only mcp_servers applies live).
func toolSettings(t config.Tools) map[string]string {
	allow := make([]string, len(t.WebAllow))
	for i, p := range t.WebAllow {
		allow[i] = p.String()
	}
	private := strings.Join(allow, ",")
	if t.WebAllowPrivate {
		private = "on"
	}
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return map[string]string{
		"HERMES_WEB_ALLOW_PRIVATE": private, "HERMES_WEB_FETCH_TIMEOUT": t.FetchTimeout.String(),
		"HERMES_WEB_FETCH_MAX_BYTES": strconv.FormatInt(t.FetchMaxBytes, 10),
		"HERMES_WEB_SEARCH_PROVIDER": t.SearchProvider, "HERMES_WEB_SEARCH_URL": t.SearchURL,
		"BRAVE_API_KEY": t.BraveKey, "TAVILY_API_KEY": t.TavilyKey,
		"HERMES_WORKSPACE": onOff(t.Workspace), "HERMES_TERMINAL": onOff(t.Terminal),
		"HERMES_TERMINAL_ALLOW": strings.Join(t.TerminalAllow, ","), "HERMES_TERMINAL_TIMEOUT": t.TerminalTimeout.String(),
		"HERMES_TERMINAL_SANDBOX": t.TerminalSandbox, "HERMES_TERMINAL_NETWORK": onOff(t.TerminalNetwork),
		"HERMES_APPROVAL_TIMEOUT": t.ApprovalTimeout.String(), "HERMES_MCP_TIMEOUT": t.MCPTimeout.String(),
	}
}
