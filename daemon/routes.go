package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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
	d.mux.HandleFunc("GET /api/sessions/{key}/usage", d.handleUsage)
	d.mux.HandleFunc("POST /api/reload", d.handleReload)
	d.mux.HandleFunc("GET /api/mcp", d.handleMCP)
	d.inspectionRoutes()
}

// handleReady reports ready when the store takes a write, the runtime
// accepts messages and every configured platform is connected (a platform
// whose last poll got 401 is down, and so is hermesd for its users) or on
// standby (another cluster member polls Telegram).
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
		if p.ReportsHealth && !p.Connected && !p.Standby { // a standby member is ready: it sends
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

// maxSessionsLimit is the largest page of GET /api/sessions.
const maxSessionsLimit = 1000

func (d *Daemon) handleSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, limit := 0, 100
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			web.WriteError(w, http.StatusBadRequest, "bad_offset", "offset must be a number ≥ 0")
			return
		}
		offset = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSessionsLimit {
			web.WriteError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit must be a number from 1 to %d", maxSessionsLimit))
			return
		}
		limit = n
	}
	list, err := d.rt.Sessions(r.Context(), q.Get("search"), offset, limit)
	if err != nil {
		web.WriteError(w, http.StatusServiceUnavailable, "runtime", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}
