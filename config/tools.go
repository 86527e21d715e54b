package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Tools are the settings of the tools that act on the world: web fetch and
// search, the per-session workspace, MCP servers and the terminal.
type Tools struct {
	// WebAllowPrivate lets web_fetch reach loopback, private and link-local
	// addresses; WebAllow lets it reach only these ranges.
	WebAllowPrivate bool
	WebAllow        []netip.Prefix
	FetchTimeout    time.Duration
	FetchMaxBytes   int64

	// SearchProvider is "none", "searxng", "brave" or "tavily"; web_search
	// is offered only when it is not "none".
	SearchProvider string
	// SearchURL is the SearXNG instance, or replaces the Brave/Tavily API
	// base URL.
	SearchURL string
	BraveKey  string
	TavilyKey string

	// Workspace offers read_file, write_file, edit_file and list_files in
	// HERMES_HOME/workspaces/<session key>.
	Workspace bool

	// Terminal offers the terminal tool; TerminalAllow are the commands
	// that run without approval (see terminal.Allowed); TerminalSandbox is
	// "auto" (bwrap when installed), "bwrap" (required) or "off".
	Terminal        bool
	TerminalAllow   []string
	TerminalTimeout time.Duration
	TerminalSandbox string
	TerminalNetwork bool
	ApprovalTimeout time.Duration

	// MCPServers are the mcp_servers entries of config.yaml, sorted by name.
	MCPServers []MCPServer
	// MCPTimeout bounds one MCP tool call unless an entry sets its own.
	MCPTimeout time.Duration
	// ChildEnv is the environment every child process starts from (stdio
	// MCP servers, terminal commands): PATH, HOME, LANG, LC_ALL, TMPDIR and
	// USER of the daemon, and nothing else, so no token or key leaks.
	ChildEnv []string
}

// MCPServer is one entry of mcp_servers, in the shape Hermes Agent and
// Claude Desktop use: command/args/env for a stdio server, url/headers for
// a streamable HTTP one, and an optional timeout (seconds or a duration).
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	Timeout time.Duration
}

// toolKeys are the settings of Tools, as in keys.
var toolKeys = []struct {
	name, def string
	secret    bool
}{
	{"HERMES_WEB_ALLOW_PRIVATE", "off", false},
	{"HERMES_WEB_FETCH_TIMEOUT", "20s", false},
	{"HERMES_WEB_FETCH_MAX_BYTES", "2097152", false},
	{"HERMES_WEB_SEARCH_PROVIDER", "none", false},
	{"HERMES_WEB_SEARCH_URL", "", false},
	{"BRAVE_API_KEY", "", true},
	{"TAVILY_API_KEY", "", true},
	{"HERMES_WORKSPACE", "on", false},
	{"HERMES_MCP_TIMEOUT", "60s", false},
	{"HERMES_TERMINAL", "off", false},
	{"HERMES_TERMINAL_ALLOW", "", false},
	{"HERMES_TERMINAL_TIMEOUT", "60s", false},
	{"HERMES_TERMINAL_SANDBOX", "auto", false},
	{"HERMES_TERMINAL_NETWORK", "off", false},
	{"HERMES_APPROVAL_TIMEOUT", "5m", false},
}

