package daemon

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hermesd/hermesd/platforms/web"
)

// routes registers everything on the admin listener but the web chat.
func (d *Daemon) routes() {
	d.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	d.mux.HandleFunc("GET /readyz", d.handleReady)
	d.mux.HandleFunc("GET /api/sessions", d.handleSessions)
	d.mux.HandleFunc("POST /api/reload", d.handleReload)
	d.mux.HandleFunc("GET /api/mcp", d.handleMCP)
	d.inspectionRoutes()
}

// handleReady reports ready when the store takes a write, the runtime
// accepts messages and every configured platform is connected (a platform
// whose last poll got 401 is down, and so is hermesd for its users).
func (d *Daemon) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	// A write, not a read: a full disk or a read-only file still reads.
	if err := d.store.SetCursor(ctx, "hermesd:readyz", time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		web.WriteError(w, http.StatusServiceUnavailable, "store", "the store cannot write: "+err.Error())
		return
	}
	if !d.rt.Accepting() {
		web.WriteError(w, http.StatusServiceUnavailable, "shutting_down", "hermesd is shutting down")
		return
	}
	for _, p := range d.obs.platforms() {
		if p.ReportsHealth && !p.Connected {
			msg := "platform " + p.Platform + " is not connected"
			if p.LastError != "" {
				msg += ": " + p.LastError
			}
			web.WriteError(w, http.StatusServiceUnavailable, "platform_down", msg)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n"))
}

func (d *Daemon) handleSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 || limit > 1000 {
		limit = 100
	}
	list, err := d.rt.Sessions(r.Context(), q.Get("search"), offset, limit)
	if err != nil {
		web.WriteError(w, http.StatusServiceUnavailable, "runtime", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// authenticate requires HERMES_API_TOKEN on everything but health checks
// when the listener is not on loopback (on loopback the local user is
// trusted). Browsers can't send a bearer header to a page, so a token given
// once as ?token= is kept in a cookie.
func (d *Daemon) authenticate(next http.Handler) http.Handler {
	if d.cfg.Loopback() && d.cfg.APIToken == "" {
		return next
	}
	want := []byte(d.cfg.APIToken)
	ok := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(tok) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie("hermesd_token"); err == nil && ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		if tok := r.URL.Query().Get("token"); ok(tok) {
			http.SetCookie(w, &http.Cookie{Name: "hermesd_token", Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="hermesd"`)
		web.WriteError(w, http.StatusUnauthorized, "unauthorized", "this listener requires HERMES_API_TOKEN as a bearer token")
	})
}
