package daemon

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/hermesd/hermesd/platforms/web"
)

// The browser boundary. Any web page the local user opens can send requests
// to 127.0.0.1:7600, and a page on a name the attacker controls can make that
// name resolve to 127.0.0.1 (DNS rebinding). So, on every route:
//
//   - the Host header must name this listener: localhost, an IP literal
//     (a rebinding page always arrives under its own name, never an IP), the
//     listener's own host name or one of HERMES_ALLOWED_HOSTS;
//   - a state-changing request from a browser must come from the page's own
//     origin (Sec-Fetch-Site, else Origin against Host);
//   - with a token, it is a bearer header, or the SameSite=Strict cookie
//     that `/?token=` sets, so another site's request never carries it.
//
// The web chat adds the last rule itself: a JSON body only as
// application/json, which no HTML form can send.

// tokenCookie holds HERMES_API_TOKEN in a browser that opened /?token=.
const tokenCookie = "hermesd_token"

// healthRoute reports whether path is a health probe: probes carry no data
// and come from orchestrators that address the pod by whatever name they
// like, so they pass the Host check and need no token.
func healthRoute(path string) bool { return path == "/healthz" || path == "/readyz" }

// boundary wraps h (the routes) in the browser boundary's checks.
func (d *Daemon) boundary(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.log.Warn("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
			"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		web.WriteError(w, http.StatusForbidden, "cross_origin", "state-changing requests are accepted only from hermesd's own pages")
	}))
	inner := cop.Handler(d.authenticate(h))
	allowed := d.allowedHosts()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthRoute(r.URL.Path) && !hostAllowed(r.Host, allowed) {
			d.log.Warn("request for a foreign host refused", "host", r.Host, "path", r.URL.Path)
			web.WriteError(w, http.StatusForbidden, "bad_host",
				fmt.Sprintf("host %q is not this hermesd's; add it to HERMES_ALLOWED_HOSTS if it is", r.Host))
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// allowedHosts are the host names, besides localhost and IP literals, that
// the Host header may carry.
func (d *Daemon) allowedHosts() []string {
	out := slices.Clone(d.cfg.AllowedHosts)
	if host, _, err := net.SplitHostPort(d.cfg.HTTPAddr); err == nil && host != "" && net.ParseIP(host) == nil {
		out = append(out, strings.ToLower(host))
	}
	return out
}

// hostAllowed reports whether a Host header names this listener. An empty
// Host (HTTP/1.0) never comes from a browser.
func hostAllowed(hostport string, allowed []string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || net.ParseIP(host) != nil {
		return true
	}
	return slices.Contains(allowed, host)
}

// queryTokenRoute reports whether ?token= may authenticate r: only GETs of
// the web chat page (which turns it into the cookie) and of an event stream
// (EventSource cannot send headers). Anywhere else a token in the URL would
// only end up in logs and browser history.
func queryTokenRoute(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	p := r.URL.Path
	return p == "/" || (strings.HasPrefix(p, "/api/chat/") && strings.HasSuffix(p, "/events"))
}

// bearerToken returns the credentials of an Authorization header of the
// Bearer scheme, whose name is case-insensitive (RFC 9110 §11.1).
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// authenticate requires HERMES_API_TOKEN on everything but health checks
// when a token is configured (it must be when the listener is not on
// loopback; on loopback without one the local user is trusted).
func (d *Daemon) authenticate(next http.Handler) http.Handler {
	if d.cfg.Loopback() && d.cfg.APIToken == "" {
		return next
	}
	want := []byte(d.cfg.APIToken)
	ok := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if healthRoute(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if tok, found := bearerToken(r.Header.Get("Authorization")); found && ok(tok) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(tokenCookie); err == nil && ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query(); q.Has("token") {
			if !queryTokenRoute(r) {
				web.WriteError(w, http.StatusUnauthorized, "token_in_url", "?token= is accepted only on GET / and GET /api/chat/{chat}/events; send Authorization: Bearer <token>")
				return
			}
			if ok(q.Get("token")) {
				// SameSite=Strict: no other site's request carries it.
				http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q.Get("token"), Path: "/",
					HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
				if r.URL.Path == "/" { // drop the token from the address bar and history
					q.Del("token")
					u := *r.URL
					u.RawQuery = q.Encode()
					http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
					return
				}
				next.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="hermesd"`)
		web.WriteError(w, http.StatusUnauthorized, "unauthorized", "this listener requires HERMES_API_TOKEN as a bearer token")
	})
}

// routeErrors serves the mux, answering its own 404 and 405 with the JSON
// error body every other status has.
func (d *Daemon) routeErrors(w http.ResponseWriter, r *http.Request) {
	h, pattern := d.mux.Handler(r)
	if pattern != "" {
		d.mux.ServeHTTP(w, r) // sets the path values Handler does not
		return
	}
	rec := &statusRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch {
	case rec.status == http.StatusMethodNotAllowed:
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		web.WriteError(w, rec.status, "method_not_allowed", fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
	case rec.status >= 300 && rec.status < 400: // the mux's path-cleaning redirects
		if loc := rec.header.Get("Location"); loc != "" {
			w.Header().Set("Location", loc)
		}
		w.WriteHeader(rec.status)
	default:
		web.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	}
}

// statusRecorder keeps the status and headers of the mux's own answers and
// drops their plain-text bodies.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return len(b), nil
}
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