// parseTools reads Tools from v, reporting bad values through bad.
func parseTools(v map[string]string, bad func(key, format string, args ...any)) Tools {
	var t Tools
	switch s := strings.ToLower(strings.TrimSpace(v["HERMES_WEB_ALLOW_PRIVATE"])); s {
	case "on", "true", "yes", "1":
		t.WebAllowPrivate = true
	case "off", "false", "no", "0", "":
	default:
		for _, p := range list(s) {
			pr, err := netip.ParsePrefix(p)
			if err != nil {
				a, aerr := netip.ParseAddr(p)
				if aerr != nil {
					bad("HERMES_WEB_ALLOW_PRIVATE", "want on, off or a list of CIDR ranges, got %q", p)
					continue
				}
				pr = netip.PrefixFrom(a, a.BitLen())
			}
			t.WebAllow = append(t.WebAllow, pr.Masked())
		}
	}
	if d, err := time.ParseDuration(v["HERMES_WEB_FETCH_TIMEOUT"]); err != nil || d <= 0 {
		bad("HERMES_WEB_FETCH_TIMEOUT", "want a positive duration such as 20s, got %q", v["HERMES_WEB_FETCH_TIMEOUT"])
	} else {
		t.FetchTimeout = d
	}
	if n, err := strconv.ParseInt(v["HERMES_WEB_FETCH_MAX_BYTES"], 10, 64); err != nil || n <= 0 {
		bad("HERMES_WEB_FETCH_MAX_BYTES", "want a positive number of bytes, got %q", v["HERMES_WEB_FETCH_MAX_BYTES"])
	} else {
		t.FetchMaxBytes = n
	}
	t.SearchProvider = strings.ToLower(strings.TrimSpace(v["HERMES_WEB_SEARCH_PROVIDER"]))
	t.SearchURL = strings.TrimRight(strings.TrimSpace(v["HERMES_WEB_SEARCH_URL"]), "/")
	t.BraveKey, t.TavilyKey = v["BRAVE_API_KEY"], v["TAVILY_API_KEY"]
	switch t.SearchProvider {
	case "none":
	case "searxng":
		if t.SearchURL == "" {
			bad("HERMES_WEB_SEARCH_URL", "required when HERMES_WEB_SEARCH_PROVIDER=searxng (the instance's base URL)")
		}
	case "brave":
		if t.BraveKey == "" {
			bad("BRAVE_API_KEY", "required when HERMES_WEB_SEARCH_PROVIDER=brave")
		}
	case "tavily":
		if t.TavilyKey == "" {
			bad("TAVILY_API_KEY", "required when HERMES_WEB_SEARCH_PROVIDER=tavily")
		}
	default:
		bad("HERMES_WEB_SEARCH_PROVIDER", "want one of none, searxng, brave, tavily, got %q", t.SearchProvider)
	}
	if t.SearchURL != "" && !strings.HasPrefix(t.SearchURL, "http://") && !strings.HasPrefix(t.SearchURL, "https://") {
		bad("HERMES_WEB_SEARCH_URL", "want an http(s) URL, got %q", t.SearchURL)
	}
	switch strings.ToLower(strings.TrimSpace(v["HERMES_WORKSPACE"])) {
	case "on":
		t.Workspace = true
	case "off":
	default:
		bad("HERMES_WORKSPACE", "want on or off, got %q", v["HERMES_WORKSPACE"])
	}
	dur := func(key string) time.Duration {
		d, err := time.ParseDuration(v[key])
		if err != nil || d <= 0 {
			bad(key, "want a positive duration such as 60s, got %q", v[key])
		}
		return d
	}
	onOff := func(key string) bool {
		switch strings.ToLower(strings.TrimSpace(v[key])) {
		case "on":
			return true
		case "off":
			return false
		}
		bad(key, "want on or off, got %q", v[key])
		return false
	}
	t.MCPTimeout = dur("HERMES_MCP_TIMEOUT")
	t.Terminal = onOff("HERMES_TERMINAL")
	t.TerminalNetwork = onOff("HERMES_TERMINAL_NETWORK")
	t.TerminalTimeout = dur("HERMES_TERMINAL_TIMEOUT")
	t.ApprovalTimeout = dur("HERMES_APPROVAL_TIMEOUT")
	t.TerminalAllow = list(v["HERMES_TERMINAL_ALLOW"])
	switch t.TerminalSandbox = strings.ToLower(strings.TrimSpace(v["HERMES_TERMINAL_SANDBOX"])); t.TerminalSandbox {
	case "auto", "bwrap", "off":
	default:
		bad("HERMES_TERMINAL_SANDBOX", "want auto, bwrap or off, got %q", v["HERMES_TERMINAL_SANDBOX"])
	}
	return t
}

// childEnvNames are the variables a child process inherits.
var childEnvNames = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"}

func childEnv(lookup func(string) (string, bool)) []string {
	var env []string
	for _, n := range childEnvNames {
		if v, ok := lookup(n); ok {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// mcpKeys are the config.yaml keys that hold the MCP server list: Hermes
// Agent's and Claude Desktop's spelling.
var mcpKeys = map[string]bool{"MCP_SERVERS": true, "MCPSERVERS": true}

// ReadMCP reads mcp_servers (or mcpServers) from a config.yaml; a missing
// file is an empty list. The daemon calls it again to reload the list.
func ReadMCP(path string) ([]MCPServer, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	type entry struct {
		Command string            `yaml:"command"`
		Args    []string          `yaml:"args"`
		Env     map[string]string `yaml:"env"`
		URL     string            `yaml:"url"`
		Headers map[string]string `yaml:"headers"`
		Timeout yaml.Node         `yaml:"timeout"`
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []MCPServer
	var errs []error
	for k, node := range raw {
		if !mcpKeys[strings.ToUpper(k)] {
			continue
		}
		var entries map[string]entry
		if err := node.Decode(&entries); err != nil {
			return nil, fmt.Errorf("%s: %s: want a map of server name to {command, args, env} or {url, headers}: %w", path, k, err)
		}
		for name, e := range entries {
			s := MCPServer{Name: name, Command: e.Command, Args: e.Args, Env: e.Env, URL: e.URL, Headers: e.Headers}
			if e.Timeout.Kind != 0 {
				d, err := parseTimeout(e.Timeout.Value)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %s.%s.timeout: %w", path, k, name, err))
				}
				s.Timeout = d
			}
			switch {
			case s.Command == "" && s.URL == "":
				errs = append(errs, fmt.Errorf("%s: %s.%s: command (stdio) or url (HTTP) is required", path, k, name))
			case s.Command != "" && s.URL != "":
				errs = append(errs, fmt.Errorf("%s: %s.%s: set command or url, not both", path, k, name))
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// parseTimeout reads seconds ("30") or a duration ("30s").
func parseTimeout(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil && n > 0 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want seconds or a duration such as 30s, got %q", s)
	}
	return d, nil
}
