package discord

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// discordHost is the host discordgo's REST endpoints name. Only requests to
// it are redirected; CDN downloads and everything else go where they point.
const discordHost = "discord.com"

// rewriteTransport sends requests for https://discord.com to another base
// URL (a local Bot API proxy or the discordtest fake). It replaces the
// endpoint package variables of discordgo, which are process-global and
// would make two adapters (or two parallel tests) fight over them.
type rewriteTransport struct {
	base *url.URL
	next http.RoundTripper
}

// RoundTrip clones req with its scheme and host replaced when it targets
// discord.com; the path (/api/v9/...) is kept.
func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != discordHost {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.URL.Scheme = t.base.Scheme
	r.URL.Host = t.base.Host
	if p := strings.TrimSuffix(t.base.Path, "/"); p != "" {
		r.URL.Path = p + r.URL.Path
	}
	r.Host = t.base.Host
	return t.next.RoundTrip(r)
}

// newHTTPClient returns the client for REST and attachment downloads,
// redirecting discord.com to apiURL when it is set.
func newHTTPClient(apiURL string, timeout time.Duration) (*http.Client, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	// Many channels post at once; keep their connections instead of churning.
	base.MaxIdleConnsPerHost = 64
	var rt http.RoundTripper = base
	if apiURL != "" {
		u, err := url.Parse(apiURL)
		if err != nil {
			return nil, fmt.Errorf("discord: parse API URL %q: %w", apiURL, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("discord: API URL %q: want http(s)://host[:port]", apiURL)
		}
		if u.Host != discordHost {
			rt = &rewriteTransport{base: u, next: rt}
		}
	}
	return &http.Client{Transport: rt, Timeout: timeout}, nil
}
