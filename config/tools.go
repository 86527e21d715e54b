package config

import (
	"net/netip"
	"strconv"
	"strings"
	"time"
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
	return t
}

// allKeys is keys followed by toolKeys.
func allKeys() []struct {
	name, def string
	secret    bool
} {
	return append(keys[:len(keys):len(keys)], toolKeys...)
}
